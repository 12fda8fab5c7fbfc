"""Excerpts: the model reads the parts of a passage that bear on the question, in the document's words."""

from __future__ import annotations

from toolcrib.retrieval.excerpt import GAP, excerpts, key_sentence, units

GUIDE = """We run three tiers. A ticket always has exactly one owner, and the owner changes only by an explicit
hand-over recorded in the ticket.

- **Tier 1, Service Desk.** Staffed Monday to Friday, 08:00 to 18:00 Irish time, by the support
  agents in Cork. Tier 1 answers questions about orders, deliveries, returns, spare parts and
  prices, and routes every new ticket.
- **Tier 2, Product Specialists.** Three specialists (power, thermal, software) who handle faults
  that need product knowledge: calibration drift, firmware errors and failed self-tests.
- **Tier 3, Engineering.** The design and test engineers. One Tier 3 engineer is on call outside
  office hours, all year round.

Customers may return an unused item within 30 days of delivery for a full refund. Items returned
after that are refused unless they are faulty. The warehouse inspects every returned item within
five working days.

| Severity | Meaning | First response |
|---|---|---|
| S1 | Production stopped | 1 hour |
| S2 | Degraded | 4 hours |
| S3 | Question | 2 working days |
"""


def excerpt(text: str, question: str, budget: int) -> str:
    return excerpts([text], question, budget)[0]


def test_a_long_passage_is_cut_to_what_the_question_asks_with_the_figure_kept() -> None:
    text = excerpt(GUIDE, "How many days does a customer have to return an item?", 300)
    assert len(text) < len(GUIDE) / 2
    assert "within 30 days of delivery" in text  # the answer, in the document's own words
    assert "Tier 2, Product Specialists" not in text  # about something else
    assert GAP.strip() in text  # the reader sees that something was left out


def test_a_table_row_comes_with_its_header_row() -> None:
    text = excerpt(GUIDE, "What is the first response time for an S2 ticket?", 200)
    assert "| S2 | Degraded | 4 hours |" in text
    assert "| Severity | Meaning | First response |" in text
    assert "Tier 3" not in text


def test_wrapped_lines_are_rejoined_and_list_items_and_enumerated_clauses_are_sentences() -> None:
    parts = [u.text for u in units(GUIDE)]
    assert "Tier 1 answers questions about orders, deliveries, returns, spare parts and prices, and routes " \
           "every new ticket." in parts
    assert "- **Tier 2, Product Specialists.**" in parts
    assert not any(set(p) <= set("|-: ") for p in parts)  # a table's rule line is not a unit
    flattened = units("Record the time. 2. **Open the ticket.** Set it to urgent. 1.2 The 30 days count.")
    assert [u.text for u in flattened] == ["Record the time.", "2. **Open the ticket.**", "Set it to urgent.",
                                           "1.2 The 30 days count."]


def test_a_short_passage_or_no_budget_is_left_whole() -> None:
    assert excerpt("Returns within 30 days.", "returns", 300) == "Returns within 30 days."
    assert excerpt(GUIDE, "returns", 0) == GUIDE


def test_passages_that_share_far_less_with_the_question_are_left_out_unless_kept() -> None:
    other = "Every ticket has an owner. The owner of a ticket is named in it. " * 8
    question = "Who is on call outside office hours for a ticket?"
    cut = excerpts([other, GUIDE], question, 400)
    assert cut[0] is None  # only "ticket" in common: the model is not shown it
    assert "One Tier 3 engineer is on call outside office hours" in (cut[1] or "")
    kept = excerpts([other, GUIDE], question, 400, keep=[{0, 1}])  # versions of one document: kept together
    assert kept[0] and kept[0].startswith("Every ticket has an owner.") and len(kept[0]) < len(other)
    assert excerpts([other, other, GUIDE], question, 400, keep=[{0, 1}])[:2] == [None, None]  # none bears on it
    unrelated = excerpts([other, GUIDE], "weather in Dublin", 400)
    assert unrelated == [other, GUIDE]  # nothing to choose by: left whole


def test_each_version_of_a_rule_is_quoted_in_its_own_words() -> None:
    v1 = "1.1 Any product may be returned within 30 days of delivery.\n\n1.2 Days count from delivery."
    v2 = "1.1 Unopened products: 30 days.\n\n1.2 **Opened** products may be returned within **14 days**."
    question = "How many days does a customer have to return an opened product?"
    assert key_sentence(v2, question) == "1.2 **Opened** products may be returned within **14 days**."
    assert key_sentence(v1, question) == "1.1 Any product may be returned within 30 days of delivery."
    assert key_sentence(v1, "weather in Dublin") is None


def test_the_best_passage_is_shown_whole_and_counts_against_the_budget() -> None:
    cut = excerpts([GUIDE, GUIDE], "How many days does a customer have to return an item?", 900, whole={0})
    shown = (cut[0] or "").removesuffix(GAP.rstrip())
    assert GUIDE.startswith(shown) and 800 < len(shown) <= 900  # whole, but never past the budget
    assert cut[1] is not None and "within 30 days of delivery" in cut[1] and len(cut[1]) < 300


def test_a_name_the_passage_title_holds_does_not_choose_its_sentence() -> None:
    vogel = "7.1 Prices may be revised once a year in line with the HICP, capped at 4%. Vogel sends notice by post."
    tamarack = ("7.1 Prices may be adjusted once a year by the US CPI, capped at 3%. Tamarack gives at least "
                "ninety days' written notice. 7.2 Tariff changes are negotiated.")
    question = "How can Vogel and Tamarack raise their prices?"
    _, plain = excerpts([vogel, tamarack], question, 100)
    _, titled = excerpts([vogel, tamarack], question, 100, titles=["Vogel contract", "Tamarack contract"])
    assert plain is not None and titled is not None
    assert "Tamarack gives" in plain and "CPI" not in plain  # the name's sentence wins without titles
    assert "CPI, capped at 3%" in titled  # with them, the sentence about prices

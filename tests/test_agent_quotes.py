"""Quoted answers: a fact question the passages answer is answered by code in the documents' own
words, one unit per thing it asks, with its citation; anything needing judgement goes to the model."""

from __future__ import annotations

from typing import Any

from toolcrib.agent import quotes
from toolcrib.agent.request import Request, asks
from toolcrib.retrieval.evidence import CitedPassage, Conflict


def quoted_answer(question: str, *args: Any, **kwargs: Any) -> str | None:
    return quotes.quoted_answer(Request.parse(question), *args, **kwargs)


def asks_documents(question: str) -> bool:
    return Request.parse(question).wants_documents


GUIDE = CitedPassage(
    "support-guide#c4", doc_id="support-guide", title="Customer Support Guide", section="Guide > 3. Response times",
    text="| Severity | First response | Status updates |\n|---|---|---|\n| P1 Critical | 1 hour | every 2 hours |\n"
         "| P2 High | 4 business hours | daily |\n| P3 Normal | 2 business days | weekly |")
LIBRARY = CitedPassage(
    "library-rules#c2", doc_id="library-rules", title="Library Rules", section="1. Borrowing",
    text="1.1 Staff may borrow up to five books. 1.2 The loan period is 28 days. 1.3 A loan may be renewed twice.")
VOGEL = CitedPassage(
    "contract-vogel#c9", doc_id="contract-vogel", title="Supply Agreement with Vogel GmbH", section="8. Late delivery",
    text="8.3 For each month of late delivery the Supplier pays a penalty of 2% of the invoiced amount, up to 10%.")
TAMARACK = CitedPassage(
    "contract-tamarack#c9", doc_id="contract-tamarack", title="Supply Agreement with Tamarack Inc.",
    section="8. Late delivery",
    text="8.3 For each week of late delivery Tamarack pays a penalty of 1.5% of the invoiced value, up to 12%.")


def test_a_fact_one_table_row_states_is_quoted_with_its_header_and_citation() -> None:
    answer = quoted_answer("What response time applies to a P2 issue?", [GUIDE, LIBRARY])
    assert answer == ('According to Customer Support Guide, 3. Response times: "Severity: P2 High; First response: '
                      '4 business hours; Status updates: daily" [support-guide#c4]')


def test_one_sentence_of_a_paragraph_is_quoted_not_the_paragraph() -> None:
    answer = quoted_answer("How long is the loan period for library books?", [LIBRARY, GUIDE])
    assert answer is not None and '"1.2 The loan period is 28 days."' in answer
    assert "renewed" not in answer and answer.endswith("[library-rules#c2]")


def test_a_comparison_of_two_named_parties_quotes_each_partys_own_clause() -> None:
    answer = quoted_answer("What is the late-delivery penalty in the Vogel contract, and how does Tamarack's differ?",
                           [VOGEL, TAMARACK])
    assert answer is not None
    lines = answer.splitlines()
    assert lines[0] == "From the documents:"
    assert "2%" in lines[1] and lines[1].endswith("[contract-vogel#c9]")
    assert "1.5%" in lines[2] and lines[2].endswith("[contract-tamarack#c9]")


def test_of_conflicting_versions_only_the_newest_is_quoted() -> None:
    new = CitedPassage("returns-v2#c2", doc_id="returns-v2", title="Returns Policy (version 2.0)",
                       text="1.2 Opened products may be returned within 14 days of delivery.")
    old = CitedPassage("returns-v1#c2", doc_id="returns-v1", title="Returns Policy (version 1.0)",
                       text="1.1 Opened products may be returned within 30 days of delivery.")
    conflict = Conflict("Returns Policy", ({"citation": "returns-v2#c2"}, {"citation": "returns-v1#c2"}))
    answer = quoted_answer("How many days does a customer have to return an opened product?", [old, new], [conflict])
    assert answer is not None and "14 days" in answer and "30 days" not in answer


def test_questions_that_need_judgement_are_left_to_the_model() -> None:
    passages = [LIBRARY, GUIDE, VOGEL]
    for question in ("Can I renew a library loan three times?",  # a yes/no
                     "If I borrow a book today, when is it due?",  # reasoning about a date
                     "A P2 ticket was opened 3 hours ago. Is it late?",  # a figure to compute with
                     "How do I escalate a critical issue?",  # a procedure, often over several passages
                     "What is the warranty on a KB-400?",  # no passage holds the identifier
                     "What is the parking policy?"):  # nothing covers it
        assert quoted_answer(question, passages) is None, question


def test_a_passage_written_outside_the_organisation_is_never_quoted() -> None:
    faq = CitedPassage("supplier-faq#c8", doc_id="supplier-faq", title="Supplier FAQ", trusted=False,
                       text="Suppliers send their stock reports on the first working day of each month.")
    assert quoted_answer("When do suppliers send their stock reports?", [faq]) is None


def test_a_later_ask_must_be_answered_by_a_passage_naming_the_questions_identifier() -> None:
    parts = CitedPassage("parts-list#c3", doc_id="parts-list", title="Parts List",
                         text="| Part | Price |\n|---|---|\n| F2 | $18.75 |")
    returns = CitedPassage("returns#c7", doc_id="returns", title="Returns Policy",
                           text="A defective product is replaced within 30 days.")
    assert quoted_answer("What does the F2 filter cost and how often should it be replaced?", [parts, returns]) is None


def test_asks_splits_a_request_into_the_things_it_asks() -> None:
    assert asks("What does F2 cost and how often is it replaced?") == ["What does F2 cost", "how often is it replaced?"]
    assert asks("Order ORD-1 is late. Where is it? When will it arrive?") == [
        "Order ORD-1 is late. Where is it?", "When will it arrive?"]
    assert asks("Is the F2 filter in stock and cheap?") == ["Is the F2 filter in stock and cheap?"]


def test_what_a_lookup_found_nothing_for_must_be_named_by_the_quote() -> None:
    manual = CitedPassage("manual#c6", doc_id="manual", title="Bench Manual",
                          text="5.1 Channel C must read below 40 °C before a supply channel is switched on.")
    question = "What was the last archived temperature on channel Z?"
    assert quoted_answer(question, [manual], sought=["Z"]) is None  # channel Z does not exist: no quote about C
    assert quoted_answer("What temperature must channel C read below?", [manual], sought=["C"]) is not None


def test_what_each_document_says_of_an_identifier_is_quoted_and_one_saying_nothing_of_it_is_left_out() -> None:
    parts = CitedPassage("parts-list#c4", doc_id="parts-list", title="Parts List", version="2026.4",
                         text="| Part number | Price (USD) |\n|---|---|\n| PSU-4030 | $389.00 |")
    contract = CitedPassage("contract-vogel#c14", doc_id="contract-vogel", title="Supply Agreement with Vogel",
                            text="Schedule A: unit price (EUR) of the PSU-4030 bench supply module: 298.00.")
    manual = CitedPassage("manual#c3", doc_id="manual", title="Bench Manual",
                          text="Supply channel CH1 uses a PSU-4030 module.")
    question = "What is the price of a PSU-4030 module according to our documents?"
    assert asks_documents(question) and not asks_documents("What is the price of a PSU-4030 module?")
    answer = quoted_answer(question, [parts, manual, contract])
    assert answer is not None
    lines = answer.splitlines()
    assert len(lines) == 3 and "$389.00" in lines[1] and "298.00" in lines[2]  # no price in the manual: left out
    assert lines[1].startswith("- Parts List, version 2026.4: ")


def test_a_request_for_what_named_sources_each_say_is_quoted_from_each() -> None:
    parts = CitedPassage("parts-list#c4", doc_id="parts-list", title="Parts List",
                         text="| Part number | Name | Price (USD) |\n|---|---|---|\n"
                              "| RLY-1240 | Safety relay | $36.80 |")
    contract = CitedPassage("contract-tamarack#c13", doc_id="contract-tamarack", title="Agreement with Tamarack",
                            text="Annex 1. RLY-1240 safety relay, 24 V coil: USD 21.40 per unit.")
    question = "What do the parts list and the Tamarack contract each say an RLY-1240 relay costs?"
    assert asks_documents(question) and asks_documents("What does the returns policy say about opened items?")
    assert not asks_documents("What does an RLY-1240 relay cost?")
    answer = quoted_answer(question, [parts, contract])
    assert answer is not None and "$36.80" in answer and "USD 21.40" in answer
    assert "[parts-list#c4]" in answer and "[contract-tamarack#c13]" in answer


def test_a_procedure_whose_section_heading_is_the_question_is_quoted_step_by_step() -> None:
    section = "Guide > 4. How to escalate a critical issue"
    one = CitedPassage("guide#c6", doc_id="guide", title="Support Guide", section=section,
                       text="1. **Make it safe.** Tell the customer to switch off.\n2. **Open the ticket as P1.**\n"
                            "3. **Call the on-call engineer within 15 minutes** on extension 4400.")
    two = CitedPassage("guide#c7", doc_id="guide", title="Support Guide", section=section,
                       text="5. **Reply to the customer within 30 minutes** of the ticket being created.")
    answer = quoted_answer("How do I escalate a critical issue?", [one, two])
    assert answer is not None
    lines = answer.splitlines()
    assert lines[1] == "1. Make it safe. Tell the customer to switch off. [guide#c6]"  # a short title with its sentence
    assert "within 15 minutes" in lines[3] and lines[4] == "…" and lines[5].endswith("[guide#c7]")  # step 4: a gap
    # a section that is not about what is asked, or too few steps: left to the model
    assert quoted_answer("How do I return an item?", [one, two]) is None
    assert quoted_answer("How do I escalate a critical issue?", [two]) is None

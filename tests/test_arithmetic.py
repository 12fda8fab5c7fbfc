"""Arithmetic by code: a figure an answer computes is kept only when code can work it out from figures that
have a source (a tool result, a passage, the request), shown with its operands; a written-out sum the model
got wrong is corrected by code; a figure nothing gives is still removed."""

from __future__ import annotations

from toolcrib.agent.arithmetic import figures, traced, worked_out
from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.agent.request import Request
from toolcrib.models.base import ToolCall
from toolcrib.tools.result import CallOutcome

DISCOUNT = Request.parse("What would a spay cost a client with our 10% loyalty discount?")


def priced(**data: object) -> EvidenceLedger:
    out = EvidenceLedger()
    out.add(CallOutcome(ToolCall("c1", "sql_query", {"query": "SELECT ..."}), "ok", {"ok": True, "data": data}))
    return out


SPAY = {"columns": ["name", "price_gbp"], "rows": [["Spay (dog)", 420.0]]}


def test_a_discounted_price_is_kept_and_cited_with_its_operands() -> None:
    review = priced(**SPAY).review("With the 10% discount a spay costs £378.", DISCOUNT)
    assert review.text.startswith("With the 10% discount a spay costs £378.")
    assert "Computed: 420 less 10% = 378." in review.text
    assert "computed by code: 420 less 10% = 378" in review.flags


def test_a_wrong_discounted_price_is_removed() -> None:
    review = priced(**SPAY).review("The spay is £420. With the 10% discount it costs £380.", DISCOUNT)
    assert review.text.startswith("The spay is £420.") and "380" not in review.text
    assert any("figure 380 is not in the evidence" in f for f in review.flags)


def test_a_written_out_sum_the_model_got_wrong_is_corrected_by_code() -> None:
    review = priced(**SPAY).review("The spay is £420, so 10% of £420 is £40 and you pay £420 - £42 = £380.",
                                   DISCOUNT)
    assert "10% of £420 is £42" in review.text and "£420 - £42 = £378" in review.text
    assert any("the answer said £380" in f for f in review.flags)


def test_an_expression_with_an_operand_nothing_gives_is_not_worked_out_and_is_removed() -> None:
    review = priced(**SPAY).review("You pay £420 - £55 = £365.", DISCOUNT)
    assert "365" not in review.text and review.flags


def test_a_total_difference_and_percentage_from_sourced_figures() -> None:
    assert str(traced(87, {45.0, 30.0, 12.0}, [45, 30, 12, 87])) .startswith("Computed(how='45 + 30 + 12'")
    assert traced(15, {45.0, 30.0}) is not None  # a difference
    assert traced(40, {12.0, 30.0}) is not None  # 12 as a percentage of 30
    assert traced(33, {45.0, 30.0}) is None


def test_dates_times_and_identifiers_are_not_operands() -> None:
    assert figures("On 2026-12-08 at 10:15 PET-202 paid £1,234.50 for 3 items (15%).") == [1234.5, 3.0, 15.0]


def test_a_records_dates_and_identifiers_never_make_a_figure() -> None:
    """"202 as a percentage of 2,021 = 10": a pet's id and its year of birth gave an invented price."""
    ledger = EvidenceLedger()
    record = {"pet_id": "PET-202", "name": "Mango", "born": "2021-08-30", "weight_kg": 4.2}
    ledger.add(CallOutcome(ToolCall("c1", "lookup_pet", {"pet_id": "PET-202"}), "ok", {"ok": True, "data": record}))
    review = ledger.review("Mango weighs 4.2 kg [lookup_pet#1]. The vaccination costs £10.00 [lookup_pet#1].",
                           Request.parse("How much will Mango (PET-202) pay for her vaccination?"))
    assert review.text.startswith("Mango weighs 4.2 kg") and "10" not in review.text and "Computed" not in review.text


def test_operands_must_have_a_source() -> None:
    text, done = worked_out("2 x £8.50 = £17.50", lambda f: f in {2.0, 8.5})
    assert text == "2 x £8.50 = £17.00" and done[0].written == "£17.50"
    assert worked_out("2 x £8.50 = £17.50", lambda f: f == 2.0) == ("2 x £8.50 = £17.50", [])


def test_a_price_rounded_by_the_model_is_not_the_computed_price() -> None:
    micro = priced(columns=["name", "price_gbp"], rows=[["Microchipping", 22.0]])
    asked = Request.parse("With the 10% off, what does a member pay for microchipping?")
    assert "20" not in micro.review("A member pays £20.", asked).text  # 19.80, rounded: removed
    review = micro.review("A member pays 22.0 pounds * (1 - 0.10) = 20.0 pounds.", asked)
    assert "= 19.80 pounds" in review.text and "the answer said 20.0" in review.text


def test_a_share_is_checked_as_a_percentage() -> None:
    assert worked_out("10 / 30 = 30%", lambda f: f in {10.0, 30.0})[0] == "10 / 30 = 33.33%"
    assert worked_out("10 / 30 = 33.3%", lambda f: f in {10.0, 30.0})[0] == "10 / 30 = 33.3%"

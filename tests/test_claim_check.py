"""The claim check: an answer sentence that states a figure, price, date or identifier found in neither the
evidence the run retrieved (the sentence's cited items, when it cites any) nor the question is removed,
and a run whose every sentence fails answers that it could not confirm one."""

from __future__ import annotations

from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.agent.prompts import UNSUPPORTED_ANSWER
from toolcrib.agent.request import Request
from toolcrib.models.base import ToolCall
from toolcrib.tools.result import CallOutcome

QUESTION = Request.parse("What does part HLV-2205 cost?")


def ledger(**data: object) -> EvidenceLedger:
    out = EvidenceLedger()
    out.add(CallOutcome(ToolCall("c1", "lookup_part", {"part_number": "HLV-2205"}), "ok", {"ok": True, "data": data}))
    return out


PART = {"found": True, "part_number": "HLV-2205", "price_usd": 52.0, "price": "$52.00", "supplier": "Aurora"}


def test_a_sentence_that_copies_its_evidence_is_kept_in_any_number_format() -> None:
    for text in ("HLV-2205 costs $52.00 [lookup_part#1].", "The price is 52.0 USD.", "It costs $52 each."):
        review = ledger(**PART).review(text, QUESTION)
        assert review.text == text and not review.flags


def test_a_figure_the_evidence_does_not_hold_is_removed_and_flagged() -> None:
    review = ledger(**PART).review("HLV-2205 costs $52.00 [lookup_part#1]. Shipping is $15.50.", QUESTION)
    assert review.text == "HLV-2205 costs $52.00 [lookup_part#1]."
    assert review.flags == ["removed a sentence whose figure 15.5 is not in the evidence: Shipping is $15.50."]


def test_an_identifier_found_nowhere_is_removed_and_an_answer_of_nothing_but_that_says_so() -> None:
    review = ledger(**PART).review("HLV-2200 costs $52.00 [lookup_part#1].", QUESTION)
    assert review.text == UNSUPPORTED_ANSWER
    assert "identifier HLV-2200" in review.flags[0]


def test_the_question_vouches_for_what_the_user_wrote_and_small_counts_are_not_checked() -> None:
    found_nothing = ledger(found=False, part_number="HLV-2205", message="No part numbered HLV-2205.")
    text = "There is no part HLV-2205 in the catalogue; I checked 2 lists."
    assert found_nothing.review(text, QUESTION).text == text


def test_a_sentence_is_held_to_the_items_it_cites() -> None:
    two = ledger(**PART)
    two.add(CallOutcome(ToolCall("c2", "lookup_stock", {"part_number": "HLV-2205"}), "ok",
                        {"ok": True, "data": {"part_number": "HLV-2205", "available": 40}}))
    review = two.review("There are 40 in stock [lookup_part#1].", QUESTION)  # 40 is in the other result only
    assert review.flags and "figure 40" in review.flags[0]
    assert two.review("There are 40 in stock [lookup_stock#2].", QUESTION).flags == []


def test_a_date_written_out_is_supported_by_its_iso_form() -> None:
    order = EvidenceLedger()
    order.add(CallOutcome(ToolCall("c1", "get_order_status", {"order_id": "ORD-1001"}), "ok", {"ok": True, "data": {
        "order_id": "ORD-1001", "status": "shipped", "created": "2026-11-18", "eta": "2026-11-28"}}))
    text = "Order ORD-1001 was created on November 18, 2026 and is due on 28 November 2026."
    assert order.review(text, Request.parse("What is the status of order ORD-1001?")).text == text
    assert order.review("It is due on November 29, 2026.", Request.parse("Status of ORD-1001?")).flags  # 29 is nowhere


READING = {"found": True, "channel": "C", "value": 24.1, "unit": "°C", "recorded_at": "2026-11-26T09:00:00",
           "live": False, "source": "archive", "in_stock": False}


def test_a_sentence_asserting_what_its_evidence_says_is_false_is_removed() -> None:
    review = ledger(**READING).review("The live reading of channel C is 24.1 °C [lookup_part#1]. It was "
                                      "recorded at 09:00 on 2026-11-26.",
                                      Request.parse("Give me a live reading of channel C."))
    assert review.text == "It was recorded at 09:00 on 2026-11-26."
    assert review.flags == ["removed a sentence whose claim 'live' is false in the evidence (live: false): "
                            "The live reading of channel C is 24.1 °C [lookup_part#1]."]


def test_a_sentence_that_negates_the_false_field_is_kept() -> None:
    for text in ("This is not a live reading: the archived value is 24.1 °C.",
                 "No live reading is available; the last archived one is 24.1 °C.",
                 "The part is not in stock."):
        review = ledger(**READING).review(text, Request.parse("What is the temperature on channel C?"))
        assert review.text == text and not review.flags


def test_a_figure_given_for_an_identifier_no_evidence_gives_it_for_is_removed() -> None:
    """The HLV-2200 lie: the question names a discontinued part, the evidence names it (as replaced) and
    holds $52.00, but only as the price of HLV-2205."""
    passages = EvidenceLedger()
    texts = {"parts#c2": "| Part | Price |\n|---|---|\n| HLV-2205 | $52.00 |",
             "parts#c9": "HLV-2200 was discontinued in 2025 and is replaced by HLV-2205."}
    passages.add(CallOutcome(ToolCall("c1", "search", {"query": "HLV-2200 price"}), "ok", {"ok": True, "data": {
        "passages": [{"citation": cid, "title": "Parts List", "text": t} for cid, t in texts.items()],
        "sufficient": True, "searched": "HLV-2200 price"}}))
    question = Request.parse("What is the current price of the HLV-2200 lead?")
    review = passages.review("The current price of the HLV-2200 lead is $52.00.", question)
    assert review.nothing_supported
    assert "figure 52 is given for none of HLV-2200" in review.flags[0]
    kept = "HLV-2205 costs $52.00 and replaces HLV-2200, which was discontinued in 2025."
    assert passages.review(kept, question).text.startswith(kept)  # each figure beside one of its identifiers


def test_a_records_figure_reached_through_another_record_stands() -> None:
    chain = EvidenceLedger()
    chain.add(CallOutcome(ToolCall("c1", "get_order_status", {"order_id": "ORD-1005"}), "ok", {"ok": True, "data": {
        "order_id": "ORD-1005", "items": ["1 x PSU-0505"]}}))
    chain.add(CallOutcome(ToolCall("c2", "lookup_part", {"part_number": "PSU-0505"}), "ok", {"ok": True, "data": {
        "part_number": "PSU-0505", "price_usd": 118.0}}))
    text = "The part ordered in ORD-1005 costs $118.00 [lookup_part#2]."
    assert chain.review(text, Request.parse("What is the unit price of the part ordered in ORD-1005?")).text == text

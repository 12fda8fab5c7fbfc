"""The request, read once: what the answer path's rules learn from its text."""

from __future__ import annotations

from datetime import date

import pytest

from toolcrib.agent.request import Ask, Request


@pytest.mark.parametrize(("text", "reasoning"), [
    ("Is the QX-4030 cheaper than the QX-4040?", True),  # a yes/no and a comparison
    ("Summarise the returns policy.", True),
    ("What is the loan period for books?", False),
])
def test_a_question_answered_by_reasoning_is_told_apart(text: str, reasoning: bool) -> None:
    assert Request.parse(text).asks_reasoning is reasoning


@pytest.mark.parametrize(("text", "judgement"), [
    ("Why was order ORD-1001 late?", True),
    ("Is ORD-1001 overdue?", True),
    ("What is the status of ORD-1001?", False),
])
def test_a_question_that_asks_more_than_records_facts_is_told_apart(text: str, judgement: bool) -> None:
    assert Request.parse(text).asks_judgement is judgement


def test_a_procedure_and_a_figure_to_compute_with_are_read() -> None:
    assert Request.parse("How do I escalate a critical issue?").asks_procedure
    assert Request.parse("What are the steps to return a part?").asks_procedure
    assert not Request.parse("Who handles returns?").asks_procedure
    assert Request.parse("What was delivered on 2026-11-06?").holds_figure
    assert not Request.parse("What does the QX-4030 cost?").holds_figure  # an identifier, not a figure


def test_words_units_and_identifiers_as_people_type_them() -> None:
    request = Request.parse("Set ch3 to 12 V and book PET-202 with Dr Vogel")
    assert {"set", "book", "dr", "vogel", "ch"} <= request.words
    assert "12 V" not in request.without_units and "PET-202" in request.without_units
    assert request.typed_identifiers == ("ch3", "PET-202")
    assert request.identifiers_of(r"PET-\d+") == ["PET-202"]
    assert request.identifiers_of(r"(?i:CH\d+)") == ["ch3"]


def test_names_listed_together_and_the_text_without_them() -> None:
    request = Request.parse("What do the Norden and Ostara contracts say, and how does Borealis's differ?")
    assert request.proper_names == ("Norden", "Ostara", "Borealis")
    assert request.listed("Norden", "Ostara")
    assert not request.listed("Ostara", "Borealis")
    bare = request.without({"Norden", "Ostara", "Borealis"})
    assert "Norden" not in bare and "Borealis" not in bare and "'s" not in bare


def test_an_ask_says_what_its_answer_must_hold() -> None:
    price = Ask.of("What does the QX-4030 cost?")
    assert price.price and not price.when and price.identifiers == ("QX-4030",)
    when = Ask.of("When does the P2 warranty end?")
    assert when.when and when.amount and not when.price and when.identifiers == ("P2",)
    assert not Ask.of("Who is the supplier?").amount


def test_what_it_states_is_read_as_the_claim_check_reads_evidence() -> None:
    request = Request.parse("Was order ORD-1005 for $1,250.50 delivered on 2026-11-06?")
    assert request.stated.identifiers == {"ORD-1005"}
    assert {1250.5, 2026.0, 11.0, 6.0} <= request.stated.figures  # every number, the parts of a date too


def test_a_request_for_current_public_information_is_told_apart() -> None:
    assert Request.parse("What's the weather in Berlin today?").needs_current_data
    assert not Request.parse("What is the current stock of HLV-2205?").needs_current_data


def test_the_weekday_and_month_of_a_stated_date_are_no_names() -> None:
    """"Nothing I found mentions Tuesday December": a date read as a name the evidence must mention."""
    today = date(2026, 12, 7)
    assert Request.parse("Pepper is in with Dr Patel on Tuesday 8 December. What is she having done?",
                         today).names == ("Patel",)
    assert Request.parse("What was the return window in March 2025?", today).names == ()

"""Support for words, not only figures (issue 52, item 2): a sentence that states a name or a value of the
workspace's data that nothing the run found holds, nor the request, is removed like an untraced figure, and
an answer left with nothing says it could not confirm one."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.agent.prompts import UNSUPPORTED_ANSWER
from toolcrib.agent.request import Request
from toolcrib.models.base import ToolCall
from toolcrib.sql.sqlite import SQLiteReadOnly
from toolcrib.sql.values import ValueIndex
from toolcrib.tools.result import CallOutcome

QUESTION = Request.parse("What is Otto booked in for on Friday?")
VISIT = {"visit_id": "V-7", "pet": "Otto", "service": "dental scale and polish", "vet": "Dr Priya Patel",
         "starts_at": "2026-12-11T08:30", "status": "booked"}


def ledger() -> EvidenceLedger:
    out = EvidenceLedger()
    out.add(CallOutcome(ToolCall("c1", "lookup_appointment", {"pet": "Otto"}), "ok", {"ok": True, "data": VISIT}))
    return out


@pytest.fixture
def values(tmp_path: Path) -> ValueIndex:
    path = tmp_path / "clinic.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE visits (visit_id TEXT PRIMARY KEY, pet TEXT, service TEXT, vet TEXT, status TEXT);
            INSERT INTO visits VALUES ('V-1', 'Biscuit', 'surgery', 'Dr Priya Patel', 'booked'),
                                      ('V-2', 'Mango', 'surgery', 'Dr Sean Murphy', 'booked'),
                                      ('V-3', 'Hazel', 'vaccination', 'Dr Sean Murphy', 'cancelled'),
                                      ('V-4', 'Pepper', 'vaccination', 'Dr Priya Patel', 'booked'),
                                      ('V-7', 'Otto', 'dental scale and polish', 'Dr Priya Patel', 'booked'),
                                      ('V-8', 'Rolo', 'dental scale and polish', 'Dr Sean Murphy', 'booked');
        """)
    return ValueIndex.build(SQLiteReadOnly(path, ["visits"]))


def test_an_answer_that_says_what_its_evidence_says_in_its_own_words_is_kept(values: ValueIndex) -> None:
    text = ("Otto is booked in for a dental scale and polish with Dr Patel on Friday 11 December at 08:30 "
            "[lookup_appointment#1]. Please arrive ten minutes early.")
    review = ledger().review(text, QUESTION, values=values)
    assert review.text == text and not review.flags


def test_a_kind_of_visit_that_no_evidence_holds_is_removed_and_the_trace_says_which_word(values: ValueIndex) -> None:
    review = ledger().review("The appointment is for a surgery [lookup_appointment#1].", QUESTION, values=values)
    assert review.text == UNSUPPORTED_ANSWER and review.nothing_supported
    assert review.flags[0] == ("removed a sentence whose words 'surgery' are in no evidence and not in the request: "
                               "The appointment is for a surgery [lookup_appointment#1].")


def test_a_name_nothing_holds_is_removed_and_the_rest_of_the_answer_stays() -> None:
    text = ("Otto is booked in for a dental scale and polish at 08:30 [lookup_appointment#1]. "
            "The visit is at our Harbour Street branch.")
    review = ledger().review(text, QUESTION)  # no database: names are still checked
    assert review.text == "Otto is booked in for a dental scale and polish at 08:30 [lookup_appointment#1]."
    assert "'Harbour Street'" in review.flags[0]


def test_what_the_request_names_and_what_code_linked_in_it_count_as_held(values: ValueIndex) -> None:
    asked = Request.parse("Is the surgery for Biscuit still on, or has Hazel's vaccination replaced it?")
    text = "There is no surgery for Biscuit in what I found; Otto has a dental scale and polish [lookup_appointment#1]."
    assert ledger().review(text, asked, values=values).text == text
    links = values.link("Is Rolo in?")
    assert ledger().review("Rolo is not in the record I found [lookup_appointment#1].", QUESTION, values=values,
                           links=links).flags == []


def test_weekdays_months_titles_and_codes_are_no_names() -> None:
    text = "On Friday, December 11 Dr Patel sees Otto [lookup_appointment#1]; the price is in GBP."
    assert ledger().review(text, QUESTION).flags == []

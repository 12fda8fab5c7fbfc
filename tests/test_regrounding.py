"""Dates are resolved by code, and a date the model writes is held to them: re-grounded where the request
says which date it meant, refused (saying what would be accepted) where it does not."""

from __future__ import annotations

import asyncio
from datetime import date
from typing import Any

import pytest

from toolcrib import EventKind, Gate, GroupPolicy, Principal, Registry, Runner, ScriptedModel, ToolCall, Tracer, tool
from toolcrib.dates import stated_dates
from toolcrib.tools.context import CallContext, GateSettings
from toolcrib.tools.grounding import Grounding

TODAY = date(2026, 12, 7)  # a Monday
USER = Principal("rosa", groups=frozenset({"staff"}))
ASKED: list[str] = []
VETS: list[str] = []


@pytest.mark.parametrize(("text", "resolved"), [
    ("Does Dr Patel have free slots on Tuesday 8 December?", ["2026-12-08"]),
    ("What about 14/12?", ["2026-12-14"]),
    ("December 9th, please", ["2026-12-09"]),
    ("anything on Jan 5?", ["2027-01-05"]),  # the year that puts it nearest today
    ("on 3 March 2030 at 9", ["2030-03-03"]),
    ("tomorrow or next Monday", ["2026-12-08", "2026-12-14"]),
    ("what did we sell last month?", ["2026-11-01 to 2026-11-30"]),
    ("appointments this week", ["2026-12-07 to 2026-12-13"]),
    ("half of it, 1/2 or 3/4", []),  # fractions, not dates
    ("it is 31 February", []),  # a day the calendar does not have
])
def test_the_dates_a_request_states_are_resolved_against_today(text: str, resolved: list[str]) -> None:
    found = stated_dates(text, TODAY)
    assert [s.describe().split(" = ")[1] for s in found] == resolved


def test_a_weekday_that_does_not_fit_the_day_is_said() -> None:
    stated, = stated_dates("Monday 8 December", TODAY)
    assert stated.describe() == '"Monday 8 December" = 2026-12-08 (a Tuesday, not a Monday)'


@tool
def find_free_slots(date: str, vet: str = "") -> dict[str, Any]:
    """The free appointment slots of one day."""
    ASKED.append(date)
    VETS.append(vet)
    return {"date": date, "free_slots": ["10:00", "14:30"] if date == "2026-12-08" else []}


@tool
def run_query(query: str) -> dict[str, Any]:
    """Run a read-only SQL query."""
    ASKED.append(query)
    return {"rows": [[3]]}


GATE = Gate(Registry([find_free_slots, run_query]), GroupPolicy({"staff": ["*"]}))


def admitted(question: str, arguments: dict[str, Any], tool_name: str = "find_free_slots",
             *texts: str) -> tuple[str, dict[str, Any], Tracer]:
    tracer = Tracer()
    grounding = Grounding(question)
    for text in texts:
        grounding.add(text)
    cctx = CallContext(USER, tracer, grounding, question=question, today=TODAY)
    outcome = asyncio.run(GATE.run(ToolCall("c1", tool_name, arguments), cctx))
    return outcome.status, outcome.payload, tracer


def test_an_invented_year_is_regrounded_to_the_requests_date_and_the_trace_says_so() -> None:
    ASKED.clear()
    status, _, tracer = admitted("Does Dr Patel have free slots on Tuesday 8 December?",
                                       {"date": "2023-12-08", "vet": "Patel"})
    assert status == "ok" and ASKED == ["2026-12-08"]
    event, = [e for e in tracer.events if e.kind is EventKind.ARGUMENT_REGROUNDED]
    assert event.detail["regrounded"] == [{"argument": "date", "written": "2023-12-08", "grounded": "2026-12-08",
                                           "because": 'the request gives "Tuesday 8 December" = 2026-12-08'}]


def test_a_relative_date_is_the_one_code_resolved() -> None:
    ASKED.clear()
    status, _, _ = admitted("Any free slots next Monday?", {"date": "2024-05-06"})
    assert status == "ok" and ASKED == ["2026-12-14"]


def test_a_date_inside_a_query_is_held_to_the_request_too() -> None:
    ASKED.clear()
    status, _, _ = admitted("How many appointments are there on 9 December 2026?",
                            {"query": "SELECT COUNT(*) FROM appointments WHERE start LIKE '2023-12-09%'"}, "run_query")
    assert status == "ok" and ASKED == ["SELECT COUNT(*) FROM appointments WHERE start LIKE '2026-12-09%'"]


def test_a_date_when_the_request_gives_none_is_refused_saying_to_ask() -> None:
    ASKED.clear()
    status, payload, _ = admitted("What is our cancellation policy?", {"date": "2023-12-08"})
    assert status == "refused" and ASKED == []
    assert payload["error"]["code"] == "ungrounded_argument"
    assert "the request gives no date" in payload["error"]["message"]


def test_a_date_that_fits_none_of_several_is_refused_naming_the_ones_accepted() -> None:
    status, payload, _ = admitted("Free slots on 8 December or 10 December?", {"date": "2023-12-09"})
    assert status == "refused"
    assert ('"8 December" = 2026-12-08, "10 December" = 2026-12-10' in payload["error"]["message"])


def test_dates_the_request_or_a_result_holds_pass_unchanged() -> None:
    ASKED.clear()
    assert admitted("Slots during last month?", {"date": "2026-11-17"})[0] == "ok"  # inside the span
    assert admitted("When is Rex booked?", {"date": "2026-12-11"}, "find_free_slots",
                    '{"appointment": "APT-1", "start": "2026-12-11T09:00"}')[0] == "ok"  # a result holds it
    assert admitted("Rex's next visit?", {"date": "2026-12-12"}, "find_free_slots",
                    "The clinic reopens on 12 December 2026.")[0] == "ok"  # written out in a passage
    assert ASKED == ["2026-11-17", "2026-12-11", "2026-12-12"]


def test_the_check_can_be_turned_off() -> None:
    gate = Gate(GATE.registry, GATE.policy, settings=GateSettings(ground_values=False))
    cctx = CallContext(USER, Tracer(), Grounding("policy?"), question="policy?", today=TODAY)
    outcome = asyncio.run(gate.run(ToolCall("c1", "find_free_slots", {"date": "2023-12-08"}), cctx))
    assert outcome.status == "ok"


def test_a_run_whose_model_writes_the_wrong_year_answers_from_the_requests_day() -> None:
    ASKED.clear()
    model = ScriptedModel([{"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2023-12-08"}}]},
                           "10:00 and 14:30 are free [find_free_slots#1]."])
    answer = Runner(model, GATE).ask("Which slots are free on 8 December 2026?", USER)
    assert ASKED == ["2026-12-08"]
    assert "10:00" in answer.text and answer.outcome == "answered"


def test_a_filter_nobody_named_is_left_out_and_one_the_request_names_is_kept() -> None:
    ASKED.clear()
    VETS.clear()
    status, _, tracer = admitted("Which slots are free on 8 December 2026?", {"date": "2026-12-08", "vet": "None"})
    assert status == "ok" and VETS == [""]  # the tool's default: any vet
    event, = [e for e in tracer.events if e.kind is EventKind.ARGUMENT_REGROUNDED]
    assert event.detail["regrounded"][0]["written"] == "None" and event.detail["regrounded"][0]["grounded"] == ""
    admitted("Free slots with Dr Patel on 8 December 2026?", {"date": "2026-12-08", "vet": "Dr Patel"})
    assert VETS == ["", "Dr Patel"]


@tool
def free_rooms(day: date) -> dict[str, Any]:
    """The free rooms of one day."""
    ASKED.append(day.isoformat())
    return {"day": day.isoformat(), "free": ["Room 2"] if day == date(2026, 12, 8) else []}


def test_a_parameter_typed_date_is_held_to_the_request_too() -> None:
    assert free_rooms.parameters["properties"]["day"] == {"format": "date", "type": "string"}  # schema and grammar
    ASKED.clear()
    model = ScriptedModel([{"tool_calls": [{"name": "free_rooms", "arguments": {"day": "2023-12-08"}}]},
                           "Room 2 is free [free_rooms#1]."])
    gate = Gate(Registry([free_rooms]), GroupPolicy({"staff": ["*"]}))
    answer = Runner(model, gate).ask("Which rooms are free on 8 December 2026?", USER)
    assert ASKED == ["2026-12-08"] and answer.executed[0]["arguments"] == {"day": "2026-12-08"}
    assert "Room 2" in answer.text

"""Routing by where values come from: a lookup the model filled with values of its own is set aside
(the run searches the documents instead); lists a tool returns are stated by code; dates written out
count as dates the request gives; a change the user may not make is named by what it does."""

from __future__ import annotations

from datetime import date
from typing import Any

from toolcrib import EventKind, Gate, GroupPolicy, Principal, Registry, Runner, ScriptedModel, Tracer, tool
from toolcrib.agent.capabilities import unavailable_asked
from toolcrib.agent.fit import invented_values
from toolcrib.agent.request import Request
from toolcrib.agent.steps import StepId
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Effect

USER = Principal("rosa", groups=frozenset({"desk"}))
RAN: list[str] = []


@tool
def find_free_slots(date: str, vet: str = "") -> dict[str, Any]:
    """List the free appointment slots on one day, optionally for one vet."""
    RAN.append(f"find_free_slots {date} {vet}")
    return {"date": date, "count": 2, "free_slots": [{"vet": "Dr Ana Costa", "starts_at": f"{date}T10:15"},
                                                      {"vet": "Dr Sean Murphy", "starts_at": f"{date}T14:30"}]}


@tool(tags=("retrieval",))
def search_docs(query: str) -> dict[str, Any]:
    """Search the clinic's documents."""
    RAN.append(f"search_docs {query}")
    return {"notes": ["Saturday: 09:00 to 13:00."]}


@tool(effect=Effect.WRITE)
def reorder_medicine(code: str, packs: int) -> dict[str, Any]:
    """Order more packs of a medicine from the wholesaler (creates a purchase order)."""
    return {"ordered": True}


@tool
def lookup_medicine(code: str) -> dict[str, Any]:
    """Look up one medicine in the dispensary: its price, stock and shelf."""
    return {"found": True}


def runner(replies: list[Any], tracer: Tracer) -> Runner:
    RAN.clear()
    gate = Gate(Registry([find_free_slots, search_docs]), GroupPolicy({"desk": ["*"]}))
    return Runner(ScriptedModel(replies, small_model=True), gate, tracer_factory=lambda: tracer)


def test_values_from_nowhere_are_invented_and_values_from_the_request_are_not() -> None:
    ask = Request.parse("What are the opening hours on Saturdays?")
    assert invented_values(find_free_slots, {"date": "2023-04-15", "vet": "Dr. Smith"}, ask, Grounding(ask.text)) \
        == ["2023-04-15", "Dr. Smith"]
    day = Request.parse("Does Dr Murphy have any free slots on 8 December 2026?")
    assert invented_values(find_free_slots, {"date": "2026-12-08", "vet": ""}, day, Grounding(day.text)) == []
    assert invented_values(find_free_slots, {"date": "2026-12-09", "vet": "Dr Sean Murphy"}, day,
                           Grounding(day.text)) == []  # a word of the request ("Murphy")
    # a change is the gate's and the approver's to judge; a query is the model's own words by design
    assert invented_values(reorder_medicine, {"code": "X"}, ask, Grounding(ask.text)) == []


def test_a_lookup_that_does_not_fit_is_set_aside_and_the_documents_are_searched() -> None:
    tracer = Tracer()
    invented = {"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2023-04-15", "vet": "Dr. Smith"}}]}
    answer = runner([invented, "On Saturdays the clinic opens 09:00 to 13:00 [search_docs#1]."], tracer).ask(
        "What are the opening hours on Saturdays?", USER)
    assert not any(r.startswith("find_free_slots") for r in RAN)  # never run
    assert ("find_free_slots", "dropped") in [(c["name"], c["status"]) for c in answer.refused]
    assert any(e.rule == StepId.INVENTED_VALUES for e in tracer.events)
    assert any(e.kind == EventKind.CODE_SEARCH for e in tracer.events) and "09:00" in answer.text


def test_a_short_list_a_tool_returns_is_stated_by_code() -> None:
    tracer = Tracer()
    call = {"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2026-12-09"}}]}
    r = runner([call], tracer)
    answer = r.ask("Which appointment slots are free on 2026-12-09?", USER)
    assert "Dr Ana Costa" in answer.text and "2026-12-09T14:30" in answer.text
    assert [c.id for c in answer.citations] == ["find_free_slots#1"]
    assert any(e.rule == StepId.RECORD_ANSWER for e in tracer.events)


def test_dates_written_out_with_their_year_are_dates_the_request_gives() -> None:
    assert Request.parse("free on 8 December 2026 or 2026-12-09?").dates == (date(2026, 12, 9), date(2026, 12, 8))
    assert Request.parse("on December 8, 2026").dates == (date(2026, 12, 8),)
    assert Request.parse("on 31 February 2026, or on 8 December").dates == ()  # no such day; no year


def test_a_change_the_user_may_not_make_is_named_by_what_its_description_says_it_does() -> None:
    usable = [lookup_medicine]
    assert unavailable_asked(Request.parse("Order 10 more packs of RX-104."), [reorder_medicine, lookup_medicine],
                             usable) == [reorder_medicine]
    assert unavailable_asked(Request.parse("How many packs of RX-104 are in stock?"), [reorder_medicine],
                             usable) == []

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
from toolcrib.agent.stepids import StepId
from toolcrib.models.profile import ModelProfile
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Effect

AIDED = ModelProfile(answer="aided")  # the embedded model's answer path

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
    return {"notes": ["Public holidays: 10:00 to 12:00."]}


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
    return Runner(ScriptedModel(replies, profile=AIDED), gate, tracer_factory=lambda: tracer)


def test_values_from_nowhere_are_invented_and_values_from_the_request_are_not() -> None:
    ask = Request.parse("When does the front desk open on public holidays?")
    assert invented_values(find_free_slots, {"date": "2023-04-15", "vet": "Dr. Smith"}, ask, Grounding(ask.text)) \
        == ["2023-04-15", "Dr. Smith"]
    day = Request.parse("Has Dr Murphy anything open on 3 March 2030?")
    assert invented_values(find_free_slots, {"date": "2030-03-03", "vet": ""}, day, Grounding(day.text)) == []
    assert invented_values(find_free_slots, {"date": "2030-03-04", "vet": "Dr Sean Murphy"}, day,
                           Grounding(day.text)) == []  # a word of the request ("Murphy")
    # a change is the gate's and the approver's to judge; a query is the model's own words by design
    assert invented_values(reorder_medicine, {"code": "X"}, ask, Grounding(ask.text)) == []


def test_a_lookup_that_does_not_fit_is_set_aside_and_the_documents_are_searched() -> None:
    tracer = Tracer()
    invented = {"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2023-04-15", "vet": "Dr. Smith"}}]}
    answer = runner([invented, "On public holidays the desk opens 10:00 to 12:00 [search_docs#1]."], tracer).ask(
        "When does the front desk open on public holidays?", USER)
    assert not any(r.startswith("find_free_slots") for r in RAN)  # never run
    assert ("find_free_slots", "dropped") in [(c["name"], c["status"]) for c in answer.refused]
    assert any(e.rule == StepId.INVENTED_VALUES for e in tracer.events)
    assert any(e.kind == EventKind.CODE_SEARCH for e in tracer.events) and "10:00" in answer.text


def test_a_short_list_a_tool_returns_is_stated_by_code() -> None:
    tracer = Tracer()
    call = {"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2030-01-15"}}]}
    r = runner([call], tracer)
    answer = r.ask("Which slots are free on 2030-01-15?", USER)
    assert "Dr Ana Costa" in answer.text and "2030-01-15T14:30" in answer.text
    assert [c.id for c in answer.citations] == ["find_free_slots#1"]
    assert any(e.rule == StepId.RECORD_ANSWER for e in tracer.events)


def test_dates_written_out_are_dates_the_request_gives_in_the_order_written() -> None:
    assert Request.parse("open on 3 March 2030 or 2030-03-04?").dates == (date(2030, 3, 3), date(2030, 3, 4))
    assert Request.parse("on March 3, 2030").dates == (date(2030, 3, 3),)
    today = date(2026, 12, 7)
    assert Request.parse("on 31 February 2030, or on 3 March", today).dates == (date(2027, 3, 3),)  # no such day


def test_a_change_the_user_may_not_make_is_named_by_what_its_description_says_it_does() -> None:
    usable = [lookup_medicine]
    assert unavailable_asked(Request.parse("Please order 4 more packs of MED-9."), [reorder_medicine, lookup_medicine],
                             usable) == [reorder_medicine]
    assert unavailable_asked(Request.parse("How many packs of MED-9 are left?"), [reorder_medicine],
                             usable) == []

"""Record answers: facts of records looked up by id are stated by code, with no final model call."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from toolcrib import (
    EventKind,
    Gate,
    GroupPolicy,
    Identifier,
    Principal,
    Registry,
    Runner,
    RunnerSettings,
    ScriptedModel,
    Tracer,
    tool,
)
from toolcrib.agent import records
from toolcrib.agent.records import LookedUp, with_identifiers
from toolcrib.agent.request import Request
from toolcrib.agent.stepids import StepId
from toolcrib.models.profile import ModelProfile

AIDED = ModelProfile(answer="aided")  # the embedded model's answer path

ORDER = {"found": True, "order_id": "ORD-1001", "customer": "Harrier Labs", "status": "shipped", "carrier": "DHL",
         "tracking": "JD0146 2281 7740", "eta": "2026-11-28", "items": "2x HLV-2205"}
READING = {"found": True, "channel": "C", "value": 24.1, "unit": "°C", "recorded_at": "2026-11-26 09:00",
           "live": False, "source": "archive"}


def record_answer(question: str, lookups: Any) -> str | None:
    return records.record_answer(Request.parse(question), lookups)


@tool
def get_order_status(order_id: Annotated[str, Identifier(shape=r"ORD-\d+")]) -> dict[str, Any]:
    """Get the status, carrier, tracking number and expected delivery date of a customer order."""
    return dict(ORDER) if order_id == "ORD-1001" else {"found": False, "order_id": order_id}


@tool
def query_archived_reading(channel: Annotated[str, Identifier(shape=r"[A-D]")]) -> dict[str, Any]:
    """Latest archived temperature reading of a bench channel, with its timestamp."""
    return dict(READING)


@tool
def search_notes(query: str) -> dict[str, Any]:
    """Search the team's notes."""
    return {"notes": ["Returns are accepted within 14 days."]}


USER = Principal("alice", groups=frozenset({"support"}))


def looked_up(record: dict[str, Any], fn: Any = get_order_status, key: str = "ORD-1001") -> list[LookedUp]:
    return [LookedUp(fn, key, record, f"{fn.name}#1")]


def test_a_fact_question_about_a_record_is_answered_with_its_fields_exactly_as_written() -> None:
    text = record_answer("When is order ORD-1001 expected to arrive, and with which carrier?", looked_up(ORDER))
    assert text is not None
    assert text.startswith("Order status ORD-1001: carrier DHL;")  # the fields the question names first
    for value in ("shipped", "JD0146 2281 7740", "2026-11-28", "2x HLV-2205"):
        assert value in text
    assert text.endswith("[get_order_status#1].") and "found" not in text
    context_first = record_answer("A customer phoned about ORD-1001. Which carrier has it?", looked_up(ORDER))
    assert context_first is not None and "carrier DHL;" in context_first
    reading = record_answer("What was the last recorded temperature on channel C?",
                            looked_up(READING, query_archived_reading, "C"))
    assert reading is not None and "value 24.1 °C" in reading and "; not live;" in reading


@pytest.mark.parametrize("question", [
    "Has order ORD-1001 shipped?",                               # yes/no: the model answers
    "Order ORD-1001 is urgent. Has it shipped?",                 # context, then a yes/no
    "Why is order ORD-1001 not here yet?",                      # needs reasoning
    "What is the status of ORD-1001 and can I return its items for a refund?",  # asks what no record holds
    "What is the status of order ORD-1001 if it is late?",
])
def test_questions_the_records_do_not_simply_answer_go_to_the_model(question: str) -> None:
    assert record_answer(question, looked_up(ORDER)) is None


def test_a_record_that_was_not_found_goes_to_the_model() -> None:
    assert record_answer("What is the status of order ORD-9999?",
                         looked_up({"found": False, "order_id": "ORD-9999"}, key="ORD-9999")) is None


def run(replies: list[Any], question: str, **settings: Any) -> tuple[Any, ScriptedModel, Tracer]:
    model = ScriptedModel(replies, profile=AIDED)
    gate = Gate(Registry([get_order_status, query_archived_reading, search_notes]),
                GroupPolicy({"support": ["*"]}))
    tracer = Tracer()
    answer = Runner(model, gate, RunnerSettings(**settings), tracer_factory=lambda: tracer).ask(question, USER)
    return answer, model, tracer


def test_the_runner_states_the_record_without_asking_the_model_again() -> None:
    call = {"tool_calls": [{"name": "get_order_status", "arguments": {"order_id": "ORD-1001"}}]}
    answer, model, tracer = run([call], "What is the status of order ORD-1001?")
    assert len(model.requests) == 1  # the decision only: no final answer call
    assert answer.outcome == "answered" and not answer.flags
    assert answer.text.startswith("Order status ORD-1001: status shipped;")
    assert [c.id for c in answer.citations] == ["get_order_status#1"]
    assert any(e.kind == EventKind.EVIDENCE_RULE and e.rule == StepId.RECORD_ANSWER for e in tracer.events)

    off, model, _ = run([call, "It shipped with DHL [get_order_status#1]."], "What is the status of order ORD-1001?",
                        record_answers=False)
    assert off.text.startswith("It shipped with DHL") and len(model.requests) == 2


def test_a_run_that_also_searched_notes_gets_a_model_written_answer() -> None:
    search = {"tool_calls": [{"name": "search_notes", "arguments": {"query": "returns window"}}]}
    answer, model, _ = run([search, "Returns within 14 days [search_notes#1]."], "What is the returns window?")
    assert len(model.requests) == 2 and "14 days" in answer.text


def test_a_stated_record_passes_the_claim_check_false_flags_included() -> None:
    call = {"tool_calls": [{"name": "query_archived_reading", "arguments": {"channel": "C"}}]}
    answer, _, _ = run([call], "What was the last recorded temperature on channel C?")
    assert "value 24.1 °C" in answer.text and "not live" in answer.text and not answer.flags


@tool(tags=("retrieval",))
def search_docs(query: str) -> dict[str, Any]:
    """Search the company documents."""
    return {"passages": [{"citation": "returns#c2", "title": "Returns policy", "text": "Returns within 14 days."}],
            "sufficient": True, "searched": query}


def test_a_request_asking_more_than_its_records_hold_gets_the_documents_searched_too() -> None:
    def ask(question: str, **settings: Any) -> tuple[Any, list[str], Tracer]:
        call = {"tool_calls": [{"name": "get_order_status", "arguments": {"order_id": "ORD-1001"}}]}
        model = ScriptedModel([call, "Shipped [get_order_status#1]; returns within 14 days [returns#c2]."],
                              profile=AIDED)
        tracer = Tracer()
        gate = Gate(Registry([get_order_status, search_docs]), GroupPolicy({"support": ["*"]}))
        answer = Runner(model, gate, RunnerSettings(**settings), tracer_factory=lambda: tracer).ask(question, USER)
        return answer, [o["name"] for o in answer.executed], tracer

    answer, ran, tracer = ask("Has order ORD-1001 shipped, and how many days do I have to return its items?")
    assert ran == ["get_order_status", "search_docs"]
    assert {c.id for c in answer.citations} == {"get_order_status#1", "returns#c2"}
    search = next(e for e in tracer.events if e.kind == EventKind.CODE_SEARCH)
    assert "return" in search.detail["reason"] and "day" in search.detail["reason"]
    assert ask("Has order ORD-1001 shipped yet?")[1] == ["get_order_status"]  # all it asks, the record holds
    # asking words and a count the request gives itself are not things the record must hold
    assert ask("Check whether three items of order ORD-1001 have shipped.")[1] == ["get_order_status"]
    assert ask("Has order ORD-1001 shipped, and how many days do I have to return its items?",
               search_when_unanswered=False)[1] == ["get_order_status"]


@tool
def find_free_slots(date: str) -> dict[str, Any]:
    """Free appointment slots on a day."""
    return {"date": date, "vet": "Dr Patel", "free_slots": ["09:00", "11:30"]}


def test_a_read_that_does_not_hold_what_the_request_asks_gets_the_documents_searched_too() -> None:
    """A policy question answered with a day's free slots (the model read a date in it as a day to book):
    the slots hold none of its words, so code searches the documents; the words of its dates count for nothing."""
    def ask(question: str, day: str) -> list[str]:
        call = {"tool_calls": [{"name": "find_free_slots", "arguments": {"date": day}}]}
        model = ScriptedModel([call, "See [find_free_slots#1]."], profile=AIDED)
        gate = Gate(Registry([find_free_slots, search_docs]), GroupPolicy({"support": ["*"]}))
        answer = Runner(model, gate, tracer_factory=Tracer).ask(question, USER)
        return [o["name"] for o in answer.executed]

    assert ask("An appointment booked on 2025-08-20 was cancelled 30 hours before it started. "
               "Is a missed-appointment fee due?", "2025-08-20") == ["find_free_slots", "search_docs"]
    assert ask("Does Dr Patel have free slots on Tuesday 8 December 2026?", "2026-12-08") == ["find_free_slots"]


@tool
def contracts_query(query: str) -> dict[str, Any]:
    """Run a read-only SQL query over the contracts table."""
    return {"columns": ["total_value", "delivery_lead_time"], "rows": [[212500, 2025]], "row_count": 1,
            "truncated": False, "claimed": {"delivery_lead_time": "MAX(year)"}}


def test_a_query_column_named_for_what_it_does_not_compute_is_not_stated_and_its_words_are_searched() -> None:
    """"MAX(year) AS delivery_lead_time" must not become "delivery_lead_time 2025" in code's answer."""
    query = {"query": "SELECT SUM(amount) AS total_value FROM contracts"}
    call = {"tool_calls": [{"name": "contracts_query", "arguments": query}]}
    model = ScriptedModel([call, "The total is 212500 [contracts_query#1]; delivery takes 6 weeks [returns#c2]."],
                          profile=AIDED)
    tracer = Tracer()
    gate = Gate(Registry([contracts_query, search_docs]), GroupPolicy({"support": ["*"]}))
    question = "What is the total value of contract KC-2025-001 and how long is its delivery lead time?"
    answer = Runner(model, gate, tracer_factory=lambda: tracer).ask(question, USER)
    assert [o["name"] for o in answer.executed] == ["contracts_query", "search_docs"]
    assert len(model.requests) == 2 and "delivery_lead_time 2025" not in answer.text  # the model answered
    search = next(e for e in tracer.events if e.kind == EventKind.CODE_SEARCH)
    assert "lead" in search.detail["reason"] and "deliver" in search.detail["reason"]


def test_an_answer_naming_a_found_record_by_its_title_gets_the_records_identifier() -> None:
    found = {"found": True, "books": [{"book_id": "BK-101", "title": "The Art of Electronics", "available": 1},
                                      {"book_id": "BK-102", "title": "Practical Electronics", "available": 0}]}
    text, added = with_identifiers("The library has The Art of Electronics; 1 copy is in.", [found], {"book_id"})
    assert text == "The library has The Art of Electronics (BK-101); 1 copy is in." and added == ["BK-101"]
    assert with_identifiers("BK-101, The Art of Electronics, is in.", [found], {"book_id"})[1] == []  # named
    part = {"part_number": "PSU-4030", "name": "Bench supply module", "supplier": "Vogel Präzisionsteile GmbH"}
    assert with_identifiers("Vogel Präzisionsteile GmbH supplies it.", [part], {"part_number"})[1] == []  # not its name


def test_a_table_answers_in_code_only_when_it_covers_every_thing_the_request_asks() -> None:
    table = {"columns": ["total_value"], "rows": [[212500]]}
    both = Request.parse("What is the total value of contract KC-2025-001 and how long is its delivery lead time?")
    assert records.unanswered_asks(both, table) == ["how long is its delivery lead time?"]
    assert records.table_answer(both, table, "sql_query#1") is None  # the model and the documents answer the rest
    one = Request.parse("What is the total value of contract KC-2025-001?")
    assert records.table_answer(one, table, "sql_query#1") == "Total value: 212500 [sql_query#1]."
    counted = Request.parse("How many contracts does Lindqvist have, and what are they worth in total?")
    assert records.table_answer(counted, {"columns": ["contract_count", "total_value"], "rows": [[4, 458200]]},
                                "sql_query#1") == "Contract count: 4; total value: 458200 [sql_query#1]."


@tool
def price_query(query: str) -> dict[str, Any]:
    """Run a read-only SQL query over the price list."""
    return {"columns": ["name", "price_gbp"], "rows": [["Dog spay", 420.0]], "row_count": 1, "truncated": False}


def test_an_ask_no_word_of_which_a_query_returns_gets_the_documents_searched() -> None:
    """A query answers one ask of two ("what does a dog spay cost"); the deposit is in no result: code searches
    the documents for it. A query that covers every ask is enough."""
    def ask(question: str) -> list[str]:
        query = "SELECT name, price_gbp FROM services WHERE name = 'Dog spay'"
        call = {"tool_calls": [{"name": "price_query", "arguments": {"query": query}}]}
        model = ScriptedModel([call, "A dog spay costs 420 [price_query#1]."], profile=AIDED)
        gate = Gate(Registry([price_query, search_docs]), GroupPolicy({"support": ["*"]}))
        answer = Runner(model, gate, tracer_factory=Tracer).ask(question, USER)
        return [o["name"] for o in answer.executed]

    assert ask("What does a dog spay cost, and how much has to be paid as a deposit when it is booked?") == [
        "price_query", "search_docs"]
    assert ask("What does a dog spay cost?") == ["price_query"]
    assert ask("What does a dog spay cost, and what is its price in pounds?") == ["price_query"]


@tool
def fee_query(query: str) -> dict[str, Any]:
    """Run a read-only SQL query over the price list."""
    return {"columns": ["price_gbp"], "rows": [], "row_count": 0, "truncated": False}


def test_a_query_that_returns_no_rows_found_nothing_and_the_documents_are_searched() -> None:
    query = "SELECT price_gbp FROM services WHERE name = 'missed appointment'"
    model = ScriptedModel([{"tool_calls": [{"name": "fee_query", "arguments": {"query": query}}]},
                           "I could not find it."], profile=AIDED)
    gate = Gate(Registry([fee_query, search_docs]), GroupPolicy({"support": ["*"]}))
    answer = Runner(model, gate, tracer_factory=Tracer).ask("What is the fee for a missed appointment?", USER)
    assert [o["name"] for o in answer.executed] == ["fee_query", "search_docs"]

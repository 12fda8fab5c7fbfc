"""Traces: typed, versioned events per run, JSONL with secrets redacted, and an OpenTelemetry exporter
with GenAI attributes that reads the typed fields (never a title)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest

from toolcrib import (
    Effect,
    Event,
    EventKind,
    Gate,
    GroupPolicy,
    Identifier,
    JsonlExporter,
    Principal,
    Registry,
    Runner,
    ScriptedModel,
    Tracer,
    tool,
)
from toolcrib.errors import TraceFormatError
from toolcrib.trace.events import SCHEMA_VERSION
from toolcrib.trace.tracer import TraceExporter, read_events

USER = Principal("alice", groups=frozenset({"support"}))


@tool
def lookup_part(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """Look up a part."""
    return {"found": True, "part_number": part_number, "price_usd": 52.0}


@tool(effect=Effect.WRITE)
def reserve_stock(part_number: Annotated[str, Identifier()], quantity: int) -> dict[str, Any]:
    """Reserve stock."""
    return {"reserved": quantity}


def ask(exporter: TraceExporter, replies: list[Any], question: str = "What does part HLV-2205 cost?") -> Tracer:
    tracers: list[Tracer] = []

    def factory() -> Tracer:
        tracers.append(Tracer([exporter]))
        return tracers[-1]

    gate = Gate(Registry([lookup_part, reserve_stock]), GroupPolicy({"support": ["*"]}))
    Runner(ScriptedModel(replies), gate, tracer_factory=factory).ask(question, USER)
    return tracers[-1]


LOOKUP = {"tool_calls": [{"name": "lookup_part", "arguments": {"part_number": "HLV-2205"}}]}


def test_a_run_is_a_sequence_of_typed_events_that_round_trips_through_jsonl(tmp_path: Path) -> None:
    tracer = ask(JsonlExporter(tmp_path), [LOOKUP, "It costs $52.00 [lookup_part#1]."])
    events = read_events(tmp_path / f"{tracer.trace_id}.jsonl")
    assert [e.kind for e in events] == [
        EventKind.RUN_STARTED, EventKind.TOOLS_OFFERED, EventKind.MODEL_DECISION, EventKind.CALL_PROPOSED,
        EventKind.CALL_EXECUTED, EventKind.MODEL_DECISION, EventKind.CITATION_CHECK, EventKind.RUN_FINISHED]
    assert events == tracer.events  # what was written is what was recorded, field for field
    executed = events[4]
    assert (executed.tool, executed.effect, executed.status, executed.decided_by) == \
        ("lookup_part", "read", "ok", "code")
    assert executed.arguments == {"part_number": "HLV-2205"} and executed.call_id == events[3].call_id
    assert events[2].decided_by == "model" and events[5].decided_by == "code"  # the final ask is code's
    assert events[-1].status == "answered" and events[-1].citations == ["lookup_part#1"]
    assert all(e.run_id == events[0].run_id != "" and e.schema_version == SCHEMA_VERSION for e in events)


def test_a_held_write_records_its_proposal_and_the_pause(tmp_path: Path) -> None:
    from toolcrib.policy.approvals import SQLiteApprovalStore

    tracers: list[Tracer] = []

    def factory() -> Tracer:
        tracers.append(Tracer())
        return tracers[-1]

    gate = Gate(Registry([lookup_part, reserve_stock]), GroupPolicy({"support": ["*"]}),
                approvals=SQLiteApprovalStore(tmp_path / "approvals.db"))
    model = ScriptedModel([{"tool_calls": [{"name": "reserve_stock",
                                            "arguments": {"part_number": "F2", "quantity": 3}}]}])
    Runner(model, gate, tracer_factory=factory).ask("Reserve 3 of part F2", USER)
    held = next(e for e in tracers[-1].events if e.kind == EventKind.CALL_HELD)
    assert held.decided_by == "policy" and held.effect == "write" and held.proposal_id
    finished = tracers[-1].events[-1]
    assert finished.kind == EventKind.RUN_FINISHED and finished.status == "paused"
    assert finished.detail["proposals"] == [{"proposal_id": held.proposal_id, "tool": "reserve_stock",
                                             "call_id": held.call_id}]


def test_secrets_are_redacted_in_arguments_and_details(tmp_path: Path) -> None:
    tracer = Tracer([JsonlExporter(tmp_path)])
    tracer.record(EventKind.CALL_PROPOSED, "Proposed", decided_by="model", tool="login",
                  arguments={"api_key": "abc", "q": "hi"})
    tracer.record(EventKind.CALL_FAILED, "Failed", detail={"internal": "Authorization: Bearer sk-abcdefghijklmnop"})
    tracer.close()  # the run's end: its lines are written
    raw = (tmp_path / f"{tracer.trace_id}.jsonl").read_text()
    assert "sk-abcdefghijklmnop" not in raw and '"abc"' not in raw
    assert read_events(tmp_path / f"{tracer.trace_id}.jsonl")[0].arguments == {"api_key": "[redacted]", "q": "hi"}


def test_a_record_of_another_schema_version_or_kind_is_refused_not_misread(tmp_path: Path) -> None:
    old = {"kind": "tool", "decided_by": "code", "title": "Run tool: lookup_part", "step": 1}  # before typed events
    with pytest.raises(TraceFormatError, match="schema_version"):
        Event.from_dict(old)
    with pytest.raises(TraceFormatError, match="unknown kind"):
        Event.from_dict({**old, "schema_version": 1, "kind": "teleported"})
    # version 2 only added decided_by "provider": a version-1 record reads as it is; a later one does not
    assert Event.from_dict({**old, "schema_version": 1, "kind": "call_executed"}).decided_by == "code"
    with pytest.raises(TraceFormatError, match="schema_version 4"):
        Event.from_dict({**old, "schema_version": 4, "kind": "call_executed"})
    (tmp_path / "x.jsonl").write_text("not json\n")
    with pytest.raises(TraceFormatError, match="line 1"):
        read_events(tmp_path / "x.jsonl")


def test_the_title_is_presentation_only() -> None:
    event = Event(EventKind.CALL_EXECUTED, "code", title="anything at all", tool="lookup_part")
    assert Event.from_dict(json.loads(json.dumps(event.to_dict()))) == event


def test_opentelemetry_spans_follow_the_genai_conventions() -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolcrib.trace.otel import OpenTelemetryExporter

    memory = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    replies = [LOOKUP, "It costs $52.00 [lookup_part#1]."]
    ask(OpenTelemetryExporter(provider, model_name="local:qwen"), replies)
    spans = {s.name: s for s in memory.get_finished_spans()}
    chat = spans["chat local:qwen"]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.request.model"] == "local:qwen"
    assert chat.attributes["toolcrib.decided_by"] == "code"  # the last chat span: the final ask
    tool_span = spans["execute_tool lookup_part"]
    assert tool_span.attributes["gen_ai.tool.name"] == "lookup_part"
    assert tool_span.attributes["gen_ai.tool.call.id"]
    root = spans["invoke_agent toolcrib"]  # ended by the run_finished event
    assert tool_span.parent.span_id == root.context.span_id
    assert root.attributes["toolcrib.outcome"] == "answered"


def test_a_renamed_title_changes_no_reader() -> None:
    """Every reader keys on kind and fields; rewording what people read breaks nothing."""
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolcrib.trace.otel import OpenTelemetryExporter

    memory = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = Tracer([OpenTelemetryExporter(provider)])
    tracer.record(EventKind.CALL_EXECUTED, "Werkzeug ausgeführt", tool="lookup_part", call_id="c1", effect="read")
    tracer.record(EventKind.RUN_FINISHED, "Fertig", status="answered")
    names = {s.name for s in memory.get_finished_spans()}
    assert "execute_tool lookup_part" in names and "invoke_agent toolcrib" in names


def agui_events(tracer: Tracer) -> list[Any]:
    """Every event mapped to AG-UI and parsed by the protocol's own models (a wrong shape fails here)."""
    core = pytest.importorskip("ag_ui.core")
    from pydantic import TypeAdapter

    from toolcrib.trace.agui import to_agui

    adapter: TypeAdapter[Any] = TypeAdapter(core.Event)
    return [adapter.validate_python(item) for e in tracer.events for item in to_agui(e)]


def test_a_run_maps_onto_ag_ui_events_the_protocol_accepts() -> None:
    tracer = Tracer()
    tracers = [tracer]
    gate = Gate(Registry([lookup_part, reserve_stock]), GroupPolicy({"support": ["*"]}))
    Runner(ScriptedModel([LOOKUP, "It costs $52.00 [lookup_part#1]."]), gate,
           tracer_factory=lambda: tracers.pop()).ask("What does part HLV-2205 cost?", USER)
    events = agui_events(tracer)
    types = [e.type.value for e in events]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    start = types.index("TOOL_CALL_START")
    assert types[start:start + 4] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert json.loads(events[start + 1].delta) == {"part_number": "HLV-2205"}
    assert json.loads(events[start + 3].content)["status"] == "ok"
    assert events[-1].outcome.type == "success" and events[0].thread_id == events[-1].thread_id


def test_a_run_paused_for_approval_finishes_with_an_interrupt_naming_the_proposal(tmp_path: Path) -> None:
    from toolcrib.policy.approvals import SQLiteApprovalStore

    tracer = Tracer()
    tracers = [tracer]
    gate = Gate(Registry([lookup_part, reserve_stock]), GroupPolicy({"support": ["*"]}),
                approvals=SQLiteApprovalStore(tmp_path / "approvals.db"))
    model = ScriptedModel([{"tool_calls": [{"name": "reserve_stock",
                                            "arguments": {"part_number": "F2", "quantity": 3}}]}])
    Runner(model, gate, tracer_factory=lambda: tracers.pop()).ask("Reserve 3 of part F2", USER)
    held = next(e for e in tracer.events if e.kind == EventKind.CALL_HELD)
    finished = agui_events(tracer)[-1]
    assert finished.outcome.type == "interrupt"
    assert [(i.id, i.reason, i.tool_call_id) for i in finished.outcome.interrupts] == [
        (held.proposal_id, "approval_required", held.call_id)]


def test_the_jsonl_exporter_writes_every_line_of_many_interleaved_runs(tmp_path: Path) -> None:
    exporter = JsonlExporter(tmp_path, open_files=3)  # fewer open files than runs: files are closed and reopened
    tracers = [Tracer([exporter]) for _ in range(8)]
    for n in range(50):
        for tracer in tracers:
            tracer.record(EventKind.MODEL_DECISION, f"step {n}", detail={"n": n})
    for tracer in tracers:
        tracer.close()  # each run's end: its lines are on disk when this returns
        events = read_events(tmp_path / f"{tracer.trace_id}.jsonl")
        assert [e.detail["n"] for e in events] == list(range(50))


class _Kept(TraceExporter):
    """A live exporter: every event as it is recorded."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def export(self, event: Event) -> None:
        self.events.append(event)


@tool(cache_ttl_s=60)
def sign_in(user: Annotated[str, Identifier()], api_key: str) -> dict[str, Any]:
    """Sign in."""
    return {"user": user, "session": "Bearer abcdefghijklmnop"}


def _calls(exporters: list[TraceExporter]) -> Tracer:
    """READ calls (one run, one cached, one refused) and a code event between them, through a Gate."""
    import asyncio

    from toolcrib import CallContext, ToolCall
    from toolcrib.tools.grounding import Grounding

    tracer = Tracer(exporters)
    tracer.run_id = "r1"
    gate = Gate(Registry([lookup_part, sign_in]), GroupPolicy({"support": ["*"]}))
    cctx = CallContext(USER, tracer, Grounding("part HLV-2205 for bob"))

    async def calls() -> None:
        await gate.run(ToolCall("c1", "lookup_part", {"part_number": "HLV-2205"}), cctx)
        await gate.run(ToolCall("c2", "sign_in", {"user": "bob", "api_key": "sk-abcdefghijklmnop"}), cctx)
        tracer.record(EventKind.MODEL_DECISION, "Model", decided_by="model", detail={"n": 1})
        await gate.run(ToolCall("c3", "sign_in", {"user": "bob", "api_key": "sk-abcdefghijklmnop"}), cctx)
        await gate.run(ToolCall("c4", "lookup_part", {"part_number": "XYZ-1"}), cctx)

    asyncio.run(calls())
    return tracer


def test_call_events_read_later_are_the_events_a_live_exporter_received() -> None:
    kept = _Kept()
    live, later = _calls([kept]), _calls([])  # later: the calls' events are built when the trace is read
    assert kept.events == live.events  # exported as recorded, in order, each once

    def fields(events: list[Event]) -> list[dict[str, Any]]:
        return [{k: v for k, v in e.to_dict().items() if k not in ("trace_id", "at", "ms")} for e in events]

    assert fields(later.events) == fields(live.events)
    assert [e.kind for e in later.events] == [EventKind.CALL_EXECUTED, EventKind.CALL_EXECUTED,
                                              EventKind.MODEL_DECISION, EventKind.CACHE_HIT, EventKind.CALL_REFUSED]
    assert [e.step for e in later.events] == [1, 2, 3, 4, 5] and later.count(EventKind.CALL_EXECUTED) == 2
    assert later.events[1].arguments == {"user": "bob", "api_key": "[redacted]"}  # redacted when built
    assert "sk-" not in json.dumps([e.to_dict() for e in later.events])


def test_an_exporter_attached_mid_run_receives_the_events_from_then_on() -> None:
    tracer = _calls([])
    kept = _Kept()
    tracer.exporters.append(kept)
    tracer.record_call(EventKind.CALL_EXECUTED, "Run tool: x", "code", "x", "c9", "read", {"token": "t"}, "ok",
                       None, 1.5, None)
    assert kept.events == tracer.events[-1:] and kept.events[0].step == 6
    assert kept.events[0].arguments == {"token": "[redacted]"} and kept.events[0].ms == 1.5


def test_a_trace_file_holds_the_call_events_its_writer_built_redacted(tmp_path: Path) -> None:
    tracer = _calls([JsonlExporter(tmp_path)])  # the writer builds the calls' events as it writes them
    tracer.close()
    path = tmp_path / f"{tracer.trace_id}.jsonl"
    assert "sk-" not in path.read_text() and "Bearer" not in path.read_text()
    assert read_events(path) == tracer.events and len(tracer.events) == 5

"""The run's graph: the table in agent/pipeline.py is the only place that says which step runs where, and
the runs the scripted model drives go only the ways it declares."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Annotated, Any

import pytest

from toolcrib import (
    Answer,
    Effect,
    EventKind,
    Gate,
    GroupPolicy,
    Identifier,
    Limits,
    Principal,
    Registry,
    Runner,
    RunnerSettings,
    ScriptedModel,
    Tracer,
    tool,
)
from toolcrib.agent.nodes import Edge
from toolcrib.agent.pipeline import GRAPH, STEPS, mermaid
from toolcrib.agent.runs import FileRunStore
from toolcrib.agent.state import Mode
from toolcrib.agent.stepids import StepId
from toolcrib.policy import SQLiteApprovalStore

DOCS = Path(__file__).resolve().parents[1] / "docs" / "concepts" / "modes.md"


@tool
def lookup_part(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """Look up a part's price by part number."""
    return {"found": True, "part_number": part_number, "price_usd": 52.0}


@tool(effect=Effect.WRITE)
def reserve_stock(part_number: Annotated[str, Identifier()], quantity: int) -> dict[str, Any]:
    """Reserve stock."""
    return {"reserved": quantity}


USER = Principal("alice", groups=frozenset({"support"}))
LOOKUP = {"tool_calls": [{"name": "lookup_part", "arguments": {"part_number": "HLV-2205"}}]}
RESERVE = {"tool_calls": [{"name": "reserve_stock", "arguments": {"part_number": "HLV-2205", "quantity": 2}}]}


def _run(replies: list[Any], question: str, mode: Mode, tmp_path: Path, *, small: bool = False,
         **settings: Any) -> tuple[Answer, Tracer, Runner]:
    tracers: list[Tracer] = []

    def tracer() -> Tracer:
        tracers.append(Tracer())
        return tracers[-1]

    policy = GroupPolicy({"support": ["*"], "admin": ["*"]}, approvers={"reserve_stock": {"admin"}})
    approvals = SQLiteApprovalStore(tmp_path / "approvals.sqlite")
    gate = Gate(Registry([lookup_part, reserve_stock]), policy, approvals=approvals)
    model = ScriptedModel(replies, profile={"answer": "aided" if small else "native"})
    runner = Runner(model, gate, RunnerSettings(mode=mode, **settings),
                    tracer_factory=tracer, runs=FileRunStore(tmp_path / "runs"))
    answer = runner.ask(question, USER)
    return answer, tracers[-1], runner


def _path(tracer: Tracer) -> list[str]:
    finished = [e for e in tracer.events if e.kind is EventKind.RUN_FINISHED]
    assert len(finished) == 1
    return list(finished[0].detail["path"])


def _check(tracer: Tracer, mode: Mode) -> list[str]:
    """The run went only the table's ways, and each step that acted did so at a place the table gives it."""
    places = GRAPH[mode].places
    path = _path(tracer)
    for here, there in itertools.pairwise(path):
        assert there in places[here].edges.values() or there == GRAPH[mode].stopped, (here, there)
    assert path[-1] == "record"
    placed = {s.id for s in STEPS}
    for event in tracer.events:
        if event.node is None:  # the run's start, before its first place
            assert event.kind in (EventKind.RUN_STARTED, EventKind.RUN_RESUMED, EventKind.CONTENT_FLAGGED), event
            continue
        assert event.node in path, event
        if event.rule in placed:
            assert event.rule in places[event.node].steps, (event.rule, event.node)
    return path


# -- the table ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["single", "loop"])
def test_the_table_is_whole(mode: Mode) -> None:
    graph = GRAPH[mode]
    places = graph.places
    for name, place in places.items():
        assert all(target in places for target in place.edges.values()), name
        assert all(step in {s.id for s in STEPS} for step in place.steps), name
    assert places["record"].edges == {}  # the one place a run ends
    seen, todo = set(), [graph.start, graph.resume, graph.stopped]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo += places[name].edges.values()
    assert seen == set(places), set(places) - seen  # no place a run can never reach


def test_every_step_has_a_place_and_single_mode_steps_only_single_mode() -> None:
    placed = {mode: {s for p in g.places.values() for s in p.steps} for mode, g in GRAPH.items()}
    assert {s.id for s in STEPS} == placed["single"]
    assert placed["single"] - placed["loop"] == {StepId.REGROUNDED_LOOKUP, StepId.REFUSED_CHANGE,
                                                 StepId.REQUESTED_CHANGE}


@pytest.mark.parametrize("mode", ["single", "loop"])
def test_the_docs_draw_the_table(mode: Mode) -> None:
    text = DOCS.read_text(encoding="utf-8")
    drawn = re.search(rf"<!-- graph:{mode} -->\n```mermaid\n(.*?)\n```\n<!-- /graph -->", text, re.S)
    assert drawn is not None, f"docs/concepts/modes.md has no graph:{mode} block"
    assert drawn.group(1) == mermaid(mode), "the diagram differs from the table: run scripts/draw_graph.py"


# -- runs --------------------------------------------------------------------------------------------


def test_a_lookup_goes_the_single_mode_way(tmp_path: Path) -> None:
    answer, tracer, _ = _run([LOOKUP, "HLV-2205 costs $52.00 [lookup_part#1]."], "What does HLV-2205 cost?",
                             "single", tmp_path)
    assert answer.outcome == "answered"
    assert _check(tracer, "single") == [
        "request", "decide", "proposed", "call", "decided", "held", "lookups", "gather", "gathered", "found",
        "records", "complete", "search", "evidence", "answer", "write", "respond", "amend", "review", "note",
        "record"]
    decided = [e for e in tracer.events if e.kind is EventKind.MODEL_DECISION]
    assert [e.node for e in decided] == ["decide", "write"]


def test_small_talk_ends_at_the_request(tmp_path: Path) -> None:
    answer, tracer, _ = _run([], "hello!", "single", tmp_path)
    assert _check(tracer, "single") == ["request", "amend", "review", "note", "record"]
    assert [e.rule for e in tracer.events if e.rule] == [StepId.SMALL_TALK]
    assert answer.text


def test_a_change_pauses_and_resumes_by_the_table(tmp_path: Path) -> None:
    answer, tracer, runner = _run([RESERVE, "Reserved 2 of HLV-2205 [reserve_stock#1]."],
                                  "Reserve 2 units of HLV-2205", "single", tmp_path)
    assert answer.outcome == "paused"
    assert _check(tracer, "single")[-6:] == ["held", "pause", "amend", "review", "note", "record"]
    approvals = runner.gate.approvals
    assert approvals is not None
    approvals.approve(approvals.pending()[0].id, Principal("ada", groups=frozenset({"admin"})))
    tracers: list[Tracer] = []
    runner.tracer_factory = lambda: tracers.append(Tracer()) or tracers[-1]  # type: ignore[func-returns-value]
    resumed = runner.resume(answer.run_id, USER)
    assert resumed.outcome == "answered"
    # its one decision was the approved call: what became of it is the answer, with no model call
    assert _check(tracers[-1], "single") == ["resume", "amend", "review", "note", "record"]
    assert resumed.text.startswith("I ran reserve_stock (part_number HLV-2205, quantity 2): ada approved it.")


def test_an_answer_without_evidence_is_reminded_then_abstains(tmp_path: Path) -> None:
    answer, tracer, _ = _run(["It costs $10.", "It costs $10."], "What does HLV-2205 cost?", "single", tmp_path)
    assert answer.abstained
    path = _check(tracer, "single")
    assert path[:6] == ["request", "decide", "reply", "remind", "decide", "reply"]
    reminded = [e for e in tracer.events if e.rule == StepId.EVIDENCE_REMINDER]
    assert [e.node for e in reminded] == ["remind"]


def test_loop_rounds_go_the_loop_way(tmp_path: Path) -> None:
    answer, tracer, _ = _run([LOOKUP, "HLV-2205 costs $52.00 [lookup_part#1]."], "What does HLV-2205 cost?",
                             "loop", tmp_path)
    assert answer.outcome == "answered"
    path = _check(tracer, "loop")
    assert path[:6] == ["request", "round", "decide", "proposed", "call", "called"]
    assert path[6:9] == ["round", "first", "gather"]  # the first evidence in: code's additions, once


def test_a_repeated_call_is_answered_and_a_limit_stops(tmp_path: Path) -> None:
    _, tracer, _ = _run([LOOKUP, LOOKUP, "HLV-2205 costs $52.00 [lookup_part#1]."], "What does HLV-2205 cost?",
                        "loop", tmp_path)
    path = _check(tracer, "loop")
    assert "proposed" in path and path[path.index("search") - 1] == "proposed"
    assert [e.node for e in tracer.events if e.rule == StepId.REPEATED_CALL] == ["proposed"]
    answer, tracer, _ = _run([LOOKUP, "HLV-2205 costs $52.00 [lookup_part#1]."], "What does HLV-2205 cost?",
                             "loop", tmp_path, limits=Limits(rounds=1))
    path = _check(tracer, "loop")  # out of rounds with evidence in hand: answered from it
    assert path[path.index("search") - 1] == "round"
    assert [e.node for e in tracer.events if e.rule == StepId.ROUND_LIMIT_ANSWER] == ["round"]
    assert answer.outcome == "answered"
    answer, tracer, _ = _run([RESERVE], "Reserve 2 units of HLV-2205", "loop", tmp_path, limits=Limits(tool_calls=0))
    assert answer.outcome == "limit"  # any other limit stops the run where it is: on to its amendment
    assert _check(tracer, "loop")[:3] == ["request", "round", "amend"]


def test_edges_are_named_in_one_enum() -> None:
    used = {edge for g in GRAPH.values() for p in g.places.values() for edge in p.edges}
    assert used <= set(Edge)

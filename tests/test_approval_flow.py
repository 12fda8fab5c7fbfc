"""A write proposed by the model runs only after a person approves that exact call: end to end
through the Runner and the Gate, with real SQLite approval and audit stores."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from toolcrib import (
    CallContext,
    Effect,
    Gate,
    GroupPolicy,
    Identifier,
    Principal,
    Registry,
    Runner,
    RunnerSettings,
    ScriptedModel,
    ToolCall,
    ToolContext,
    Tracer,
    tool,
)
from toolcrib.agent.runs import FileRunStore
from toolcrib.policy import ApprovalRefused, SafetyEnvelope, SQLiteApprovalStore, SQLiteAuditStore
from toolcrib.tools.grounding import Grounding

STOCK = {"F2": 5}
RUNS: list[str] = []
LOCK = threading.Lock()


def stock_version(values: dict[str, Any], ctx: ToolContext) -> str:
    return f"available={STOCK.get(values['part_number'])}"


@tool
def lookup_stock(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """How many units are available."""
    return {"part_number": part_number, "available": STOCK[part_number]}


@tool(effect=Effect.WRITE, resource_version=stock_version)
def reserve_stock(part_number: Annotated[str, Identifier()], quantity: Annotated[int, Field(gt=0)]) -> dict[str, Any]:
    """Reserve units (changes inventory)."""
    with LOCK:
        RUNS.append(f"{part_number}:{quantity}")
        STOCK[part_number] -= quantity
    return {"reserved": quantity, "available": STOCK[part_number]}


@tool(effect=Effect.ACTUATE)
def set_supply_voltage(channel: Annotated[str, Identifier()], volts: float) -> dict[str, Any]:
    """Set a supply channel's voltage (energizes the board)."""
    RUNS.append(f"volts {channel} {volts}")
    return {"channel": channel, "volts": volts}


ALICE = Principal("alice", "kestrel", frozenset({"support"}))
ADA = Principal("ada", "kestrel", frozenset({"admin"}))
POLICY = GroupPolicy({"support": ["lookup_stock", "reserve_stock", "set_supply_voltage"], "admin": ["*"]},
                     {"admin": ["*"]})
ENVELOPE = SafetyEnvelope.from_config({"set_supply_voltage": {"argument": "volts", "per": "channel",
                                                              "limits": {"CH1": {"min": 0, "max": 12, "unit": "V"}}}})


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Gate, SQLiteApprovalStore, SQLiteAuditStore, FileRunStore]:
    STOCK["F2"] = 5
    RUNS.clear()
    approvals = SQLiteApprovalStore(tmp_path / "approvals.sqlite")
    audit = SQLiteAuditStore(tmp_path / "audit.sqlite")
    gate = Gate(Registry([lookup_stock, reserve_stock, set_supply_voltage]), POLICY, approvals=approvals, audit=audit,
                envelope=ENVELOPE)
    return gate, approvals, audit, FileRunStore(tmp_path / "runs")


def reserve_run(gate: Gate, runs: FileRunStore, quantity: int = 3) -> tuple[Runner, Any]:
    model = ScriptedModel([{"tool_calls": [{"name": "reserve_stock",
                                            "arguments": {"part_number": "F2", "quantity": quantity}}]},
                           f"Reserved {quantity} F2 filters [reserve_stock#1].",
                           f"Reserved {quantity} F2 filters [reserve_stock#1]."])  # a replayed resume asks again
    runner = Runner(model, gate, RunnerSettings(), runs=runs)
    return runner, runner.ask(f"Reserve {quantity} F2 filters", ALICE)


def test_lookup_then_reserve_proposes_and_stock_stays_until_approved(setup: Any) -> None:
    gate, approvals, audit, runs = setup
    runner, paused = reserve_run(gate, runs)
    assert paused.outcome == "paused" and STOCK["F2"] == 5 and RUNS == []
    proposal = approvals.pending()[0]
    assert (proposal.tool, proposal.arguments, proposal.requester) == \
        ("reserve_stock", {"part_number": "F2", "quantity": 3}, "alice")
    assert proposal.id in paused.text and "toolcrib approve" in paused.text
    approvals.approve(proposal.id, ADA)
    done = runner.resume(paused.run_id, ALICE)
    assert done.outcome == "answered" and STOCK["F2"] == 2 and RUNS == ["F2:3"]
    assert done.executed[0]["proposal_id"] == proposal.id
    events = [r.event for r in audit.records()]
    assert events[0] == "proposed" and events[-1] == "executed"
    assert audit.verify().ok


def test_a_replayed_resume_does_not_run_the_write_twice(setup: Any) -> None:
    gate, approvals, _, runs = setup
    runner, paused = reserve_run(gate, runs)
    approvals.approve(approvals.pending()[0].id, ADA)
    runner.resume(paused.run_id, ALICE)
    again = runner.resume(paused.run_id, ALICE)  # e.g. a retried request
    assert RUNS == ["F2:3"] and STOCK["F2"] == 2
    assert again.executed[0]["status"] == "ok"  # the recorded outcome, not a second execution


def test_concurrent_resumes_execute_exactly_once(setup: Any) -> None:
    gate, approvals, _, runs = setup
    _, _paused = reserve_run(gate, runs)
    pid = approvals.pending()[0].id
    approvals.approve(pid, ADA)
    call = ToolCall(id="c", name="reserve_stock", arguments={"part_number": "F2", "quantity": 3})

    def resume() -> None:
        asyncio.run(gate.run(call, CallContext(ALICE, Tracer(), Grounding("F2")), proposal_id=pid))

    threads = [threading.Thread(target=resume) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert RUNS == ["F2:3"] and STOCK["F2"] == 2


def claim(gate: Gate, pid: str, arguments: dict[str, Any], who: Principal = ALICE) -> Any:
    call = ToolCall(id="c", name="reserve_stock", arguments=arguments)
    return asyncio.run(gate.run(call, CallContext(who, Tracer(), Grounding("F2")), proposal_id=pid))


def test_an_edited_call_needs_a_new_approval(setup: Any) -> None:
    gate, approvals, _, runs = setup
    reserve_run(gate, runs)
    pid = approvals.pending()[0].id
    approvals.approve(pid, ADA)
    outcome = claim(gate, pid, {"part_number": "F2", "quantity": 4})
    assert outcome.status == "refused" and outcome.payload["error"]["reason"] == "edited"
    assert RUNS == []


def test_a_stale_approval_is_refused_when_the_resource_changed(setup: Any) -> None:
    gate, approvals, _, runs = setup
    reserve_run(gate, runs)
    pid = approvals.pending()[0].id
    approvals.approve(pid, ADA)
    STOCK["F2"] = 4  # someone else took one meanwhile
    outcome = claim(gate, pid, {"part_number": "F2", "quantity": 3})
    assert outcome.status == "refused" and outcome.payload["error"]["reason"] == "stale"
    assert RUNS == []


def test_self_approval_and_unapproved_runs_are_refused(setup: Any) -> None:
    gate, approvals, _, runs = setup
    reserve_run(gate, runs)
    pid = approvals.pending()[0].id
    with pytest.raises(ApprovalRefused) as refused:
        approvals.approve(pid, ALICE)
    assert refused.value.reason == "self_approval"
    outcome = claim(gate, pid, {"part_number": "F2", "quantity": 3})
    assert outcome.status == "refused" and RUNS == []


def test_an_expired_approval_is_refused(setup: Any) -> None:
    gate, approvals, _, runs = setup
    reserve_run(gate, runs)
    pid = approvals.pending()[0].id
    approvals.approve(pid, ADA, ttl_s=0.01)
    time.sleep(0.05)
    outcome = claim(gate, pid, {"part_number": "F2", "quantity": 3})
    assert outcome.status == "refused" and outcome.payload["error"]["reason"] == "expired" and RUNS == []


def test_another_user_cannot_use_or_read_someone_elses_proposal(setup: Any) -> None:
    gate, approvals, _, runs = setup
    reserve_run(gate, runs)
    pid = approvals.pending()[0].id
    approvals.approve(pid, ADA)
    mallory = Principal("mallory", "other", frozenset({"support"}))
    outcome = claim(gate, pid, {"part_number": "F2", "quantity": 3}, who=mallory)
    assert outcome.payload["error"]["code"] == "not_permitted" and RUNS == []


def test_negative_quantity_is_rejected_by_validation_before_any_proposal(setup: Any) -> None:
    gate, approvals, _audit, runs = setup
    _, answer = reserve_run(gate, runs, quantity=-3)
    assert answer.refused[0]["error"]["code"] == "invalid_arguments"
    assert approvals.pending() == [] and RUNS == []


def test_an_actuate_set_point_outside_the_envelope_is_refused_before_any_person_is_asked(setup: Any) -> None:
    gate, approvals, _, _ = setup
    call = ToolCall(id="c", name="set_supply_voltage", arguments={"channel": "CH1", "volts": 48.0})
    outcome = asyncio.run(gate.run(call, CallContext(ALICE, Tracer(), Grounding("set CH1 to 48 V"))))
    assert outcome.status == "refused" and "12" in outcome.payload["error"]["message"]
    assert approvals.pending() == [] and RUNS == []
    ok = ToolCall(id="c", name="set_supply_voltage", arguments={"channel": "CH1", "volts": 5.0})
    held = asyncio.run(gate.run(ok, CallContext(ALICE, Tracer(), Grounding("set CH1 to 5 V"))))
    assert held.status == "approval_required" and approvals.pending()[0].arguments == {"channel": "CH1", "volts": 5.0}

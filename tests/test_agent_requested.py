"""A change the request spells out is checked by code before the model is asked: a value the tool cannot
take is refused at once, nothing is proposed, and a request within bounds goes to the model as before."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from toolcrib import (
    Effect,
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
from toolcrib.agent import requested
from toolcrib.agent.request import Request
from toolcrib.policy.approvals import SQLiteApprovalStore
from toolcrib.policy.envelope import SafetyEnvelope

RAN: list[str] = []
CHANNEL = Identifier(shape=r"[A-Z]|(?i:CH\d+)")
PART = Identifier(shape=r"(?i:[a-z]+\d+)")


def requested_arguments(question: str, tool: Any) -> dict[str, Any] | None:
    return requested.requested_arguments(Request.parse(question), tool)


@tool(effect=Effect.ACTUATE)
def set_supply_voltage(channel: Annotated[str, CHANNEL],
                       volts: Annotated[float, Field(ge=0, le=5.5)]) -> dict[str, Any]:
    """Set a supply channel's voltage."""
    RAN.append(f"set {channel} {volts}")
    return {"channel": channel, "volts": volts}


@tool(effect=Effect.WRITE)
def reserve_stock(part_number: Annotated[str, PART], quantity: Annotated[int, Field(gt=0)]) -> dict[str, Any]:
    """Reserve stock of a part."""
    RAN.append(f"reserve {part_number} {quantity}")
    return {"reserved": quantity}


REGISTRY = Registry([set_supply_voltage, reserve_stock])
ENVELOPE = SafetyEnvelope.from_config({"set_supply_voltage": {"argument": "volts", "per": "channel",
                                                              "limits": {"CH1": {"min": 0, "max": 3, "unit": "V"}}}})
USER = Principal("liam", groups=frozenset({"lab"}))


def ask(question: str, replies: list[Any], approvals: SQLiteApprovalStore | None = None,
        ) -> tuple[Any, ScriptedModel, Tracer]:
    RAN.clear()
    model = ScriptedModel(replies)
    tracer = Tracer()
    gate = Gate(REGISTRY, GroupPolicy({"lab": ["*"]}), approvals=approvals, envelope=ENVELOPE)
    runner = Runner(model, gate, RunnerSettings(require_evidence=False), tracer_factory=lambda: tracer)
    return runner.ask(question, USER), model, tracer


def test_the_values_a_request_spells_out_are_read_by_code() -> None:
    assert requested_arguments("Set CH3 to 12 V.", set_supply_voltage) == {"channel": "CH3", "volts": 12}
    assert requested_arguments("Reserve -3 F2 filters.", reserve_stock) == {"part_number": "F2", "quantity": -3}
    # two figures, no figure, a verb the request does not use: left to the model
    assert requested_arguments("Set CH1 to 5 V and CH2 to 3 V", set_supply_voltage) is None
    assert requested_arguments("Please reserve some F2 filters", reserve_stock) is None
    assert requested_arguments("How many F2 filters are there? 3?", reserve_stock) is None
    assert requested_arguments("Reserve 2.5 F2 filters", reserve_stock) is None  # no whole number to take


def test_a_value_the_tool_cannot_take_is_refused_before_the_model_is_asked() -> None:
    answer, model, tracer = ask("Set CH3 to 12 V.", [{"text": "never asked"}])
    assert answer.outcome == "answered" and "was refused, so I cannot do this as asked" in answer.text
    assert answer.text.endswith("Nothing was changed.")
    assert "less than or equal to 5.5" in answer.text  # the tool's own reason
    assert len(model.requests) == 0 and RAN == [] and not answer.executed and not answer.pending
    assert not [e for e in tracer.events if e.kind is EventKind.CALL_PROPOSED]
    rule = [e for e in tracer.events if e.kind is EventKind.EVIDENCE_RULE]
    assert rule and rule[0].detail["arguments"] == {"channel": "CH3", "volts": 12}


def test_a_set_point_outside_the_safety_envelope_is_refused_before_the_model_is_asked() -> None:
    answer, model, _ = ask("Set CH1 to 4 V", [{"text": "never asked"}])  # within the schema, not the envelope
    assert len(model.requests) == 0 and "I cannot do this as asked" in answer.text and RAN == []


def test_a_request_within_bounds_goes_to_the_model_and_is_held_for_approval(tmp_path: Path) -> None:
    call = {"tool_calls": [{"name": "reserve_stock", "arguments": {"part_number": "F2", "quantity": 2}}]}
    answer, model, _ = ask("Reserve 2 F2 filters.", [call], SQLiteApprovalStore(tmp_path / "approvals.sqlite"))
    assert len(model.requests) == 1 and answer.outcome == "paused" and RAN == []

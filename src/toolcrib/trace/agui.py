"""A run's events as AG-UI 1.0 protocol events (the JSON a streaming client reads, camelCase keys).

AG-UI's thread is toolcrib's run (it outlives a pause for approval); AG-UI's run is one trace (one
``ask`` or one ``resume``). The mapping is by kind, one rule each:

- ``run_started`` / ``run_resumed`` -> ``RUN_STARTED``
- ``call_proposed`` -> ``TOOL_CALL_START``, ``TOOL_CALL_ARGS`` (the arguments as JSON), ``TOOL_CALL_END``
- a call's outcome (executed, failed, refused, held, dropped, cache hit, replayed) -> ``TOOL_CALL_RESULT``
  whose content is the typed outcome (status, error code, proposal id), never the tool's raw output
- ``model_decision`` -> ``STEP_STARTED`` + ``STEP_FINISHED`` named ``model_decision``
- ``run_finished`` -> ``RUN_FINISHED``: outcome ``success``, or ``interrupt`` naming each proposal
  held for approval when the run paused
- every other kind -> ``CUSTOM`` named ``toolcrib.<kind>`` with the event as its value
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from toolcrib.trace.events import Event, EventKind

_RESULTS = frozenset({EventKind.CALL_EXECUTED, EventKind.CALL_FAILED, EventKind.CALL_REFUSED, EventKind.CALL_HELD,
                      EventKind.CALL_DROPPED, EventKind.CACHE_HIT, EventKind.CALL_REPLAYED})


def to_agui(event: Event) -> list[dict[str, Any]]:
    """The AG-UI events that stand for one toolcrib event, in order."""
    base: dict[str, Any] = {"timestamp": int(datetime.fromisoformat(event.at).timestamp() * 1000)}
    run = {"threadId": event.run_id, "runId": event.trace_id}
    kind = event.kind
    if kind in (EventKind.RUN_STARTED, EventKind.RUN_RESUMED):
        return [{"type": "RUN_STARTED", **base, **run}]
    if kind is EventKind.CALL_PROPOSED and event.call_id:
        return _call_started(event, base)
    if kind in _RESULTS and event.call_id:
        content = {k: v for k, v in (("kind", kind.value), ("status", event.status), ("error_code", event.error_code),
                                     ("proposal_id", event.proposal_id)) if v}
        started: list[dict[str, Any]] = []
        if event.decided_by == "provider":  # a hosted tool the provider ran was never proposed: it starts here
            content["decided_by"] = "provider"
            started = _call_started(event, base)
        return [*started, {"type": "TOOL_CALL_RESULT", **base, "messageId": f"{event.trace_id}:{event.step}",
                           "toolCallId": event.call_id, "content": json.dumps(content), "role": "tool"}]
    if kind is EventKind.MODEL_DECISION:
        return [{"type": "STEP_STARTED", **base, "stepName": kind.value},
                {"type": "STEP_FINISHED", **base, "stepName": kind.value}]
    if kind is EventKind.RUN_FINISHED:
        detail = event.detail if isinstance(event.detail, dict) else {}
        proposals = detail.get("proposals") or []
        outcome: dict[str, Any] = {"type": "success"}
        if event.status == "paused" and proposals:
            outcome = {"type": "interrupt", "interrupts": [
                {"id": p["proposal_id"], "reason": "approval_required", "toolCallId": p.get("call_id"),
                 "message": f"{p.get('tool')} is held for a person's approval as proposal {p['proposal_id']}"}
                for p in proposals]}
        return [{"type": "RUN_FINISHED", **base, **run, "outcome": outcome,
                 "result": {"outcome": event.status, "citations": event.citations or []}}]
    return [{"type": "CUSTOM", **base, "name": f"toolcrib.{kind.value}", "value": event.to_dict()}]


def _call_started(event: Event, base: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"toolCallId": event.call_id}
    return [{"type": "TOOL_CALL_START", **base, **call, "toolCallName": event.tool or ""},
            {"type": "TOOL_CALL_ARGS", **base, **call, "delta": json.dumps(event.arguments or {})},
            {"type": "TOOL_CALL_END", **base, **call}]

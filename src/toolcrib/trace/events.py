"""A run's events: one typed, versioned record per step, from a closed set of kinds.

Every reader (the JSONL trace, ``toolcrib trace``, ``toolcrib stats``, eval scoring, the
OpenTelemetry exporter, the service's event stream) reads the typed fields; ``title`` is for people
only and may be reworded at any time. The kinds are named so that they map onto AG-UI's event types
(``run_started`` -> ``RUN_STARTED``, ``call_proposed`` -> ``TOOL_CALL_START/ARGS/END``,
``call_executed`` -> ``TOOL_CALL_RESULT``, ``run_finished`` -> ``RUN_FINISHED``) and OpenTelemetry's
GenAI operations (``model_decision`` -> ``chat``, ``call_executed`` -> ``execute_tool``).

Schema history: 1 (toolcrib 0.1): this shape. 2: ``decided_by`` may also be ``"provider"`` (a tool the
model's provider ran itself, e.g. the Responses API's ``file_search``, recorded as ``call_executed`` or
``call_failed``); nothing else changed, so a version-1 record reads as it is. 3: ``rule``, the stable
id of the code step that decided (``evidence_rule``, ``code_search``, a ``call_proposed`` planned by
code, ...; ``agent.stepids.StepId``); older records read with ``rule`` empty. A reader meeting any other
``schema_version`` refuses the record (``TraceFormatError``) instead of misreading it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from toolcrib.errors import TraceFormatError

SCHEMA_VERSION = 3
READABLE_VERSIONS = frozenset({1, 2, 3})  # each version only added: an older record is a valid newer one

DecidedBy = Literal["model", "code", "policy", "human", "cache", "provider"]
RunOutcome = Literal["answered", "abstained", "clarify", "paused", "limit"]


class EventKind(StrEnum):
    """What happened. A closed set: a new kind is a schema change."""

    RUN_STARTED = "run_started"
    RUN_RESUMED = "run_resumed"
    VALUES_LINKED = "values_linked"  # code linked what the request names to the data; detail: {"links": [...]}
    TOOLS_OFFERED = "tools_offered"  # detail: {"offered": [...], "withheld": {name: reason}}
    MODEL_DECISION = "model_decision"  # status: tool_calls or text; detail: the calls or the text; tokens; ms
    CALL_PROPOSED = "call_proposed"  # one per proposed call: tool, call_id, arguments
    CALL_DROPPED = "call_dropped"  # proposed but not run (single-call mode, over budget)
    ARGUMENT_REGROUNDED = "argument_regrounded"  # a date the model wrote replaced by the request's; detail: which
    CALL_REFUSED = "call_refused"  # error_code says why (unknown_tool, not_offered, invalid_arguments, ...)
    CALL_HELD = "call_held"  # a WRITE/ACTUATE held for approval: proposal_id
    CALL_APPROVED = "call_approved"  # a person approved proposal_id; detail: {"approver": ...}
    CALL_RETRIED = "call_retried"
    CALL_EXECUTED = "call_executed"  # the tool ran and returned; decided_by "provider": a hosted tool
    # the provider ran (detail: {"hosted": true, "results": [...], "output": ...}; citations: what it found)
    CALL_FAILED = "call_failed"  # the tool raised or timed out; error_code
    CALL_REPLAYED = "call_replayed"  # a duplicated resume: the recorded outcome, nothing ran again
    CACHE_HIT = "cache_hit"
    CONTENT_FLAGGED = "content_flagged"  # the scanner flagged a tool result; detail: the flags
    EVIDENCE_RULE = "evidence_rule"  # a code step decided (``rule``: which): answered, refused, re-asked ...
    CODE_SEARCH = "code_search"  # code searched the documents with the question
    CITATION_CHECK = "citation_check"  # citations: kept; detail: {"removed": [...], "flags": [...]}
    CLARIFYING_QUESTION = "clarifying_question"
    ABSTAINED = "abstained"
    LIMIT_REACHED = "limit_reached"
    RUN_FINISHED = "run_finished"  # status: the outcome (answered, abstained, clarify, paused, limit);
    # detail: {"text", "flags"} and, when paused, {"proposals": [{"proposal_id", "tool", "call_id"}]}


_SECOND: tuple[int, str] = (0, "")  # the last whole second formatted, and its text
_MILLIS = tuple(f".{ms:03d}+00:00" for ms in range(1000))  # a format spec per event cost more than the rest


def timestamp(now: float | None = None) -> str:
    """``datetime.now(UTC).isoformat(timespec="milliseconds")`` (of ``now``, a ``time.time()``, when
    given), formatting each second once: every event is stamped, and most fall in the same second as
    the one before."""
    global _SECOND
    if now is None:
        now = time.time()
    second = int(now)
    cached = _SECOND
    if cached[0] != second:
        cached = _SECOND = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    return cached[1] + _MILLIS[int((now - second) * 1000)]


@dataclass
class Event:
    """One recorded step of a run, with who decided it."""

    kind: EventKind
    decided_by: DecidedBy
    title: str = ""  # presentation only: no reader may parse it
    trace_id: str = ""
    run_id: str = ""
    step: int = 0
    at: str = field(default_factory=timestamp)
    ms: float = 0.0
    tool: str | None = None
    call_id: str | None = None
    effect: str | None = None
    arguments: dict[str, Any] | None = None
    status: str | None = None
    error_code: str | None = None
    proposal_id: str | None = None
    citations: list[str] | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    detail: Any = None
    rule: str | None = None  # the code step that decided (agent.stepids.StepId), where one did
    node: str | None = None  # the place of the run's graph it happened in (agent.pipeline.GRAPH)
    schema_version: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape: every field set, optional ones left out when empty."""
        fields_ = self.__dict__  # a copy less what is empty: 4x cheaper than a getattr per field
        out = fields_.copy()
        for name, value in fields_.items():
            if value is None:
                del out[name]
        if not self.tokens_in:
            del out["tokens_in"]
        if not self.tokens_out:
            del out["tokens_out"]
        if isinstance(self.kind, EventKind):
            out["kind"] = self.kind.value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """Read one record back; raises ``TraceFormatError`` for an unknown version or kind."""
        version = data.get("schema_version")
        if version not in READABLE_VERSIONS:
            raise TraceFormatError(f"trace record has schema_version {version!r}; this toolcrib reads "
                                   f"versions {', '.join(map(str, sorted(READABLE_VERSIONS)))} "
                                   "(the record may predate typed events)")
        try:
            kind = EventKind(data["kind"])
        except (KeyError, ValueError):
            raise TraceFormatError(f"trace record has an unknown kind {data.get('kind')!r}") from None
        known = {f.name for f in fields(cls)}
        return cls(**{**{k: v for k, v in data.items() if k in known}, "kind": kind})

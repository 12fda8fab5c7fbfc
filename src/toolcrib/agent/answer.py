"""The final answer: text, checked citations, whether it abstained, and what ran or was refused."""

from __future__ import annotations

from copy import deepcopy
from dataclasses import dataclass, field, fields
from typing import Any

from toolcrib.retrieval.citations import Citation
from toolcrib.trace.events import RunOutcome as Outcome

__all__ = ["Answer", "Citation", "Finish", "Outcome"]


@dataclass
class Answer:
    text: str
    citations: list[Citation] = field(default_factory=list)
    abstained: bool = False
    outcome: Outcome = "answered"
    executed: list[dict[str, Any]] = field(default_factory=list)
    refused: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    trace_id: str = ""
    run_id: str = ""
    model_decided_steps: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """What ``dataclasses.asdict`` gives (a copy, nothing shared with this Answer), field by field: asdict
        took ~35 us an Answer, twice a service request (the run record's and the response's)."""
        citations = [{f: _copied(getattr(c, f)) for f in _CITATION_FIELDS} for c in self.citations]
        return {"text": self.text, "citations": citations, "abstained": self.abstained,
                "outcome": self.outcome, "executed": _copied(self.executed), "refused": _copied(self.refused),
                "pending": _copied(self.pending), "flags": list(self.flags), "trace_id": self.trace_id,
                "run_id": self.run_id, "model_decided_steps": self.model_decided_steps, "tokens_in": self.tokens_in,
                "tokens_out": self.tokens_out, "ms": self.ms}


def _copied(value: Any) -> Any:
    """A deep copy of JSON-shaped data (dicts, lists, tuples, scalars), as ``asdict`` copies a field's value."""
    kind = type(value)
    if kind is dict:
        return {k: _copied(v) for k, v in value.items()}
    if kind is list:
        return [_copied(v) for v in value]
    if kind is tuple:
        return tuple(_copied(v) for v in value)
    if kind in _ATOMS:
        return value
    return deepcopy(value)


_ATOMS = frozenset({str, int, float, bool, type(None)})
_CITATION_FIELDS = tuple(f.name for f in fields(Citation))


@dataclass(frozen=True)
class Finish:
    """How a step ends the run (or, at ``amend`` and ``note``, the draft it leaves)."""

    text: str
    outcome: Outcome = "answered"
    code_wrote: bool = False  # the text is code's (a refusal, a quote): no claim check
    abstained: bool = False

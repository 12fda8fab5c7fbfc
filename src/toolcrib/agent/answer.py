"""The final answer: text, checked citations, whether it abstained, and what ran or was refused."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from toolcrib.retrieval.citations import Citation
from toolcrib.trace.events import RunOutcome as Outcome

__all__ = ["Answer", "Citation", "Outcome"]


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
        return asdict(self)

"""Every step of a run, with who decided it: model, code, policy, human or cache."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

StepKind = Literal["model", "code", "policy", "human", "cache", "tool"]
DecidedBy = Literal["model", "code", "policy", "human", "cache"]

# Keys whose values never reach a trace; values that look like bearer tokens or API keys neither.
_SECRET_KEYS = re.compile(r"(pass(word)?|secret|token|api[_-]?key|authorization|credential)", re.I)
_SECRET_VALUES = re.compile(r"(sk-[A-Za-z0-9_-]{8,}|Bearer\s+[A-Za-z0-9._-]{8,})")
REDACTED = "[redacted]"


def redact(value: Any) -> Any:
    """Return ``value`` with secret-looking keys and values replaced by ``[redacted]``."""
    if isinstance(value, dict):
        return {k: (REDACTED if _SECRET_KEYS.search(str(k)) else redact(v)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return _SECRET_VALUES.sub(REDACTED, value)
    return value


@dataclass
class Step:
    """One recorded step of a run."""

    kind: StepKind
    decided_by: DecidedBy
    title: str
    detail: Any = ""
    tokens_in: int = 0
    tokens_out: int = 0
    ms: float = 0.0
    trace_id: str = ""
    step: int = 0
    at: str = field(default_factory=lambda: datetime.now(timezone.utc).isoformat(timespec="milliseconds"))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class TraceExporter(ABC):
    """Where finished steps go (JSONL file, OpenTelemetry, memory)."""

    @abstractmethod
    def export(self, step: Step) -> None:
        """Receive one step as soon as it is recorded."""

    def close(self) -> None:
        """Flush and release. Default: nothing."""


class JsonlExporter(TraceExporter):
    """Appends each step as one JSON line to ``DIR/<trace_id>.jsonl`` (flushed per step)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)

    def path_for(self, trace_id: str) -> Path:
        return self.directory / f"{trace_id}.jsonl"

    def export(self, step: Step) -> None:
        with self.path_for(step.trace_id).open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(step.to_dict(), default=str, ensure_ascii=False) + "\n")


class Tracer:
    """Records the steps of one run under one correlation id, redacting secrets."""

    def __init__(self, exporters: list[TraceExporter] | None = None, trace_id: str | None = None) -> None:
        self.trace_id = trace_id or new_trace_id()
        self.exporters = list(exporters or [])
        self.steps: list[Step] = []
        self._lock = threading.Lock()

    def record(
        self,
        *,
        kind: StepKind,
        decided_by: DecidedBy,
        title: str,
        detail: Any = "",
        tokens_in: int = 0,
        tokens_out: int = 0,
        ms: float = 0.0,
    ) -> Step:
        with self._lock:
            step = Step(kind=kind, decided_by=decided_by, title=title, detail=redact(detail),
                        tokens_in=tokens_in, tokens_out=tokens_out, ms=round(ms, 3),
                        trace_id=self.trace_id, step=len(self.steps) + 1)
            self.steps.append(step)
            for exporter in self.exporters:
                exporter.export(step)
        return step

    def count(self, *, decided_by: DecidedBy | None = None, kind: StepKind | None = None) -> int:
        return sum(1 for s in self.steps
                   if (decided_by is None or s.decided_by == decided_by) and (kind is None or s.kind == kind))

    def close(self) -> None:
        for exporter in self.exporters:
            exporter.close()


def new_trace_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def load_trace(path: Path) -> list[dict[str, Any]]:
    """Read a JSONL trace back as a list of step dicts."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

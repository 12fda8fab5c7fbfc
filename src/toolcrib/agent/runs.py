"""Runs as records: who asked what, every event, the latest Answer, and the state of a run paused for
approval, so it can be read back and resumed later, in another process or on another host.

``FileRunStore`` keeps them in append-only journals, one per process (one host); ``PostgresRunStore``
one row per run, shared by every ``toolcrib serve`` process on the same ``[policy] dsn``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson

from toolcrib.agent.run_journal import RunJournal
from toolcrib.errors import ConfigError
from toolcrib.models.base import Message, ToolCall
from toolcrib.tools.grounding import Source
from toolcrib.trace.journal import Retention
from toolcrib.trace.tracer import json_bytes

_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass
class PausedRun:
    run_id: str
    user_id: str
    question: str
    mode: str
    messages: list[Message]
    pending: list[tuple[ToolCall, str]]
    grounding: list[tuple[Source, str]]  # every text the run had seen, with its source
    flags: list[str] = field(default_factory=list)  # what the scanner flagged before the pause: still warned about

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id, "user_id": self.user_id, "question": self.question, "mode": self.mode,
            "messages": [{"role": m.role, "content": m.content, "tool_calls": [_call_to_json(c) for c in m.tool_calls],
                          "tool_call_id": m.tool_call_id, "name": m.name} for m in self.messages],
            "pending": [{"call": _call_to_json(c), "proposal_id": pid} for c, pid in self.pending],
            "grounding": [{"source": s.to_dict(), "text": t} for s, t in self.grounding],
            "flags": list(self.flags),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PausedRun:
        messages = [Message(m["role"], m["content"], tuple(_call_from_json(c) for c in m["tool_calls"]),
                            m["tool_call_id"], m["name"]) for m in data["messages"]]
        return cls(data["run_id"], data["user_id"], data["question"], data["mode"], messages,
                   [(_call_from_json(p["call"]), p["proposal_id"]) for p in data["pending"]],
                   [(Source.from_dict(g["source"]), g["text"]) for g in data["grounding"]],
                   [str(f) for f in data.get("flags") or []])


def _call_to_json(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _call_from_json(data: dict[str, Any]) -> ToolCall:
    return ToolCall(id=data["id"], name=data["name"], arguments=data["arguments"])


@dataclass
class RunRecord:
    """One run across its asks and resumes: the latest Answer (as ``Answer.to_dict()``), every event (as
    ``Event.to_dict()``, in order, one trace per ask or resume) and the state of its last pause for approval,
    which resuming needs (kept after a resume, so a duplicate resume replays recorded outcomes)."""

    run_id: str
    user_id: str
    tenant: str
    question: str
    mode: str
    outcome: str = ""
    answer: dict[str, Any] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    traces: list[str] = field(default_factory=list)
    paused: PausedRun | None = None
    created_at: float = 0.0
    updated_at: float = 0.0

    def summary(self) -> dict[str, Any]:
        """The record without its events and paused state: what a list of runs shows."""
        return {"run_id": self.run_id, "user": self.user_id, "tenant": self.tenant, "question": self.question,
                "mode": self.mode, "outcome": self.outcome, "created_at": self.created_at,
                "updated_at": self.updated_at, "traces": list(self.traces)}

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary(), "answer": self.answer, "events": self.events,
                "paused": self.paused.to_dict() if self.paused else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        return cls(data["run_id"], data["user"], data["tenant"], data["question"], data["mode"],
                   data.get("outcome", ""), data.get("answer") or {}, list(data.get("events") or []),
                   list(data.get("traces") or []),
                   PausedRun.from_dict(data["paused"]) if data.get("paused") else None,
                   float(data.get("created_at", 0.0)), float(data.get("updated_at", 0.0)))


class RunStore(ABC):
    """Where runs are recorded and paused runs wait. Recording a run segment is atomic per run."""

    @abstractmethod
    def get(self, run_id: str) -> RunRecord | None:
        """The run with this id, or None (also for an id that cannot be one)."""

    @abstractmethod
    def for_user(self, user_id: str, *, limit: int = 50) -> list[RunRecord]:
        """This user's runs, newest first."""

    @abstractmethod
    def _update(self, run_id: str, change: Callable[[RunRecord | None], RunRecord]) -> RunRecord:
        """Read, change and write one run's record as one atomic step."""

    def record(self, segment: RunRecord) -> RunRecord:
        """Add one ask or resume (its events, Answer, outcome and paused state) to the run's record."""
        now = time.time()

        def merge(old: RunRecord | None) -> RunRecord:
            return replace(segment, created_at=now, updated_at=now) if old is None else _merge(old, segment, now)

        return self._update(segment.run_id, merge)

    def load(self, run_id: str) -> PausedRun:
        """The state of a run's last pause; ConfigError when there is no such run or it never paused."""
        record = self.get(run_id)
        if record is None or record.paused is None:
            raise ConfigError(f"no paused run with id '{run_id}'")
        return record.paused

    def close(self) -> None:
        """Release connections."""


class FileRunStore(RunStore):
    """Runs in a folder: each ask or resume appended as one line to this process's journal
    (``RunJournal``, under ``journals/``), read back by merging a run's lines in the order they were
    written; ``<run_id>.json`` files of earlier versions are read as a run's first segment."""

    def __init__(self, directory: Path, retention: Retention | None = None) -> None:
        self.directory = directory
        self.journal = RunJournal(directory / "journals", retention)

    def _path(self, run_id: str) -> Path | None:
        return self.directory / f"{run_id}.json" if _RUN_ID.match(run_id) else None

    def _file(self, path: Path) -> RunRecord | None:
        try:
            return RunRecord.from_dict(json.loads(path.read_bytes()))
        except FileNotFoundError:
            return None

    def get(self, run_id: str) -> RunRecord | None:
        path = self._path(run_id)
        if path is None:
            return None
        self.journal.refresh()
        return self._merged(run_id, self._file(path))

    def _merged(self, run_id: str, record: RunRecord | None) -> RunRecord | None:
        """``record`` (an earlier version's file) with the run's journal lines applied, oldest first."""
        for segment in sorted(self.journal.index.get(run_id, ()), key=lambda s: s.at):
            data = self.journal.read(segment)
            if data is None:  # its journal was removed (rotation) since the index was read
                continue
            line = RunRecord.from_dict(orjson.loads(data))
            record = line if record is None or segment.whole else _merge(record, line, segment.at)
        return record

    def for_user(self, user_id: str, *, limit: int = 50) -> list[RunRecord]:
        self.journal.refresh()
        latest = self.journal.latest(user_id)
        out: list[RunRecord] = []
        files = self.directory.glob("*.json") if self.directory.is_dir() else iter(())
        for path in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True):  # an earlier version's runs
            record = self._file(path)
            if record is not None and record.user_id == user_id and record.run_id not in latest:
                out.append(record)
                if len(out) >= limit:
                    break
        for run_id in sorted(latest, key=latest.__getitem__, reverse=True)[:limit]:
            legacy = self._path(run_id)
            found = self._merged(run_id, self._file(legacy) if legacy is not None else None)
            if found is not None and found.user_id == user_id:
                out.append(found)
        return sorted(out, key=lambda r: r.updated_at, reverse=True)[:limit]

    def record(self, segment: RunRecord) -> RunRecord:
        """One line in this process's journal: no read, no lock (readers merge a run's lines)."""
        if self._path(segment.run_id) is None:
            raise ConfigError(f"'{segment.run_id}' is not a run id")
        now = time.time()
        line = replace(segment, created_at=now, updated_at=now)
        earlier = self.journal.index.get(segment.run_id)  # a resume read its run's lines before it ran
        self.journal.append(segment.run_id, segment.user_id, segment.tenant, now, False,
                            json_bytes(line.to_dict()))
        return line if not earlier else self.get(segment.run_id) or line

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        with (self.directory / ".lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _update(self, run_id: str, change: Callable[[RunRecord | None], RunRecord]) -> RunRecord:
        if self._path(run_id) is None:
            raise ConfigError(f"'{run_id}' is not a run id")
        with self._locked():  # against another _update; a segment recorded meanwhile is older or newer by time
            record = change(self.get(run_id))
            self.journal.append(run_id, record.user_id, record.tenant, time.time(), True,
                                json_bytes(record.to_dict()))
        return record

    def close(self) -> None:
        self.journal.close()


def _merge(old: RunRecord, segment: RunRecord, now: float) -> RunRecord:
    """``old`` with one more ask or resume: its events added, its Answer, outcome and pause the latest."""
    return replace(old, outcome=segment.outcome, answer=segment.answer, events=old.events + segment.events,
                   traces=old.traces + [t for t in segment.traces if t not in old.traces],
                   paused=segment.paused or old.paused, updated_at=now)


_POSTGRES_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS toolcrib_runs (
        id TEXT PRIMARY KEY, user_id TEXT NOT NULL, tenant TEXT NOT NULL,
        updated_at DOUBLE PRECISION NOT NULL, body TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS toolcrib_runs_user ON toolcrib_runs (user_id, updated_at)",
]


class PostgresRunStore(RunStore):
    """One row per run in PostgreSQL, so a run paused on one process resumes on another."""

    def __init__(self, dsn: str, *, schema: str | None = None) -> None:
        from toolcrib.policy._connections import PostgresConnection

        self._db = PostgresConnection(dsn, schema, "run store")
        self._db.migrate(_POSTGRES_SCHEMA)

    def get(self, run_id: str) -> RunRecord | None:
        with self._db.tx(write=False) as cur:
            cur.execute("SELECT body FROM toolcrib_runs WHERE id = %s", (run_id,))
            row = cur.fetchone()
        return None if row is None else RunRecord.from_dict(json.loads(row[0]))

    def for_user(self, user_id: str, *, limit: int = 50) -> list[RunRecord]:
        with self._db.tx(write=False) as cur:
            cur.execute("SELECT body FROM toolcrib_runs WHERE user_id = %s ORDER BY updated_at DESC LIMIT %s",
                        (user_id, limit))
            rows = cur.fetchall()
        return [RunRecord.from_dict(json.loads(r[0])) for r in rows]

    def _update(self, run_id: str, change: Callable[[RunRecord | None], RunRecord]) -> RunRecord:
        with self._db.tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", ("toolcrib.run:" + run_id,))
            cur.execute("SELECT body FROM toolcrib_runs WHERE id = %s", (run_id,))
            row = cur.fetchone()
            record = change(None if row is None else RunRecord.from_dict(json.loads(row[0])))
            cur.execute("INSERT INTO toolcrib_runs (id, user_id, tenant, updated_at, body) VALUES (%s, %s, %s, %s, %s)"
                        " ON CONFLICT (id) DO UPDATE SET updated_at = EXCLUDED.updated_at, body = EXCLUDED.body",
                        (run_id, record.user_id, record.tenant, record.updated_at,
                         json_bytes(record.to_dict()).decode("utf-8")))
        return record

    def close(self) -> None:
        self._db.close()

"""What the SQL dialects of the audit store share: appends serialised by the dialect's write transaction
(SQLite ``BEGIN IMMEDIATE``; PostgreSQL an exclusive table lock) so the chain stays in order across
processes, and a process killed mid-append leaves no half record; the database refuses UPDATE and
DELETE (triggers)."""

from __future__ import annotations

import atexit
import contextlib
import json
import weakref
from abc import abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import fields
from typing import Any

from toolcrib.errors import InvalidArguments
from toolcrib.policy._connections import PostgresConnection, SQLiteConnection
from toolcrib.policy.audit.base import EVENTS, GENESIS_HASH, AuditRecord, AuditStore, Wanted, not_recorded
from toolcrib.policy.canonical import canonical_json, sha256_hex

_PAGE = 1000
_FIELDS = ", ".join(f.name for f in fields(AuditRecord))  # the columns, in the record's order
_INSERT = f"INSERT INTO toolcrib_audit ({_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


_TEXT = json.JSONEncoder(ensure_ascii=False).encode  # a string as canonical_json writes it


def _row_hash(row: Sequence[Any]) -> str:
    """``_chain_hash`` of a record given as a row (``_FIELDS`` but the hash, its detail canonical JSON),
    written out in canonical_json's key order without decoding the detail and encoding it again:
    that cost more than the rest of a group commit. ``verify`` checks it with ``_chain_hash``."""
    seq, timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail_json, prev = row
    if type(timestamp) is float and timestamp.is_integer():  # canonical JSON: 3.0 is 3
        timestamp = int(timestamp)
    return sha256_hex(
        f'{{"actor":{_TEXT(actor)},"decided_by":{_TEXT(decided_by)},"detail":{detail_json},"event":{_TEXT(event)},'
        f'"prev_hash":{_TEXT(prev)},"proposal_id":{_TEXT(proposal_id)},"seq":{int(seq)},'
        f'"timestamp":{_TEXT(timestamp)},"tool":{_TEXT(tool)},"trace_id":{_TEXT(trace_id)}}}')


# timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail: canonical JSON, or (a
# deferred record's) the mapping, encoded when it is written
Entry = tuple[float, str, str, str, str, str, str, str | dict[str, Any]]


def encoded(detail: str | dict[str, Any]) -> str:
    """A deferred record's detail as canonical JSON; one that cannot be encoded is recorded as such
    (the chain must not stop on it)."""
    if isinstance(detail, str):
        return detail
    try:
        return canonical_json(detail)
    except (TypeError, ValueError, InvalidArguments) as exc:
        return canonical_json({"unencodable_detail": f"{type(exc).__name__}: {exc}"[:300]})


def _record(row: Sequence[Any]) -> AuditRecord:
    """A record from a row selected as ``_FIELDS``, by column name."""
    values = dict(zip((f.name for f in fields(AuditRecord)), row, strict=True))
    return AuditRecord(**{**values, "detail": json.loads(values["detail"])})


class SQLAuditStore(AuditStore):
    """Shared logic; subclasses give the connection, whose write transaction serialises appends."""

    _db: SQLiteConnection | PostgresConnection

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock

    @abstractmethod
    def _tx(self, write: bool = True) -> Any:
        """A context manager yielding a cursor; with ``write``, appends are serialised."""

    def _sql(self, text: str) -> str:
        return self._db.sql(text)

    def append(
        self,
        event: str,
        *,
        actor: str,
        decided_by: str,
        tool: str = "",
        proposal_id: str = "",
        trace_id: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> AuditRecord:
        entry = self._entry(event, actor, decided_by, tool, proposal_id, trace_id, detail)
        with self._tx() as cur:
            return self._write(cur, [entry])

    def _entry(self, event: str, actor: str, decided_by: str, tool: str, proposal_id: str, trace_id: str,
               detail: Mapping[str, Any] | None, *, deferred: bool = False) -> Entry:
        """A record's fields but its place in the chain, stamped now; a ``deferred`` record's detail is
        encoded by the writer (a READ call's arguments: validated JSON, not changed later)."""
        if event not in EVENTS:
            raise ValueError(f"unknown audit event {event!r}; expected one of {sorted(EVENTS)}")
        return (self._clock(), event, actor, decided_by, tool, proposal_id, trace_id,
                dict(detail or {}) if deferred else canonical_json(dict(detail or {})))

    def _write(self, cur: Any, entries: Sequence[Entry]) -> AuditRecord:
        """Chain ``entries`` after the newest record, in order, in the caller's write transaction; returns
        the last record (the only one a caller reads: a batch's records are only counted)."""
        cur.execute("SELECT seq, hash FROM toolcrib_audit ORDER BY seq DESC LIMIT 1")
        last = cur.fetchone()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
        rows = []
        for timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail in entries:
            row = (seq, timestamp, event, actor, decided_by, tool, proposal_id, trace_id, encoded(detail), prev)
            digest = _row_hash(row)
            rows.append((*row, digest))
            seq, prev = seq + 1, digest
        cur.executemany(self._sql(_INSERT), rows)
        return _record(rows[-1])

    def append_missing(self, wanted: Sequence[Wanted]) -> int:
        if not wanted:
            return 0
        with self._tx(write=False) as cur:  # the usual answer, nothing missing, without the append lock
            if not self._missing(cur, wanted):
                return 0
        with self._tx() as cur:
            missing = self._missing(cur, wanted)
            if missing:
                self._write(cur, [self._entry(w.event, w.actor, w.decided_by, w.tool, w.proposal_id, "", w.detail)
                                  for w in missing])
        return len(missing)

    def _missing(self, cur: Any, wanted: Sequence[Wanted]) -> list[Wanted]:
        """The wanted records the chain has no record of, one per proposal and event."""
        ids = sorted({w.proposal_id for w in wanted})
        if not ids:
            return []
        cur.execute(self._sql(f"SELECT proposal_id, event FROM toolcrib_audit WHERE proposal_id <> ''"
                              f" AND proposal_id IN ({', '.join('?' * len(ids))})"), ids)
        return not_recorded(wanted, {(pid, event) for pid, event in cur.fetchall()})

    def records(self, *, after_seq: int = 0) -> Iterator[AuditRecord]:
        while True:
            with self._tx(write=False) as cur:
                cur.execute(self._sql(f"SELECT {_FIELDS} FROM toolcrib_audit WHERE seq > ?"
                                      f" ORDER BY seq LIMIT {_PAGE}"), (after_seq,))
                rows = cur.fetchall()
            for row in rows:
                yield _record(row)
            if len(rows) < _PAGE:
                return
            after_seq = rows[-1][0]

    def head(self) -> tuple[int, str]:
        with self._tx(write=False) as cur:
            cur.execute("SELECT seq, hash FROM toolcrib_audit ORDER BY seq DESC LIMIT 1")
            last = cur.fetchone()
        return (last[0], last[1]) if last else (0, GENESIS_HASH)

    def close(self) -> None:
        self._db.close()


# a proposal's records, found without reading the chain (``append_missing``); READ records have no proposal
PROPOSAL_INDEX = ("CREATE INDEX IF NOT EXISTS toolcrib_audit_proposal ON toolcrib_audit (proposal_id, event)"
                   " WHERE proposal_id <> ''")


# Stores holding records queued in the process: closed at interpreter exit, which commits them (a daemon
# writer thread would otherwise be cut off, and a queue never flushed lost).
CLOSE_AT_EXIT: weakref.WeakSet[SQLAuditStore] = weakref.WeakSet()


@atexit.register
def _close_at_exit() -> None:
    for store in list(CLOSE_AT_EXIT):
        with contextlib.suppress(Exception):  # nothing to report to at exit; they were not acknowledged
            store.close()

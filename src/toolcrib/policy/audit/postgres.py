"""The audit record in PostgreSQL, shared by every ``toolcrib serve`` process.

Durability. ``append`` returns once its record is committed. ``append_deferred`` (the record of every READ
call) queues the record in the process and returns at once; ``flush()`` (the Runner's, at a run's end, off
the service's event loop) commits what is queued in one transaction, and so do the next ``append`` (before its
own record, in the order queued), ``records()``/``head()``/``append_missing``, ``close()`` and a full queue
(``batch`` records). A deferred record is acknowledged once committed: a process killed before that loses
only records it had not acknowledged, and the chain stays whole either way.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from toolcrib.policy._connections import PostgresConnection
from toolcrib.policy.audit.base import AuditRecord, Wanted
from toolcrib.policy.audit.sql import CLOSE_AT_EXIT, PROPOSAL_INDEX, Entry, SQLAuditStore

_POSTGRES_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS toolcrib_audit (
        seq BIGINT PRIMARY KEY, timestamp DOUBLE PRECISION NOT NULL, event TEXT NOT NULL,
        actor TEXT NOT NULL, decided_by TEXT NOT NULL, tool TEXT NOT NULL,
        proposal_id TEXT NOT NULL, trace_id TEXT NOT NULL, detail TEXT NOT NULL,
        prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
    PROPOSAL_INDEX,
    """CREATE OR REPLACE FUNCTION toolcrib_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
       $$ BEGIN RAISE EXCEPTION 'toolcrib audit records are append-only'; END $$""",
    """CREATE OR REPLACE TRIGGER toolcrib_audit_no_change BEFORE UPDATE OR DELETE ON toolcrib_audit
       FOR EACH ROW EXECUTE FUNCTION toolcrib_audit_append_only()""",
    """CREATE OR REPLACE TRIGGER toolcrib_audit_no_truncate BEFORE TRUNCATE ON toolcrib_audit
       FOR EACH STATEMENT EXECUTE FUNCTION toolcrib_audit_append_only()""",
]


class PostgresAuditStore(SQLAuditStore):
    """The audit record in PostgreSQL, shared by every ``toolcrib serve`` process; READ calls' records
    queued and committed a run at a time (see the module docstring)."""

    batch = 1024  # a queue this long is committed by the call that fills it

    def __init__(self, dsn: str, *, schema: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self._db = PostgresConnection(dsn, schema, "audit store")
        self._db.migrate(_POSTGRES_SCHEMA)
        self._queued()

    def _queued(self) -> None:
        """A process's own queue (a forked child's starts empty: the parent's is the parent's to commit)."""
        self._pid = os.getpid()
        self._queue: list[Entry] = []
        self._lock = threading.Lock()  # guards the queue
        self._commit = threading.Lock()  # held from taking queued records until they are committed

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[Any]:
        with self._db.tx() as cur:
            if write:
                # EXCLUSIVE blocks other appends until commit but not readers: one chain order
                cur.execute("LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE")
            yield cur

    def append(self, event: str, *, actor: str, decided_by: str, tool: str = "", proposal_id: str = "",
               trace_id: str = "", detail: Mapping[str, Any] | None = None) -> AuditRecord:
        entry = self._entry(event, actor, decided_by, tool, proposal_id, trace_id, detail)
        written = self._chain([entry])
        assert written is not None
        return written

    def append_deferred(self, event: str, *, actor: str, decided_by: str, tool: str = "",
                        proposal_id: str = "", trace_id: str = "",
                        detail: Mapping[str, Any] | None = None) -> None:
        entry = self._entry(event, actor, decided_by, tool, proposal_id, trace_id, detail, deferred=True)
        if self._pid != os.getpid():
            self._queued()
        with self._lock:
            self._queue.append(entry)
            full = len(self._queue) >= self.batch
        CLOSE_AT_EXIT.add(self)
        if full:
            self.flush()

    def flush(self) -> None:
        self._chain([])

    def _chain(self, entries: Sequence[Entry]) -> AuditRecord | None:
        """Commit what is queued, then ``entries``, in one transaction; on a failure what was queued stays
        queued (in order) and it is raised. Returns the last record written (None: nothing was)."""
        if self._pid != os.getpid():
            self._queued()
        with self._commit:
            with self._lock:
                taken, self._queue = self._queue, []
            if not taken and not entries:
                return None
            try:
                with self._tx() as cur:
                    return self._write(cur, [*taken, *entries])
            except BaseException:
                with self._lock:
                    self._queue[:0] = taken
                raise

    def records(self, *, after_seq: int = 0) -> Iterator[AuditRecord]:
        self.flush()
        return super().records(after_seq=after_seq)

    def head(self) -> tuple[int, str]:
        self.flush()
        return super().head()

    def append_missing(self, wanted: Sequence[Wanted]) -> int:
        self.flush()
        return super().append_missing(wanted)

    def close(self) -> None:
        if self._pid == os.getpid():
            with contextlib.suppress(Exception):  # a database gone: nothing acknowledged is lost
                self.flush()
        CLOSE_AT_EXIT.discard(self)
        super().close()


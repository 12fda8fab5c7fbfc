"""The audit record in PostgreSQL, shared by every ``toolcrib serve`` process."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from toolcrib.policy._connections import PostgresConnection
from toolcrib.policy.audit.sql import PROPOSAL_INDEX, SQLAuditStore

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
    """The audit record in PostgreSQL, shared by every ``toolcrib serve`` process."""

    def __init__(self, dsn: str, *, schema: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self._db = PostgresConnection(dsn, schema, "audit store")
        self._db.migrate(_POSTGRES_SCHEMA)

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[Any]:
        with self._db.tx() as cur:
            if write:
                # EXCLUSIVE blocks other appends until commit but not readers: one chain order
                cur.execute("LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE")
            yield cur

"""The approval store in PostgreSQL, shared by stateless ``toolcrib serve`` processes."""

from __future__ import annotations

import time
from collections.abc import Callable

from toolcrib.policy._connections import PostgresConnection
from toolcrib.policy.approvals.sql import Cursor, SQLApprovalStore

_POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolcrib_proposals (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, requester TEXT NOT NULL,
    tenant TEXT NOT NULL, policy_version TEXT NOT NULL, resource_version TEXT NOT NULL,
    hash TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, run_id TEXT NOT NULL,
    trace_id TEXT NOT NULL, status TEXT NOT NULL, decided_by TEXT NOT NULL, reason TEXT NOT NULL,
    decided_at DOUBLE PRECISION, expires_at DOUBLE PRECISION, used_at DOUBLE PRECISION,
    outcome TEXT, finished_at DOUBLE PRECISION, review TEXT NOT NULL DEFAULT '{}'
);
ALTER TABLE toolcrib_proposals ADD COLUMN IF NOT EXISTS review TEXT NOT NULL DEFAULT '{}';
ALTER TABLE toolcrib_proposals ADD COLUMN IF NOT EXISTS supersedes TEXT NOT NULL DEFAULT '';
ALTER TABLE toolcrib_proposals ADD COLUMN IF NOT EXISTS superseded_by TEXT NOT NULL DEFAULT '';
ALTER TABLE toolcrib_proposals ADD COLUMN IF NOT EXISTS pending_until DOUBLE PRECISION;
CREATE INDEX IF NOT EXISTS toolcrib_proposals_hash ON toolcrib_proposals (hash);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_status ON toolcrib_proposals (status, tenant);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_created ON toolcrib_proposals (created_at);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_decided ON toolcrib_proposals (decided_at);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_finished ON toolcrib_proposals (finished_at);
"""


class PostgresApprovalStore(SQLApprovalStore):
    """Approvals in PostgreSQL, so stateless ``toolcrib serve`` processes share them."""

    _for_update = " FOR UPDATE"
    _skip_locked = " FOR UPDATE SKIP LOCKED"

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        clock: Callable[[], float] = time.time,
        pending_ttl_s: float = 86_400.0,
    ) -> None:
        super().__init__(clock=clock, pending_ttl_s=pending_ttl_s)
        self._db = PostgresConnection(dsn, schema, "approval store")
        self._db.migrate([s for s in _POSTGRES_SCHEMA.split(";") if s.strip()])

    def _lock_key(self, cur: Cursor, key: str) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))

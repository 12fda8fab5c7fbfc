"""The approval store in a SQLite file: the embedded default."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from toolcrib.policy._connections import SQLiteConnection
from toolcrib.policy.approvals.sql import SQLApprovalStore

_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolcrib_proposals (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, requester TEXT NOT NULL,
    tenant TEXT NOT NULL, policy_version TEXT NOT NULL, resource_version TEXT NOT NULL,
    hash TEXT NOT NULL, created_at REAL NOT NULL, run_id TEXT NOT NULL, trace_id TEXT NOT NULL,
    status TEXT NOT NULL, decided_by TEXT NOT NULL, reason TEXT NOT NULL,
    decided_at REAL, expires_at REAL, used_at REAL, outcome TEXT, finished_at REAL,
    review TEXT NOT NULL DEFAULT '{}', supersedes TEXT NOT NULL DEFAULT '',
    superseded_by TEXT NOT NULL DEFAULT '', pending_until REAL
);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_hash ON toolcrib_proposals (hash);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_status ON toolcrib_proposals (status, tenant);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_created ON toolcrib_proposals (created_at);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_decided ON toolcrib_proposals (decided_at);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_finished ON toolcrib_proposals (finished_at);
"""
# columns added after the first release, for stores made before them
_ADDED_COLUMNS = {"review": "TEXT NOT NULL DEFAULT '{}'", "supersedes": "TEXT NOT NULL DEFAULT ''",
                  "superseded_by": "TEXT NOT NULL DEFAULT ''", "pending_until": "REAL"}


class SQLiteApprovalStore(SQLApprovalStore):
    """Approvals in a SQLite file: the embedded default. Safe across threads and processes."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Callable[[], float] = time.time,
        pending_ttl_s: float = 86_400.0,
    ) -> None:
        super().__init__(clock=clock, pending_ttl_s=pending_ttl_s)
        self.path = os.fspath(path)
        self._db = SQLiteConnection(self.path)
        self._db.migrate([s for s in _SQLITE_SCHEMA.split(";") if s.strip()])
        with self._tx() as cur:  # a store from an earlier release (SQLite has no ADD COLUMN IF NOT EXISTS)
            cur.execute("SELECT name FROM pragma_table_info('toolcrib_proposals')")
            have = {row[0] for row in cur.fetchall()}
            for name, kind in _ADDED_COLUMNS.items():
                if name not in have:
                    cur.execute(f"ALTER TABLE toolcrib_proposals ADD COLUMN {name} {kind}")

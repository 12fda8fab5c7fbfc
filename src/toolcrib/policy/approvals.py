"""Where proposals wait for a person, and where an approval is claimed exactly once.

Every decision runs in one database transaction that holds the proposal's row (SQLite
``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE``), so two threads or two processes
claiming the same approval cannot both succeed.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol

from toolcrib.policy._connections import PostgresConnection, SQLiteConnection
from toolcrib.policy.canonical import canonical_json
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Approval, ApprovalRefused, Proposal, RefusalReason, proposal_hash

OUTCOMES = frozenset({"executed", "failed", "outcome_unknown"})
_FINISHED = OUTCOMES | {"executing"}


class ApprovalStore(ABC):
    """Proposals, the approvals bound to their hashes, and the outcome of each approved call."""

    @abstractmethod
    def propose(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        requester: Principal,
        policy_version: str,
        resource_version: str,
        *,
        run_id: str = "",
        trace_id: str = "",
    ) -> Proposal:
        """Store a proposal; the same call still pending (or approved, unused) returns the existing one."""

    @abstractmethod
    def get(self, proposal_id: str) -> Proposal | None:
        """The proposal with this id, or None."""

    @abstractmethod
    def pending(self, tenant: str | None = None) -> list[Proposal]:
        """Proposals waiting for a decision, oldest first, optionally for one tenant."""

    @abstractmethod
    def approval(self, proposal_id: str) -> Approval | None:
        """The approval given to this proposal, used or not, or None."""

    @abstractmethod
    def approve(
        self, proposal_id: str, approver: Principal, *, ttl_s: float = 900, allow_self: bool = False
    ) -> Approval:
        """Approve a pending proposal for ``ttl_s`` seconds. The caller has checked
        ``Policy.may_approve``; this refuses self-approval, other tenants and decided proposals."""

    @abstractmethod
    def reject(self, proposal_id: str, approver: Principal, reason: str = "") -> None:
        """Reject a pending proposal, or revoke an approval that has not been used."""

    @abstractmethod
    def claim(
        self,
        proposal_id: str,
        expected_hash: str,
        *,
        tool: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        current_resource_version: str | None = None,
        now: float | None = None,
    ) -> Approval:
        """Atomically use the approval, once, for the call about to run.

        ``expected_hash`` is ``proposal_hash`` recomputed from the call about to run and the
        resource version read now. When it differs, ``tool``/``arguments``/``current_resource_version``
        tell the two refusals apart: "edited" (the call changed) or "stale" (the call is the
        same but what it would change, or the policy, changed).
        """

    @abstractmethod
    def finish(self, proposal_id: str, status: str, result: Mapping[str, Any]) -> None:
        """Record "executed", "failed" or "outcome_unknown" with the result of a claimed call."""

    @abstractmethod
    def outcome(self, proposal_id: str) -> tuple[str, dict[str, Any]] | None:
        """The recorded (status, result) of a finished call, so a duplicate returns it, not re-runs."""

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> ApprovalStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _Cursor(Protocol):
    rowcount: int

    def execute(self, sql: Any, params: Sequence[Any] = ...) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


_COLUMNS = (
    "id, tool, arguments, requester, tenant, policy_version, resource_version, hash, created_at,"
    " run_id, trace_id, status, decided_by, reason, decided_at, expires_at, used_at"
)


def _proposal(row: Sequence[Any]) -> Proposal:
    return Proposal(
        id=row[0], tool=row[1], arguments=json.loads(row[2]), requester=row[3], tenant=row[4],
        policy_version=row[5], resource_version=row[6], hash=row[7], created_at=row[8],
        run_id=row[9], trace_id=row[10], status=row[11], decided_by=row[12], reason=row[13],
    )


def _approval(row: Sequence[Any]) -> Approval | None:
    if row[14] is None or row[11] in ("pending", "rejected"):
        return None
    return Approval(row[0], row[7], row[12], row[14], row[15], row[16])


class _SQLApprovalStore(ApprovalStore):
    """The shared logic; subclasses give a connection, a placeholder style and row locks."""

    _for_update = ""
    _db: SQLiteConnection | PostgresConnection

    def __init__(self, *, clock: Callable[[], float], pending_ttl_s: float) -> None:
        self._clock = clock
        self.pending_ttl_s = pending_ttl_s

    def _tx(self, write: bool = True) -> Any:
        """A context manager: one transaction (serialising writers when ``write``), yielding a cursor."""
        return self._db.tx(write)

    def _sql(self, text: str) -> str:
        return text

    def _lock_key(self, cur: _Cursor, key: str) -> None:
        """Serialise transactions on ``key`` (no-op where the transaction already does)."""

    def _row(self, cur: _Cursor, proposal_id: str, *, lock: bool = False) -> Any:
        suffix = self._for_update if lock else ""
        cur.execute(self._sql(f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE id = ?{suffix}"),
                    (proposal_id,))
        return cur.fetchone()

    def _set(self, cur: _Cursor, proposal_id: str, **values: Any) -> None:
        cols = ", ".join(f"{k} = ?" for k in values)
        cur.execute(self._sql(f"UPDATE toolcrib_proposals SET {cols} WHERE id = ?"),
                    (*values.values(), proposal_id))

    def _pending_expired(self, row: Sequence[Any], now: float) -> bool:
        return bool(row[11] == "pending" and now >= row[8] + self.pending_ttl_s)

    def propose(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        requester: Principal,
        policy_version: str,
        resource_version: str,
        *,
        run_id: str = "",
        trace_id: str = "",
    ) -> Proposal:
        args_json = canonical_json(dict(arguments))
        digest = proposal_hash(tool, arguments, requester.user_id, requester.tenant,
                               policy_version, resource_version)
        now = self._clock()
        with self._tx() as cur:
            self._lock_key(cur, "toolcrib.proposal:" + digest)
            cur.execute(self._sql(f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE hash = ?"
                                  " AND status IN ('pending', 'approved') ORDER BY created_at"),
                        (digest,))
            for row in cur.fetchall():
                if row[11] == "approved" and now < row[15] or (
                    row[11] == "pending" and not self._pending_expired(row, now)
                ):
                    return _proposal(row)
                self._set(cur, row[0], status="expired")
            proposal = Proposal(
                id="prop_" + secrets.token_hex(8), tool=tool, arguments=json.loads(args_json),
                requester=requester.user_id, tenant=requester.tenant, policy_version=policy_version,
                resource_version=resource_version, hash=digest, created_at=now, run_id=run_id,
                trace_id=trace_id,
            )
            cur.execute(
                self._sql("INSERT INTO toolcrib_proposals (id, tool, arguments, requester, tenant,"
                          " policy_version, resource_version, hash, created_at, run_id, trace_id,"
                          " status, decided_by, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                          " 'pending', '', '')"),
                (proposal.id, tool, args_json, requester.user_id, requester.tenant, policy_version,
                 resource_version, digest, now, run_id, trace_id),
            )
        return proposal

    def get(self, proposal_id: str) -> Proposal | None:
        with self._tx(write=False) as cur:
            row = self._row(cur, proposal_id)
        return None if row is None else _proposal(row)

    def pending(self, tenant: str | None = None) -> list[Proposal]:
        cutoff = self._clock() - self.pending_ttl_s
        query = f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE status = 'pending' AND created_at > ?"
        params: tuple[Any, ...] = (cutoff,)
        if tenant is not None:
            query += " AND tenant = ?"
            params += (tenant,)
        with self._tx(write=False) as cur:
            cur.execute(self._sql(query + " ORDER BY created_at, id"), params)
            rows = cur.fetchall()
        return [_proposal(row) for row in rows]

    def approval(self, proposal_id: str) -> Approval | None:
        with self._tx(write=False) as cur:
            row = self._row(cur, proposal_id)
        return None if row is None else _approval(row)

    @staticmethod
    def _decided(status: str) -> ApprovalRefused:
        """Why a proposal that is no longer pending cannot be decided or used again."""
        if status == "rejected":
            return ApprovalRefused("rejected")
        if status == "expired":
            return ApprovalRefused("expired")
        if status == "approved":
            return ApprovalRefused("used", "the proposal has already been approved")
        if status in _FINISHED:
            return ApprovalRefused("used")
        return ApprovalRefused("not_approved")

    def approve(
        self, proposal_id: str, approver: Principal, *, ttl_s: float = 900, allow_self: bool = False
    ) -> Approval:
        if not ttl_s > 0:
            raise ValueError("ttl_s must be positive")
        now = self._clock()
        refusal: ApprovalRefused | None = None
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            if row is None:
                refusal = ApprovalRefused("not_found")
            elif approver.tenant != row[4]:
                refusal = ApprovalRefused("not_an_approver")
            elif approver.user_id == row[3] and not allow_self:
                refusal = ApprovalRefused("self_approval")
            elif self._pending_expired(row, now):
                self._set(cur, proposal_id, status="expired")
                refusal = ApprovalRefused("expired")
            elif row[11] != "pending":
                refusal = self._decided(row[11])
            else:
                self._set(cur, proposal_id, status="approved", decided_by=approver.user_id,
                          decided_at=now, expires_at=now + ttl_s)
        if refusal is not None:
            raise refusal
        return Approval(proposal_id, row[7], approver.user_id, now, now + ttl_s)

    def reject(self, proposal_id: str, approver: Principal, reason: str = "") -> None:
        now = self._clock()
        refusal: ApprovalRefused | None = None
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            if row is None:
                refusal = ApprovalRefused("not_found")
            elif approver.tenant != row[4]:
                refusal = ApprovalRefused("not_an_approver")
            elif row[11] not in ("pending", "approved"):
                refusal = self._decided(row[11])
            else:
                self._set(cur, proposal_id, status="rejected", decided_by=approver.user_id,
                          decided_at=now, reason=reason)
        if refusal is not None:
            raise refusal

    def claim(
        self,
        proposal_id: str,
        expected_hash: str,
        *,
        tool: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        current_resource_version: str | None = None,
        now: float | None = None,
    ) -> Approval:
        now = self._clock() if now is None else now
        refusal: ApprovalRefused | None = None
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            if row is None:
                refusal = ApprovalRefused("not_found")
            elif row[11] == "pending":
                refusal = ApprovalRefused("not_approved")
            elif row[11] != "approved":
                refusal = self._decided(row[11])
            elif now >= row[15]:
                self._set(cur, proposal_id, status="expired")
                refusal = ApprovalRefused("expired")
            elif expected_hash != row[7]:
                refusal = ApprovalRefused(
                    _mismatch(_proposal(row), tool, arguments, current_resource_version))
            else:
                cur.execute(self._sql("UPDATE toolcrib_proposals SET status = 'executing', used_at = ?"
                                      " WHERE id = ? AND status = 'approved' AND used_at IS NULL"),
                            (now, proposal_id))
                if cur.rowcount != 1:  # unreachable while the row lock holds; kept as a guard
                    refusal = ApprovalRefused("used")
        if refusal is not None:
            raise refusal
        return Approval(proposal_id, row[7], row[12], row[14], row[15], now)

    def finish(self, proposal_id: str, status: str, result: Mapping[str, Any]) -> None:
        if status not in OUTCOMES:
            raise ValueError(f"status must be one of {sorted(OUTCOMES)}, not {status!r}")
        result_json = canonical_json(dict(result))
        refusal: ApprovalRefused | None = None
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            if row is None:
                refusal = ApprovalRefused("not_found")
            elif row[11] in ("executing", "outcome_unknown"):
                # outcome_unknown may later be reconciled to what really happened
                self._set(cur, proposal_id, status=status, outcome=result_json,
                          finished_at=self._clock())
            elif row[11] in ("executed", "failed"):
                refusal = ApprovalRefused("used")
            else:
                refusal = ApprovalRefused("not_approved")
        if refusal is not None:
            raise refusal

    def outcome(self, proposal_id: str) -> tuple[str, dict[str, Any]] | None:
        with self._tx(write=False) as cur:
            cur.execute(self._sql("SELECT status, outcome FROM toolcrib_proposals WHERE id = ?"),
                        (proposal_id,))
            row = cur.fetchone()
        if row is None or row[0] not in OUTCOMES or row[1] is None:
            return None
        return row[0], json.loads(row[1])

    def close(self) -> None:
        self._db.close()


def _mismatch(
    stored: Proposal,
    tool: str | None,
    arguments: Mapping[str, Any] | None,
    current_resource_version: str | None,
) -> RefusalReason:
    """"edited" when the call itself changed, "stale" when only its context did."""
    if tool is not None and arguments is not None:
        same_call = proposal_hash(tool, arguments, stored.requester, stored.tenant,
                                  stored.policy_version, stored.resource_version) == stored.hash
        return "stale" if same_call else "edited"
    if current_resource_version is not None and current_resource_version != stored.resource_version:
        return "stale"
    return "edited"


_SQLITE_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolcrib_proposals (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, requester TEXT NOT NULL,
    tenant TEXT NOT NULL, policy_version TEXT NOT NULL, resource_version TEXT NOT NULL,
    hash TEXT NOT NULL, created_at REAL NOT NULL, run_id TEXT NOT NULL, trace_id TEXT NOT NULL,
    status TEXT NOT NULL, decided_by TEXT NOT NULL, reason TEXT NOT NULL,
    decided_at REAL, expires_at REAL, used_at REAL, outcome TEXT, finished_at REAL
);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_hash ON toolcrib_proposals (hash);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_status ON toolcrib_proposals (status, tenant);
"""


class SQLiteApprovalStore(_SQLApprovalStore):
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


_POSTGRES_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolcrib_proposals (
    id TEXT PRIMARY KEY, tool TEXT NOT NULL, arguments TEXT NOT NULL, requester TEXT NOT NULL,
    tenant TEXT NOT NULL, policy_version TEXT NOT NULL, resource_version TEXT NOT NULL,
    hash TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, run_id TEXT NOT NULL,
    trace_id TEXT NOT NULL, status TEXT NOT NULL, decided_by TEXT NOT NULL, reason TEXT NOT NULL,
    decided_at DOUBLE PRECISION, expires_at DOUBLE PRECISION, used_at DOUBLE PRECISION,
    outcome TEXT, finished_at DOUBLE PRECISION
);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_hash ON toolcrib_proposals (hash);
CREATE INDEX IF NOT EXISTS toolcrib_proposals_status ON toolcrib_proposals (status, tenant);
"""


class PostgresApprovalStore(_SQLApprovalStore):
    """Approvals in PostgreSQL, so stateless ``toolcrib serve`` processes share them."""

    _for_update = " FOR UPDATE"

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

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

    def _lock_key(self, cur: _Cursor, key: str) -> None:
        cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))

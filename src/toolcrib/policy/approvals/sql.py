"""What the SQL dialects of the approval store share: one transaction per decision, holding the
proposal's row (SQLite ``BEGIN IMMEDIATE``; PostgreSQL ``SELECT ... FOR UPDATE``), so two threads or two
processes claiming the same approval cannot both succeed. A dialect gives the connection and row locks."""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol, TypeVar

from toolcrib.policy._connections import PostgresConnection, SQLiteConnection
from toolcrib.policy.approvals.base import OUTCOMES, ApprovalStore
from toolcrib.policy.canonical import canonical_json
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Approval, ApprovalRefused, Proposal, RefusalReason, Review, proposal_hash

# the audit event of the decision a proposal in this status had
_DECISION_EVENTS = {"rejected": "rejected", "superseded": "edited",
                    **dict.fromkeys(("approved", "executing", *OUTCOMES), "approved")}
_FINISHED = OUTCOMES | {"executing"}
_D = TypeVar("_D")  # what a decision returns


class Cursor(Protocol):
    """What the stores use of a DB-API cursor (``sqlite3.Cursor``, a psycopg cursor)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: Any, params: Sequence[Any] = ..., /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


@dataclass(frozen=True)
class _ProposalRow:
    """One ``toolcrib_proposals`` row, read by column name. The store selects exactly these columns,
    in this order (``_COLUMNS``), so a row is built from the tuple either database returns."""

    id: str
    tool: str
    arguments: str  # canonical JSON
    requester: str
    tenant: str
    policy_version: str
    resource_version: str
    hash: str
    created_at: float
    run_id: str
    trace_id: str
    status: str
    decided_by: str
    reason: str
    decided_at: float | None
    expires_at: float | None
    used_at: float | None
    review: str  # canonical JSON of the proposal's Review
    supersedes: str
    superseded_by: str
    pending_until: float | None  # when an undecided proposal expires (its tool's time-to-live)

    @classmethod
    def of(cls, values: Sequence[Any]) -> _ProposalRow:
        return cls(*values)

    def proposal(self) -> Proposal:
        return Proposal(
            id=self.id, tool=self.tool, arguments=json.loads(self.arguments), requester=self.requester,
            tenant=self.tenant, policy_version=self.policy_version, resource_version=self.resource_version,
            hash=self.hash, created_at=self.created_at, run_id=self.run_id, trace_id=self.trace_id,
            status=self.status, decided_by=self.decided_by, reason=self.reason,
            review=Review.from_dict(json.loads(self.review or "{}")), expires_at=self.expires_at,
            supersedes=self.supersedes, superseded_by=self.superseded_by, pending_until=self.pending_until,
        )

    def approval(self) -> Approval | None:
        """The approval recorded on this row; None while pending, once rejected or revoked, and for a
        row without a decision time or an expiry (never written by ``approve``)."""
        if self.decided_at is None or self.expires_at is None or self.status in ("pending", "rejected", "superseded"):
            return None
        return Approval(self.id, self.hash, self.decided_by, self.decided_at, self.expires_at, self.used_at)


_COLUMNS = ", ".join(f.name for f in fields(_ProposalRow))


class SQLApprovalStore(ApprovalStore):
    """The shared logic; subclasses give a connection, a placeholder style and row locks."""

    _for_update = ""
    _skip_locked = ""  # rows another sweeper holds are left to it
    _db: SQLiteConnection | PostgresConnection

    def __init__(self, *, clock: Callable[[], float], pending_ttl_s: float) -> None:
        self._clock = clock
        self.pending_ttl_s = pending_ttl_s

    def _tx(self, write: bool = True) -> AbstractContextManager[Cursor]:
        """A context manager: one transaction (serialising writers when ``write``), yielding a cursor."""
        return self._db.tx(write)

    def _sql(self, text: str) -> str:
        return self._db.sql(text)

    def _lock_key(self, cur: Cursor, key: str) -> None:
        """Serialise transactions on ``key`` (no-op where the transaction already does)."""

    def _row(self, cur: Cursor, proposal_id: str, *, lock: bool = False) -> _ProposalRow | None:
        suffix = self._for_update if lock else ""
        cur.execute(self._sql(f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE id = ?{suffix}"),
                    (proposal_id,))
        row = cur.fetchone()
        return None if row is None else _ProposalRow.of(row)

    def _set(self, cur: Cursor, proposal_id: str, **values: Any) -> None:
        cols = ", ".join(f"{k} = ?" for k in values)
        cur.execute(self._sql(f"UPDATE toolcrib_proposals SET {cols} WHERE id = ?"),
                    (*values.values(), proposal_id))

    def _pending_expired(self, row: _ProposalRow, now: float) -> bool:
        until = row.pending_until if row.pending_until is not None else row.created_at + self.pending_ttl_s
        return row.status == "pending" and now >= until

    def _check_decidable(self, row: _ProposalRow | None, approver: Principal, now: float,
                         allow_self: bool) -> ApprovalRefused | None:
        """Why ``approver`` may not approve (or edit) this locked row now, or None. A proposal past its
        time-to-live is left for ``expire_due`` to record, once, with its audit record and webhook."""
        if row is None:
            return ApprovalRefused("not_found")
        if approver.tenant != row.tenant:
            return ApprovalRefused("not_an_approver")
        if approver.user_id == row.requester and not allow_self:
            return ApprovalRefused("self_approval")
        if self._pending_expired(row, now):
            return ApprovalRefused("expired")
        if row.status != "pending":
            return self._decided(row.status)
        return None

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
        review: Review | None = None,
        pending_ttl_s: float | None = None,
    ) -> Proposal:
        args_json = canonical_json(dict(arguments))
        review = review or Review()
        digest = proposal_hash(tool, arguments, requester.user_id, requester.tenant,
                               policy_version, resource_version, review)
        now = self._clock()
        with self._tx() as cur:
            self._lock_key(cur, "toolcrib.proposal:" + digest)
            cur.execute(self._sql(f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE hash = ?"
                                  " AND status IN ('pending', 'approved') ORDER BY created_at"),
                        (digest,))
            for row in map(_ProposalRow.of, cur.fetchall()):
                if (row.status == "approved" and row.expires_at is not None and now < row.expires_at) or (
                    row.status == "pending" and not self._pending_expired(row, now)
                ):
                    return row.proposal()
                if row.status == "approved":  # an unused approval past its expiry; an undecided one: expire_due's
                    self._set(cur, row.id, status="expired")
            proposal = Proposal(
                id="prop_" + secrets.token_hex(8), tool=tool, arguments=json.loads(args_json),
                requester=requester.user_id, tenant=requester.tenant, policy_version=policy_version,
                resource_version=resource_version, hash=digest, created_at=now, run_id=run_id,
                trace_id=trace_id, review=review,
                pending_until=now + (self.pending_ttl_s if pending_ttl_s is None else pending_ttl_s),
            )
            self._insert(cur, proposal)
        return proposal

    def _insert(self, cur: Cursor, p: Proposal) -> None:
        cur.execute(
            self._sql("INSERT INTO toolcrib_proposals (id, tool, arguments, requester, tenant, policy_version,"
                      " resource_version, hash, created_at, run_id, trace_id, status, decided_by, reason,"
                      " decided_at, expires_at, review, supersedes, superseded_by, pending_until)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
            (p.id, p.tool, canonical_json(p.arguments), p.requester, p.tenant, p.policy_version,
             p.resource_version, p.hash, p.created_at, p.run_id, p.trace_id, p.status, p.decided_by, p.reason,
             p.created_at if p.status == "approved" else None, p.expires_at, canonical_json(p.review.to_dict()),
             p.supersedes, p.superseded_by, p.pending_until),
        )

    def get(self, proposal_id: str) -> Proposal | None:
        with self._tx(write=False) as cur:
            row = self._row(cur, proposal_id)
        return None if row is None else row.proposal()

    def pending(self, tenant: str | None = None) -> list[Proposal]:
        now = self._clock()
        query = (f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE status = 'pending'"
                 " AND COALESCE(pending_until, created_at + ?) > ?")
        params: tuple[Any, ...] = (self.pending_ttl_s, now)
        if tenant is not None:
            query += " AND tenant = ?"
            params += (tenant,)
        with self._tx(write=False) as cur:
            cur.execute(self._sql(query + " ORDER BY created_at, id"), params)
            rows = cur.fetchall()
        return [_ProposalRow.of(row).proposal() for row in rows]

    def expire_due(self) -> list[Proposal]:
        now = self._clock()
        with self._tx() as cur:
            cur.execute(self._sql(f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE status = 'pending'"
                                  f" AND COALESCE(pending_until, created_at + ?) <= ?{self._skip_locked}"),
                        (self.pending_ttl_s, now))
            rows = [_ProposalRow.of(row) for row in cur.fetchall()]
            for row in rows:
                self._set(cur, row.id, status="expired", decided_at=now)
        return [replace(row.proposal(), status="expired") for row in rows]

    def changes_between(self, start: float, end: float) -> list[tuple[Proposal, str, float]]:
        window = "BETWEEN ? AND ?"
        with self._tx(write=False) as cur:
            cur.execute(self._sql(f"SELECT {_COLUMNS}, finished_at FROM toolcrib_proposals WHERE created_at {window}"
                                  f" OR decided_at {window} OR finished_at {window}"), (start, end) * 3)
            rows = cur.fetchall()
        out: list[tuple[Proposal, str, float]] = []
        for values in rows:
            row, finished = _ProposalRow.of(values[:-1]), values[-1]
            proposal = row.proposal()
            out.append((proposal, "proposed", row.created_at))
            decision = _DECISION_EVENTS.get(row.status)
            if row.status == "expired" and row.decided_by:  # approved, then unused past its expiry
                decision = "approved"
            if decision and row.decided_at is not None:
                out.append((proposal, decision, row.decided_at))
            if row.status in OUTCOMES and finished is not None:
                out.append((proposal, row.status, float(finished)))
        return [(p, event, when) for p, event, when in out if start <= when <= end]

    def abandon_stalled(self, limit_s: Callable[[str], float]) -> list[Proposal]:
        now = self._clock()
        with self._tx() as cur:
            cur.execute(self._sql(f"SELECT {_COLUMNS} FROM toolcrib_proposals WHERE status = 'executing'"
                                  f"{self._skip_locked}"))
            rows = [row for row in map(_ProposalRow.of, cur.fetchall())
                    if row.used_at is not None and now - row.used_at >= limit_s(row.tool)]
            for row in rows:
                result = {"ok": False, "error": {"code": "outcome_unknown", "message": (
                    f"the process running {row.tool} stopped before recording its outcome: whether it changed "
                    "anything is unknown. It was not run again; check the system of record before trying again.")}}
                self._set(cur, row.id, status="outcome_unknown", outcome=canonical_json(result), finished_at=now)
        return [replace(row.proposal(), status="outcome_unknown") for row in rows]

    def approval(self, proposal_id: str) -> Approval | None:
        with self._tx(write=False) as cur:
            row = self._row(cur, proposal_id)
        return None if row is None else row.approval()

    @staticmethod
    def _decided(status: str) -> ApprovalRefused:
        """Why a proposal that is no longer pending cannot be decided or used again."""
        if status == "rejected":
            return ApprovalRefused("rejected")
        if status == "expired":
            return ApprovalRefused("expired")
        if status == "superseded":
            return ApprovalRefused("superseded")
        if status == "approved":
            return ApprovalRefused("used", "the proposal has already been approved")
        if status in _FINISHED:
            return ApprovalRefused("used")
        return ApprovalRefused("not_approved")

    def _decide(self, proposal_id: str, approver: Principal, ttl_s: float, allow_self: bool,
                act: Callable[[Cursor, _ProposalRow, float], _D]) -> _D:
        """``act`` (cursor, locked row, now) once ``approver`` may decide the proposal now; otherwise the
        refusal, raised after the commit, so an expiry is recorded."""
        if not ttl_s > 0:
            raise ValueError("ttl_s must be positive")
        now = self._clock()
        decision: _D | ApprovalRefused
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            refusal = self._check_decidable(row, approver, now, allow_self)
            if refusal is not None or row is None:
                decision = refusal or ApprovalRefused("not_found")
            else:
                decision = act(cur, row, now)
        if isinstance(decision, ApprovalRefused):
            raise decision
        return decision

    def approve(
        self, proposal_id: str, approver: Principal, *, ttl_s: float = 900, allow_self: bool = False
    ) -> Approval:
        def approved(cur: Cursor, row: _ProposalRow, now: float) -> Approval:
            self._set(cur, proposal_id, status="approved", decided_by=approver.user_id,
                      decided_at=now, expires_at=now + ttl_s)
            return Approval(proposal_id, row.hash, approver.user_id, now, now + ttl_s)

        return self._decide(proposal_id, approver, ttl_s, allow_self, approved)

    def edit(
        self,
        proposal_id: str,
        approver: Principal,
        arguments: Mapping[str, Any],
        resource_version: str,
        review: Review,
        *,
        reason: str = "",
        ttl_s: float = 900,
        allow_self: bool = False,
    ) -> tuple[Proposal, Approval]:
        def edited(cur: Cursor, row: _ProposalRow, now: float) -> tuple[Proposal, Approval]:
            old = row.proposal()
            digest = proposal_hash(old.tool, arguments, old.requester, old.tenant, old.policy_version,
                                   resource_version, review)
            new = replace(old, id="prop_" + secrets.token_hex(8), arguments=json.loads(
                canonical_json(dict(arguments))), resource_version=resource_version, hash=digest,
                created_at=now, status="approved", decided_by=approver.user_id, reason=reason, review=review,
                expires_at=now + ttl_s, supersedes=old.id, superseded_by="", pending_until=None)
            self._insert(cur, new)
            self._set(cur, proposal_id, status="superseded", decided_by=approver.user_id, decided_at=now,
                      reason=reason, superseded_by=new.id)
            return new, Approval(new.id, digest, approver.user_id, now, now + ttl_s)

        return self._decide(proposal_id, approver, ttl_s, allow_self, edited)

    def reject(self, proposal_id: str, approver: Principal, reason: str = "") -> None:
        now = self._clock()
        refusal: ApprovalRefused | None = None
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            if row is None:
                refusal = ApprovalRefused("not_found")
            elif approver.tenant != row.tenant:
                refusal = ApprovalRefused("not_an_approver")
            elif row.status not in ("pending", "approved"):
                refusal = self._decided(row.status)
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
        decision: Approval | ApprovalRefused
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            granted = None if row is None else row.approval()
            if row is None:
                decision = ApprovalRefused("not_found")
            elif row.status == "pending":
                decision = ApprovalRefused("not_approved")
            elif row.status != "approved":
                decision = self._decided(row.status)
            elif granted is None or now >= granted.expires_at:  # no recorded expiry counts as expired
                self._set(cur, proposal_id, status="expired")
                decision = ApprovalRefused("expired")
            elif expected_hash != row.hash:
                decision = ApprovalRefused(
                    _mismatch(row.proposal(), tool, arguments, current_resource_version))
            else:
                cur.execute(self._sql("UPDATE toolcrib_proposals SET status = 'executing', used_at = ?"
                                      " WHERE id = ? AND status = 'approved' AND used_at IS NULL"),
                            (now, proposal_id))
                # rowcount != 1 is unreachable while the row lock holds; kept as a guard
                decision = replace(granted, used_at=now) if cur.rowcount == 1 else ApprovalRefused("used")
        if isinstance(decision, ApprovalRefused):  # raised after the commit, so an expiry is recorded
            raise decision
        return decision

    def finish(self, proposal_id: str, status: str, result: Mapping[str, Any]) -> None:
        if status not in OUTCOMES:
            raise ValueError(f"status must be one of {sorted(OUTCOMES)}, not {status!r}")
        result_json = canonical_json(dict(result))
        refusal: ApprovalRefused | None = None
        with self._tx() as cur:
            row = self._row(cur, proposal_id, lock=True)
            if row is None:
                refusal = ApprovalRefused("not_found")
            elif row.status in ("executing", "outcome_unknown"):
                # outcome_unknown may later be reconciled to what really happened
                self._set(cur, proposal_id, status=status, outcome=result_json,
                          finished_at=self._clock())
            elif row.status in ("executed", "failed"):
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
        if row is None:
            return None
        status, result_json = row
        if status not in OUTCOMES or result_json is None:
            return None
        return status, json.loads(result_json)

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
                                  stored.policy_version, stored.resource_version, stored.review) == stored.hash
        return "stale" if same_call else "edited"
    if current_resource_version is not None and current_resource_version != stored.resource_version:
        return "stale"
    return "edited"

"""The seam for where proposals wait for a person and where an approval is claimed exactly once
(``ApprovalStore``); the SQL dialects beside it: ``sqlite``, ``postgres``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any

from toolcrib.policy._connections import Store
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Approval, Proposal, Review

OUTCOMES = frozenset({"executed", "failed", "outcome_unknown"})


class ApprovalStore(Store, ABC):
    """Proposals, the approvals bound to their hashes, and the outcome of each approved call."""

    pending_ttl_s: float = 86_400.0  # a proposal nobody decides on expires after this long

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
        review: Review | None = None,
        pending_ttl_s: float | None = None,
    ) -> Proposal:
        """Store a proposal with what its approver is shown (``review``); the same call, with the same
        provenance, still pending (or approved, unused) returns the existing one. ``pending_ttl_s`` (the
        tool's time-to-live) overrides the store's ``pending_ttl_s`` for this proposal."""

    @abstractmethod
    def get(self, proposal_id: str) -> Proposal | None:
        """The proposal with this id, or None."""

    @abstractmethod
    def pending(self, tenant: str | None = None) -> list[Proposal]:
        """Proposals waiting for a decision, oldest first, optionally for one tenant."""

    @abstractmethod
    def expire_due(self) -> list[Proposal]:
        """Record every pending proposal past its time-to-live as expired, once (whichever process sweeps
        first), and return those this call expired."""

    def changes_between(self, start: float, end: float) -> list[tuple[Proposal, str, float]]:
        """What the store says happened to proposals from ``start`` to ``end`` (store clock, inclusive), as
        ``(proposal, event, when)`` with the audit event each change has: ``proposed``, ``approved``,
        ``rejected``, ``edited`` (for the proposal an edit superseded), ``executed``, ``failed``,
        ``outcome_unknown``. ``ApprovalDesk.reconcile`` checks each against the audit. Default: none."""
        return []

    def abandon_stalled(self, limit_s: Callable[[str], float]) -> list[Proposal]:
        """Record as ``outcome_unknown`` every claimed call still executing longer after its claim than
        ``limit_s(tool)`` (its timeout and a grace): the process running it died before recording an
        outcome, and whether it changed anything is unknown. It never runs again; a late ``finish`` from a
        process that was only slow still records what happened. Returns those this call recorded, once
        (whichever process sweeps first). Default: none."""
        return []

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
        """In one act: record a pending proposal as superseded by the approver's edited call, store that
        call as a new proposal (its own hash, same requester and run) and approve it for ``ttl_s``
        seconds. Refuses exactly what ``approve`` refuses."""

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

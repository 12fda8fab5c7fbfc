"""The approval desk: what an approver is shown and what deciding does, for every front end (``toolcrib
approve``, the service's API and its page). Each decision is checked here (tenant, policy, separation of
duties, the hash the approver saw) and recorded in the audit, whoever asks."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from toolcrib.errors import InvalidArguments, ToolcribError
from toolcrib.policy.audit import Wanted, redact_arguments, redact_changes
from toolcrib.policy.proposals import ApprovalRefused, Proposal, Review, changed_values

if TYPE_CHECKING:
    from toolcrib.policy.principal import Principal
    from toolcrib.tools.gate import Gate
    from toolcrib.tools.tool import Tool
    from toolcrib.workspace import Workspace

MAX_BULK = 100  # proposals decided in one bulk action
STALL_GRACE_S = 2.0  # past a call's timeout, the seconds its process has to record the outcome
RECONCILE_SETTLE_S = 5.0  # a decision's own audit record is appended within this; after it, the sweep may
RECONCILE_LOOKBACK_S = 86_400.0  # how far back a process's first sweep checks


class ApprovalDesk:
    """Pending proposals and decisions on them, over one workspace's stores and policy."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.approvals = ws.approvals()
        self.audit = ws.audit()
        self._reconciled_to: float | None = None  # ``reconcile`` has checked changes up to this time

    def view(self, proposal: Proposal) -> dict[str, Any]:
        """A proposal as its approver sees it: the exact call and its effect, who asked and for what question,
        where each argument came from (an empty list: the model wrote it), warnings, what it is bound to
        (the hash and the resource version) and when it stops being decidable."""
        tool = self.ws.registry.get(proposal.tool)
        approved = proposal.status not in ("pending", "rejected", "superseded")
        expires = proposal.expires_at if approved and proposal.expires_at is not None else (
            proposal.pending_until if proposal.pending_until is not None
            else proposal.created_at + self.approvals.pending_ttl_s)
        status = proposal.status
        if status == "pending" and expires <= time.time():  # shown as expired; the next sweep records it
            status = "expired"
        out = {"id": proposal.id, "tool": proposal.tool, "effect": tool.effect.value if tool else None,
               "arguments": proposal.arguments, "requester": proposal.requester,
               "requester_name": self._name(proposal.requester),
               "tenant": proposal.tenant, "status": status, "decided_by": proposal.decided_by,
               "decided_by_name": self._name(proposal.decided_by) if proposal.decided_by else "",
               "reason": proposal.reason,
               "hash": proposal.hash, "resource_version": proposal.resource_version,
               "policy_version": proposal.policy_version, "run_id": proposal.run_id,
               "created_at": proposal.created_at, "expires_at": expires, "supersedes": proposal.supersedes,
               "superseded_by": proposal.superseded_by, **proposal.review.to_dict()}
        if proposal.superseded_by and (edited := self.approvals.get(proposal.superseded_by)) is not None:
            out["edit"] = {"by": proposal.decided_by, "by_name": self._name(proposal.decided_by),
                           "changes": changed_values(proposal.arguments, edited.arguments),
                           "reason": proposal.reason, "proposal_id": edited.id, "status": edited.status,
                           "arguments": edited.arguments}
        return out

    def _name(self, user: str) -> str:
        users = self.ws.config.users
        return users[user].name if user in users else user

    @cached_property
    def gate(self) -> Gate:
        """The workspace's gate over this desk's stores: it checks an edited call as the requester's call."""
        return self.ws.gate(approvals=self.approvals, audit=self.audit)

    def may_decide(self, proposal: Proposal, approver: Principal) -> bool:
        """Whether ``approver`` could approve ``proposal``: same tenant, the policy lets them approve its
        tool, and (with separation of duties) they did not ask for it."""
        tool = self.ws.registry.get(proposal.tool)
        return (tool is not None and approver.tenant == proposal.tenant and self.ws.policy.may_approve(approver, tool)
                and not (self.ws.config.policy.separation_of_duties and approver.user_id == proposal.requester))

    def pending(self, approver: Principal | None = None) -> list[dict[str, Any]]:
        """Pending proposals, those with a warning first, each part oldest first: all of them (an operator at
        the console), or those ``approver`` may decide on."""
        if approver is None:
            proposals = self.approvals.pending()
        else:
            proposals = [p for p in self.approvals.pending(approver.tenant) if self.may_decide(p, approver)]
        return [self.view(p) for p in sorted(proposals, key=lambda p: not p.review.warnings)]

    def visible(self, proposal_id: str, who: Principal) -> Proposal | None:
        """The proposal, if ``who`` may see it (its requester, or someone who may decide on it); None
        otherwise, exactly as if it did not exist."""
        proposal = self.approvals.get(proposal_id)
        if proposal is None or proposal.tenant != who.tenant:
            return None
        tool = self.ws.registry.get(proposal.tool)
        if proposal.requester == who.user_id or (tool is not None and self.ws.policy.may_approve(who, tool)):
            return proposal
        return None

    def _check(self, proposal: Proposal, approver: Principal, expected_hash: str | None) -> Tool:
        """The proposal's tool, if ``approver`` may decide on it and was shown this very call."""
        tool = self.ws.registry.get(proposal.tool)
        if tool is None or not self.ws.policy.may_approve(approver, tool):
            raise ApprovalRefused("not_an_approver", f"{approver.user_id} may not approve {proposal.tool}")
        if expected_hash is not None and expected_hash != proposal.hash:
            raise ApprovalRefused("stale", "the call shown to you is not this proposal's call; reload it")
        return tool

    def decide(self, proposal_id: str, approver: Principal, *, reject: bool = False, reason: str = "",
               expected_hash: str | None = None) -> dict[str, Any]:
        """Approve (or reject) one proposal as ``approver``; ``expected_hash`` is the hash the approver was
        shown, so a page showing another call cannot approve this one. Refusals raise ``ApprovalRefused``
        (``reason``: not_found, stale, expired, used, rejected, self_approval, not_an_approver) and are audited."""
        proposal = self.approvals.get(proposal_id)
        if proposal is None or proposal.tenant != approver.tenant:
            raise ApprovalRefused("not_found")
        try:
            self._check(proposal, approver, expected_hash)
            if reject:
                self.approvals.reject(proposal_id, approver, reason)
            else:
                approval = self.approvals.approve(proposal_id, approver, ttl_s=self.ws.config.policy.approval_ttl_s,
                                                  allow_self=not self.ws.config.policy.separation_of_duties)
        except ApprovalRefused as refusal:
            self.audit.append("refused", actor=approver.user_id, decided_by="policy", tool=proposal.tool,
                              proposal_id=proposal_id, detail={"reason": refusal.reason, "decision":
                                                               "reject" if reject else "approve"})
            raise
        if reject:
            self.audit.append("rejected", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                              proposal_id=proposal_id, detail={"reason": reason})
            return {"status": "rejected", "proposal_id": proposal_id, "run_id": proposal.run_id,
                    "message": f"Rejected {proposal.tool} ({proposal_id})."}
        self.audit.append("approved", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                          proposal_id=proposal_id, detail={"expires_at": approval.expires_at})
        ttl = self.ws.config.policy.approval_ttl_s
        return {"status": "approved", "proposal_id": proposal_id, "run_id": proposal.run_id,
                "expires_at": approval.expires_at,
                "message": f"Approved {proposal.tool}({json.dumps(proposal.arguments, sort_keys=True)}) as "
                           f"{approver.user_id}; "
                           f"valid for {ttl:g}s, once."}

    def edit(self, proposal_id: str, approver: Principal, changes: Mapping[str, Any], *, reason: str = "",
             expected_hash: str | None = None) -> dict[str, Any]:
        """Change some argument values of a pending proposal and approve the changed call, in one act: the
        changed call becomes a new proposal (its own hash, the approver as the source of the changed values,
        single use) and the original is recorded as superseded. The changed call is checked as the
        requester's call would be (schema, domain check, authorization, envelope); a bad value raises
        ``InvalidArguments``, refusals raise ``ApprovalRefused`` as ``decide`` does, and all are audited."""
        proposal = self.approvals.get(proposal_id)
        if proposal is None or proposal.tenant != approver.tenant:
            raise ApprovalRefused("not_found")
        try:
            tool = self._check(proposal, approver, expected_hash)
            unknown = sorted(set(changes) - set(tool.parameters.get("properties", {})))
            if unknown:
                raise InvalidArguments(f"{tool.name} has no argument {', '.join(unknown)}")
            values, version = self.gate.admit_edit(tool, {**proposal.arguments, **changes},
                                                   self.ws.principal(proposal.requester), self.ws.resources)
            changed = changed_values(proposal.arguments, values)
            if not changed:
                raise InvalidArguments("the edit changes no value; approve the call as it is instead")
            source = [f"approver {approver.user_id}"]
            # the changed values come from the approver; warnings about the values they replaced no longer apply
            review = Review(proposal.review.question, {**proposal.review.provenance, **dict.fromkeys(changed, source)},
                            [w for w in proposal.review.warnings if not any(n in w for n in changed)],
                            proposal.review.checks)
            edited, approval = self.approvals.edit(
                proposal_id, approver, values, version, review, reason=reason,
                ttl_s=self.ws.config.policy.approval_ttl_s,
                allow_self=not self.ws.config.policy.separation_of_duties)
        except ToolcribError as refusal:
            code = refusal.reason if isinstance(refusal, ApprovalRefused) else getattr(refusal, "code", "error")
            self.audit.append("refused", actor=approver.user_id, decided_by="policy", tool=proposal.tool,
                              proposal_id=proposal_id, detail={"reason": code, "decision": "edit"})
            raise
        self.audit.append("edited", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                          proposal_id=proposal_id, detail={"superseded_by": edited.id, "reason": reason,
                                                           "changes": redact_changes(changed, tool.redact)})
        self.audit.append("proposed", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                          proposal_id=edited.id, detail={"arguments": redact_arguments(values, tool.redact),
                                                         "resource_version": version,
                                                         "supersedes": proposal_id, "requester": proposal.requester,
                                                         "provenance": review.provenance})
        self.audit.append("approved", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                          proposal_id=edited.id, detail={"expires_at": approval.expires_at, "supersedes": proposal_id})
        said = ", ".join(f"{k} {json.dumps(v['from'])} -> {json.dumps(v['to'])}" for k, v in changed.items())
        return {"status": "approved", "proposal_id": edited.id, "supersedes": proposal_id,
                "run_id": proposal.run_id, "expires_at": approval.expires_at, "hash": edited.hash,
                "changes": changed, "arguments": values,
                "message": f"Edited ({said}) and approved {proposal.tool}({json.dumps(values, sort_keys=True)}) "
                           f"as {approver.user_id}, in place of {proposal_id}; valid for "
                           f"{self.ws.config.policy.approval_ttl_s:g}s, once."}

    def decide_many(self, decisions: Sequence[tuple[str, str | None]], approver: Principal, *,
                    reject: bool = False, reason: str = "") -> list[dict[str, Any]]:
        """Approve (or reject) several proposals in one action: each ``(proposal_id, expected_hash)`` is
        decided on its own (its own hash, resource version, expiry and audit record); one refusal does not
        stop the others. Each result is ``decide``'s, or ``{"status": "refused", "error": {...}}``."""
        if len(decisions) > MAX_BULK:
            raise InvalidArguments(f"at most {MAX_BULK} proposals in one bulk decision, not {len(decisions)}")
        out: list[dict[str, Any]] = []
        for proposal_id, expected_hash in decisions:
            try:
                out.append(self.decide(proposal_id, approver, reject=reject, reason=reason,
                                       expected_hash=expected_hash))
            except ApprovalRefused as refusal:
                out.append({"status": "refused", "proposal_id": proposal_id,
                            "error": {"code": refusal.code, "reason": refusal.reason, "message": str(refusal)}})
        return out

    def sweep(self) -> list[Proposal]:
        """Record the pending proposals past their time-to-live as expired (each once, audited; the
        webhooks hear of them), so the requester's page and the approvers' list say so; and record as
        ``outcome_unknown`` the approved calls whose process died while running them (see
        ``abandon_stalled``), so their runs resume with that outcome instead of waiting for it."""
        expired = self.approvals.expire_due()
        for proposal in expired:
            self.audit.append("expired", actor="system", decided_by="code", tool=proposal.tool,
                              proposal_id=proposal.id, detail={"requester": proposal.requester})
        for proposal in self.approvals.abandon_stalled(self._stall_limit):
            self.audit.append("outcome_unknown", actor="system", decided_by="code", tool=proposal.tool,
                              proposal_id=proposal.id, detail={"reason": "its process stopped while running it"})
        self.reconcile()
        return expired

    def reconcile(self, now: float | None = None) -> int:
        """Give the audit the records of decisions and outcomes the approval store holds and the audit does
        not: a process killed between committing one and appending its record (they are two databases,
        or two transactions) leaves that gap, and the next sweep of any process closes it, with
        ``detail.recovered`` and the time it happened. Looks at what changed since the last call (the
        first call: the last ``RECONCILE_LOOKBACK_S``) up to ``RECONCILE_SETTLE_S`` ago, so a live
        process's own append is not raced. Returns the records appended."""
        now = time.time() if now is None else now
        end = now - RECONCILE_SETTLE_S
        start = self._reconciled_to if self._reconciled_to is not None else now - RECONCILE_LOOKBACK_S
        if end <= start:
            return 0
        wanted = []
        for proposal, event, when in self.approvals.changes_between(start, end):
            edited = bool(proposal.supersedes)
            if event == "proposed":
                actor, by = (proposal.decided_by, "human") if edited else (proposal.requester, "model")
            elif event in ("approved", "rejected", "edited"):
                actor, by = proposal.decided_by, "human"
            else:
                actor, by = "system", "code"
            wanted.append(Wanted(event, actor, by, proposal.tool, proposal.id, {"recovered": True, "at": when}))
        appended = self.audit.append_missing(wanted)
        self._reconciled_to = end
        return appended

    def _stall_limit(self, name: str) -> float:
        """How long after its claim a call may still be running: its timeout, and a grace for recording."""
        tool = self.ws.registry.get(name)
        return (tool.timeout_s if tool is not None else 60.0) + STALL_GRACE_S

    def close(self) -> None:
        self.approvals.close()
        self.audit.close()

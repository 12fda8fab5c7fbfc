"""The approval desk: what an approver is shown and what deciding does, for every front end (``toolcrib
approve``, the service's API and its page). Each decision is checked here (tenant, policy, separation of
duties, the hash the approver saw) and recorded in the audit, whoever asks."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from toolcrib.policy.proposals import ApprovalRefused, Proposal

if TYPE_CHECKING:
    from toolcrib.policy.principal import Principal
    from toolcrib.workspace import Workspace


class ApprovalDesk:
    """Pending proposals and decisions on them, over one workspace's stores and policy."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.approvals = ws.approvals()
        self.audit = ws.audit()

    def view(self, proposal: Proposal) -> dict[str, Any]:
        """A proposal as its approver sees it: the exact call and its effect, who asked and for what question,
        where each argument came from (an empty list: the model wrote it), warnings, what it is bound to
        (the hash and the resource version) and when it stops being decidable."""
        tool = self.ws.registry.get(proposal.tool)
        users = self.ws.config.users
        approved = proposal.expires_at is not None and proposal.status not in ("pending", "rejected")
        expires = proposal.expires_at if approved else proposal.created_at + self.approvals.pending_ttl_s
        return {"id": proposal.id, "tool": proposal.tool, "effect": tool.effect.value if tool else None,
                "arguments": proposal.arguments, "requester": proposal.requester,
                "requester_name": users[proposal.requester].name if proposal.requester in users else proposal.requester,
                "tenant": proposal.tenant, "status": proposal.status, "decided_by": proposal.decided_by,
                "reason": proposal.reason,
                "hash": proposal.hash, "resource_version": proposal.resource_version,
                "policy_version": proposal.policy_version, "run_id": proposal.run_id,
                "created_at": proposal.created_at, "expires_at": expires, **proposal.review.to_dict()}

    def may_decide(self, proposal: Proposal, approver: Principal) -> bool:
        """Whether ``approver`` could approve ``proposal``: same tenant, the policy lets them approve its
        tool, and (with separation of duties) they did not ask for it."""
        tool = self.ws.registry.get(proposal.tool)
        return (tool is not None and approver.tenant == proposal.tenant and self.ws.policy.may_approve(approver, tool)
                and not (self.ws.config.policy.separation_of_duties and approver.user_id == proposal.requester))

    def pending(self, approver: Principal | None = None) -> list[dict[str, Any]]:
        """Pending proposals, oldest first: all of them (an operator at the console), or those ``approver``
        may decide on."""
        if approver is None:
            return [self.view(p) for p in self.approvals.pending()]
        return [self.view(p) for p in self.approvals.pending(approver.tenant) if self.may_decide(p, approver)]

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

    def decide(self, proposal_id: str, approver: Principal, *, reject: bool = False, reason: str = "",
               expected_hash: str | None = None) -> dict[str, Any]:
        """Approve (or reject) one proposal as ``approver``; ``expected_hash`` is the hash the approver was
        shown, so a page showing another call cannot approve this one. Refusals raise ``ApprovalRefused``
        (``reason``: not_found, stale, expired, used, rejected, self_approval, not_an_approver) and are audited."""
        proposal = self.approvals.get(proposal_id)
        if proposal is None or proposal.tenant != approver.tenant:
            raise ApprovalRefused("not_found")
        try:
            tool = self.ws.registry.get(proposal.tool)
            if tool is None or not self.ws.policy.may_approve(approver, tool):
                raise ApprovalRefused("not_an_approver", f"{approver.user_id} may not approve {proposal.tool}")
            if expected_hash is not None and expected_hash != proposal.hash:
                raise ApprovalRefused("stale", "the call shown to you is not this proposal's call; reload it")
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

    def close(self) -> None:
        self.approvals.close()
        self.audit.close()

"""What an approver does: see pending proposals with their exact call, approve or reject one."""

from __future__ import annotations

from typing import Any

from toolcrib.errors import NotPermitted
from toolcrib.policy.principal import Principal


def list_pending(ws: Any) -> list[dict[str, Any]]:
    return [{"id": p.id, "tool": p.tool, "arguments": p.arguments, "requester": p.requester, "tenant": p.tenant,
             "resource_version": p.resource_version, "run_id": p.run_id} for p in ws.approvals().pending()]


def decide(ws: Any, proposal_id: str, approver: Principal, *, reject: bool = False, reason: str = "") -> dict[str, Any]:
    """Approve or reject one proposal as ``approver``; both are recorded in the audit."""
    store = ws.approvals()
    proposal = store.get(proposal_id)
    if proposal is None:
        raise NotPermitted(f"no proposal '{proposal_id}'")
    tool = ws.registry.get(proposal.tool)
    if tool is None or not ws.policy.may_approve(approver, tool):
        ws.audit().append("refused", actor=approver.user_id, decided_by="policy", tool=proposal.tool,
                          proposal_id=proposal_id, detail={"reason": "not an approver for this tool"})
        raise NotPermitted(f"{approver.user_id} may not approve {proposal.tool}")
    if reject:
        store.reject(proposal_id, approver, reason)
        ws.audit().append("rejected", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                          proposal_id=proposal_id, detail={"reason": reason})
        return {"status": "rejected", "proposal_id": proposal_id,
                "message": f"Rejected {proposal.tool} ({proposal_id})."}
    approval = store.approve(proposal_id, approver, ttl_s=ws.config.policy.approval_ttl_s,
                             allow_self=not ws.config.policy.separation_of_duties)
    ws.audit().append("approved", actor=approver.user_id, decided_by="human", tool=proposal.tool,
                      proposal_id=proposal_id, detail={"expires_at": approval.expires_at})
    resume = f" Resume the run with: toolcrib ask --resume {proposal.run_id}" if proposal.run_id else ""
    return {"status": "approved", "proposal_id": proposal_id, "run_id": proposal.run_id,
            "message": f"Approved {proposal.tool}({proposal.arguments}) as {approver.user_id}; "
                       f"valid for {ws.config.policy.approval_ttl_s:g}s, once.{resume}"}

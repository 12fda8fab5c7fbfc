"""``toolcrib approve``: what an approver does. See pending proposals with their exact call, approve
or reject one; both decisions are recorded in the audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from toolcrib.cli._support import controlled, open_workspace, user_option, workspace_option
from toolcrib.errors import NotPermitted

if TYPE_CHECKING:
    from toolcrib.policy.principal import Principal
    from toolcrib.workspace import Workspace


def list_pending(ws: Workspace) -> list[dict[str, Any]]:
    """Each pending call with what its approver needs: the question behind it, where each argument was
    found (an empty list: the model wrote it) and the warnings."""
    return [{"id": p.id, "tool": p.tool, "arguments": p.arguments, "requester": p.requester, "tenant": p.tenant,
             "resource_version": p.resource_version, "run_id": p.run_id, **p.review.to_dict()}
            for p in ws.approvals().pending()]


def _show(row: dict[str, Any]) -> None:
    click.echo(f"{row['id']}  {row['tool']}({json.dumps(row['arguments'], sort_keys=True)})  "
               f"asked by {row['requester']}  resource version {row['resource_version'] or '-'}")
    if row["question"]:
        click.echo(f"    question: {row['question']!r}")
    for name, value in row["arguments"].items():
        if name in row["provenance"]:
            where = ", ".join(row["provenance"][name]) or "not found in the conversation: the model wrote it"
            click.echo(f"    {name} {json.dumps(value)}: {where}")
    for warning in row["warnings"]:
        click.secho(f"    WARNING: {warning}", fg="yellow")


def decide(ws: Workspace, proposal_id: str, approver: Principal, *, reject: bool = False,
           reason: str = "") -> dict[str, Any]:
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


@click.command("approve")
@click.argument("proposal_id", required=False)
@user_option
@click.option("--reject", is_flag=True, help="Reject instead of approving.")
@click.option("--reason", default="", help="Why (recorded in the audit).")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def approve_cmd(proposal_id: str | None, user: str | None, reject: bool, reason: str, as_json: bool,
                workspace: Path | None) -> None:
    """List pending proposals, or approve (or --reject) one as USER."""
    ws = open_workspace(workspace)
    if proposal_id is None:
        rows = list_pending(ws)
        if as_json:
            click.echo(json.dumps(rows))
            return
        if not rows:
            click.echo("No proposals are waiting for approval.")
        for row in rows:
            _show(row)
        return
    result = decide(ws, proposal_id, ws.principal(user), reject=reject, reason=reason)
    click.echo(json.dumps(result) if as_json else result["message"])

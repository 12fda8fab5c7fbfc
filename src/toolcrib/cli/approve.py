"""``toolcrib approve``: what an approver does. See pending proposals with their exact call, approve
or reject one; both decisions are recorded in the audit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolcrib.cli._support import controlled, open_workspace, user_option, workspace_option


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
    from toolcrib.desk import ApprovalDesk

    ws = open_workspace(workspace)
    desk = ApprovalDesk(ws)
    if proposal_id is None:
        rows = desk.pending()
        if as_json:
            click.echo(json.dumps(rows))
            return
        if not rows:
            click.echo("No proposals are waiting for approval.")
        for row in rows:
            _show(row)
        return
    result = desk.decide(proposal_id, ws.principal(user), reject=reject, reason=reason)
    if result["status"] == "approved" and result["run_id"]:
        result["message"] += f" Resume the run with: toolcrib ask --resume {result['run_id']}"
    click.echo(json.dumps(result) if as_json else result["message"])

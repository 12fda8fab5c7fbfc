"""``toolcrib approve``: what an approver does. See pending proposals with their exact call, approve
or reject one or several, or change argument values and approve the changed call (``--set``); every
decision is recorded in the audit."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from toolcrib.cli._support import controlled, open_workspace, user_option, workspace_option


def _show(row: dict[str, Any], why: bool = False) -> None:
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
    for check in row.get("checks", []) if why else []:
        click.echo(f"    check: {check}")


def _list(rows: list[dict[str, Any]], as_json: bool, why: bool = False) -> None:
    """The proposals waiting for a decision, warned ones first, as JSON or one block each (``why``: with
    the checks that ran, which say why each was or was not warned)."""
    if as_json or not rows:
        click.echo(json.dumps(rows) if as_json else "No proposals are waiting for approval.")
    for row in [] if as_json else rows:
        _show(row, why)


def _changes(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``--set ARG=VALUE`` pairs: VALUE read as JSON when it is JSON (3, true, "3"), else as text."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"{pair!r} is not ARG=VALUE", param_hint="--set")
        try:
            out[name.strip()] = json.loads(text)
        except json.JSONDecodeError:
            out[name.strip()] = text
    return out


@click.command("approve")
@click.argument("proposal_ids", nargs=-1)
@user_option
@click.option("--reject", is_flag=True, help="Reject instead of approving.")
@click.option("--set", "sets", multiple=True, metavar="ARG=VALUE",
              help="Change an argument's value, then approve the changed call (a new proposal; repeatable).")
@click.option("--reason", default="", help="Why (recorded in the audit; the requester and the model see it).")
@click.option("--json", "as_json", is_flag=True)
@click.option("--why", is_flag=True, help="In the list: the checks that ran on each proposal (why it was or was not "
              "warned).")
@workspace_option
@controlled
def approve_cmd(proposal_ids: tuple[str, ...], user: str | None, reject: bool, sets: tuple[str, ...], reason: str,
                as_json: bool, why: bool, workspace: Path | None) -> None:
    """List pending proposals, or approve (or --reject) one or more as USER; --set edits one before approving."""
    from toolcrib.desk import ApprovalDesk

    changes = _changes(sets)
    if changes and (reject or len(proposal_ids) != 1):
        raise click.UsageError("--set edits exactly one proposal, and approves it (not with --reject)")
    ws = open_workspace(workspace)
    desk = ApprovalDesk(ws)
    if not proposal_ids:
        desk.sweep()  # what expired undecided is recorded (and its webhook told) before the list is shown
        _list(desk.pending(), as_json, why)
        return
    approver = ws.principal(user)
    if len(proposal_ids) > 1:
        results = desk.decide_many([(pid, None) for pid in proposal_ids], approver, reject=reject, reason=reason)
        if as_json:
            click.echo(json.dumps(results))
        for r in [] if as_json else results:
            click.echo(r["message"] if r["status"] != "refused" else
                       f"{r['proposal_id']}: refused ({r['error']['reason']}): {r['error']['message']}")
        if any(r["status"] == "refused" for r in results):
            sys.exit(3)
        return
    if changes:
        result = desk.edit(proposal_ids[0], approver, changes, reason=reason)
    else:
        result = desk.decide(proposal_ids[0], approver, reject=reject, reason=reason)
    if result["status"] == "approved" and result["run_id"]:
        result["message"] += f" Resume the run with: toolcrib ask --resume {result['run_id']}"
    click.echo(json.dumps(result) if as_json else result["message"])

"""``toolcrib audit verify`` and ``toolcrib audit show``: the append-only, hash-chained record."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from toolcrib.cli._support import controlled, err, open_workspace, workspace_option


@click.group("audit")
def audit_group() -> None:
    """The append-only, hash-chained audit record."""


@audit_group.command("verify")
@workspace_option
@controlled
def audit_verify(workspace: Path | None) -> None:
    """Check the audit chain; exit 1 if any record was altered or removed."""
    ws = open_workspace(workspace)
    result = ws.audit().verify()
    if result.ok:
        click.echo(f"audit chain OK: {result.count} records")
    else:
        err(f"audit chain BROKEN at record {result.first_bad_seq}: {result.problem}")
        sys.exit(1)


@audit_group.command("show")
@click.option("--limit", default=20)
@workspace_option
@controlled
def audit_show(limit: int, workspace: Path | None) -> None:
    """Print the most recent audit records."""
    ws = open_workspace(workspace)
    records = list(ws.audit().records())[-limit:]
    for r in records:
        line = f"{r.seq:>5} {r.event:<16} {r.tool:<24} actor={r.actor:<10} by={r.decided_by:<7} {r.proposal_id}"
        if r.event == "edited":  # what the approver changed, and the proposal that replaced this one
            changes = ", ".join(f"{k} {json.dumps(c['from'])} -> {json.dumps(c['to'])}"
                                for k, c in (r.detail.get("changes") or {}).items())
            line += f" superseded by {r.detail.get('superseded_by', '')}: {changes}"
        click.echo(line)

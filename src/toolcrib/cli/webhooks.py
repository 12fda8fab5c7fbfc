"""``toolcrib webhooks log``: every delivery attempt of the workspace's proposal webhooks."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.group("webhooks")
def webhooks_group() -> None:
    """Webhooks on proposal events ([[webhooks]] in toolcrib.toml)."""


@webhooks_group.command("log")
@click.option("--limit", default=20, help="The most recent attempts to show.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per attempt.")
@workspace_option
@controlled
def webhooks_log(limit: int, as_json: bool, workspace: Path | None) -> None:
    """Print the most recent delivery attempts: event, receiver, attempt, HTTP status or error."""
    entries = list(open_workspace(workspace).webhook_log.entries())[-limit:]
    if not entries and not as_json:
        click.echo("No webhook deliveries yet.")
    for e in entries:
        if as_json:
            click.echo(json.dumps(e, sort_keys=True))
            continue
        outcome = "ok" if e["ok"] else "refused" if e.get("status") else "failed"
        click.echo(f"{e['delivery_id']} {e['event']:<18} attempt {e['attempt']} {outcome:<7} "
                   f"{e.get('status') or e.get('error', '')}  {e['url']}  {e['proposal_id']}")

"""``toolcrib stats``: what the recorded runs did, per day and per tool."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.command("stats")
@click.option("--days", type=int, default=None, help="Only the last N days.")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def stats_cmd(days: int | None, as_json: bool, workspace: Path | None) -> None:
    """Per day and per tool: tool calls vs direct answers, refusals, approvals, errors, latency."""
    from toolcrib.evals.stats import collect, render
    from toolcrib.trace.journal import trace_files

    ws = open_workspace(workspace)
    files = trace_files(ws.traces_dir)  # a file per trace, and the service's journals
    stats = collect(files, days=days)
    click.echo(json.dumps(stats, ensure_ascii=False) if as_json else render(stats))

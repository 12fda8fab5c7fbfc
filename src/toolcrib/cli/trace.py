"""``toolcrib trace``: print a recorded run (how each step looks is ``_render.render_trace``'s job)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.command("trace")
@click.argument("trace_id", required=False)
@click.option("--last", is_flag=True, help="Show the most recent run.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw steps as JSON lines.")
@workspace_option
@controlled
def trace_cmd(trace_id: str | None, last: bool, as_json: bool, workspace: Path | None) -> None:
    """Print a recorded run as a readable timeline."""
    from toolcrib.cli._render import render_events
    from toolcrib.errors import ConfigError
    from toolcrib.trace.events import Event
    from toolcrib.trace.journal import last_trace, trace_lines

    ws = open_workspace(workspace)
    if last or not trace_id:
        trace_id = last_trace(ws.traces_dir)
        if trace_id is None:
            raise ConfigError("no recorded runs yet; run `toolcrib ask` first", file=str(ws.traces_dir))
    lines = trace_lines(ws.traces_dir, trace_id)  # its own file, or its lines in the service's journals
    if not lines:
        raise ConfigError(f"no trace '{trace_id}'", file=str(ws.traces_dir))
    if as_json:
        click.echo(b"".join(line + b"\n" for line in lines).decode("utf-8"), nl=False)
    else:
        render_events([Event.from_dict(json.loads(line)) for line in lines])

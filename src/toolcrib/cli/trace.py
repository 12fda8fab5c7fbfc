"""``toolcrib trace``: print a recorded run (how each step looks is ``_render.render_trace``'s job)."""

from __future__ import annotations

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
    from toolcrib.cli._render import render_trace
    from toolcrib.errors import ConfigError

    ws = open_workspace(workspace)
    files = sorted(ws.traces_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if ws.traces_dir.exists() else []
    if last or not trace_id:
        if not files:
            raise ConfigError("no recorded runs yet; run `toolcrib ask` first", file=str(ws.traces_dir))
        path = files[-1]
    else:
        path = ws.traces_dir / f"{Path(trace_id).name}.jsonl"
        if not path.exists():
            raise ConfigError(f"no trace '{trace_id}'", file=str(ws.traces_dir))
    if as_json:
        click.echo(path.read_text(encoding="utf-8"), nl=False)
    else:
        render_trace(path)

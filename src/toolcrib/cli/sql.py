"""``toolcrib sql``: a query through the same gate and read-only SQL tool the model uses."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from toolcrib.cli._support import controlled, err, open_workspace, user_option, workspace_option


@click.command("sql")
@click.argument("query")
@click.option("--param", "params", multiple=True, help="A parameter value (repeatable), bound to ? placeholders.")
@user_option
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def sql_cmd(query: str, params: tuple[str, ...], user: str | None, as_json: bool, workspace: Path | None) -> None:
    """Run QUERY through the same gate and read-only SQL tool the model uses."""
    import asyncio

    from toolcrib.models.base import ToolCall
    from toolcrib.tools.context import CallContext
    from toolcrib.tools.grounding import Grounding

    ws = open_workspace(workspace)
    principal = ws.principal(user)
    call = ToolCall(id="cli", name="sql_query", arguments={"query": query, "params": list(params)})
    tracer = ws.tracer_factory()()
    outcome = asyncio.run(ws.gate().run(call, CallContext(principal, tracer, Grounding(query), ws.resources)))
    tracer.close()
    if as_json:
        click.echo(json.dumps(outcome.payload, ensure_ascii=False))
    elif outcome.ok:
        from toolcrib.cli._render import render_rows

        render_rows(outcome.payload["data"])
    else:
        err(f"{outcome.payload['error']['code']}: {outcome.payload['error']['message']}")
    if not outcome.ok:
        sys.exit(3)

"""``toolcrib tools``: what a user is offered, with each tool's effect class, and the builtins that are not
offered here, with why (no search provider, no working sandbox)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolcrib.cli._render import shorten
from toolcrib.cli._support import controlled, open_workspace, user_option, workspace_option


@click.command("tools")
@user_option
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def tools_cmd(user: str | None, as_json: bool, workspace: Path | None) -> None:
    """List the tools offered to a user, with their effect class."""
    ws = open_workspace(workspace)
    principal = ws.principal(user)
    offered = ws.registry.offer(principal, ws.policy).tools
    if as_json:
        click.echo(json.dumps([{"name": t.name, "effect": t.effect.value, "description": t.description,
                                "parameters": t.parameters} for t in offered]))
        return
    click.echo(f"Tools offered to {principal.user_id} (groups: {', '.join(sorted(principal.groups)) or '-'}):")
    for t in offered:
        needs = "  (needs approval)" if t.effect.value != "read" else ""
        click.echo(f"  {t.name:<26} {t.effect.value.upper():<8} {shorten(t.description.split('. ')[0], 70)}{needs}")
    missing = dict(ws.unavailable)
    for name in _OPTIONAL_BUILTINS:
        if name not in ws.config.tools.builtin:
            missing[name] = "not enabled: add it to [tools] builtin"
    if missing:
        click.echo("Not offered here:")
        for name, why in missing.items():
            click.echo(f"  {name:<26} {why}")


# Builtins a workspace turns on when it has what they need (a search provider, a working sandbox).
_OPTIONAL_BUILTINS = ("web_search", "code_interpreter")

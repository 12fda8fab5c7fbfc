"""``toolcrib doctor``: check a workspace, one line per check, exit 1 when something must be fixed."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from toolcrib.cli._support import controlled, workspace_option


@click.command("doctor")
@workspace_option
@controlled
def doctor_cmd(workspace: Path | None) -> None:
    """Check a workspace: config, model, database, tools, index, users, and the service's keys and
    webhooks where configured. Prints ok or what to fix per check; exits 1 when something must be fixed."""
    from toolcrib.workspace.doctor import diagnose
    from toolcrib.workspace.locate import resolve_workspace

    root = workspace.expanduser().resolve() if workspace is not None else resolve_workspace(None)
    failed = False
    for check in diagnose(root):
        failed = failed or not check.ok
        click.secho(check.line(), fg=None if check.ok else "red")
    if failed:
        sys.exit(1)

"""``toolcrib warm``: do a workspace's one-time work now, so its first question answers in seconds."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option

if TYPE_CHECKING:
    from toolcrib.agent.runner import Mode


@click.command("warm")
@click.option("--model", "-m", "model_spec", default=None, help="Model spec (default: the workspace's).")
@click.option("--user", "-u", "users", multiple=True,
              help="Prepare the offers of this user (repeatable; default: the workspace's default user).")
@click.option("--all-users", is_flag=True, help="Prepare the offers of every configured user.")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["single", "loop"]),
              help="Prepare for this mode (repeatable; default: the workspace's mode).")
@click.option("--json", "as_json", is_flag=True, help="Print what was done as one JSON object.")
@workspace_option
@controlled
def warm_cmd(model_spec: str | None, users: tuple[str, ...], all_users: bool, modes: tuple[Mode, ...],
             as_json: bool, workspace: Path | None) -> None:
    """Build the document index, assemble and load the model, and evaluate into the model's prompt cache
    the instructions and tool lists the chosen users' questions usually start with. Set-up runs it."""
    from toolcrib.cli._progress import prepare_model

    started = time.perf_counter()
    ws = open_workspace(workspace)
    model = prepare_model(ws, model_spec, quiet=as_json)
    ready_s = time.perf_counter() - started
    names = list(ws.config.users) if all_users else list(users) or [ws.principal().user_id]
    runner = ws.runner(model)
    chosen = list(modes) or [runner.settings.mode]
    try:
        prompts_ms = sum(runner.warm(ws.principal(name), mode=mode) for mode in chosen for name in names)
    finally:
        runner.gate.close()
    report = {"users": names, "modes": chosen, "index_and_model_s": round(ready_s, 1),
              "prompt_cache_s": round(prompts_ms / 1000, 1)}
    if as_json:
        click.echo(json.dumps(report))
        return
    click.echo(f"warm: index and model ready in {report['index_and_model_s']} s; prompt cache for "
               f"{', '.join(names)} ({', '.join(chosen)}) ready in {report['prompt_cache_s']} s", err=True)

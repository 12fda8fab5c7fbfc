"""``toolcrib serve``: the HTTP API and the approvals page over a workspace."""

from __future__ import annotations

import os
from pathlib import Path

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=int, help="Port to listen on.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Server processes. More than one needs [policy] dsn (PostgreSQL) to share state.")
@click.option("--model", "-m", "model_spec", default=None, help="Model spec (default: the workspace's).")
@workspace_option
@controlled
def serve_cmd(host: str, port: int, workers: int, model_spec: str | None, workspace: Path | None) -> None:
    """Serve the workspace: POST /v1/ask, run streams, approvals, and the page at /."""
    try:
        import uvicorn
    except ImportError:
        from toolcrib.errors import MissingDependency

        raise MissingDependency("toolcrib serve", "server") from None
    from toolcrib.errors import ConfigError
    from toolcrib.service.app import MODEL_ENV

    ws = open_workspace(workspace)  # checks the config before any process starts
    if workers > 1 and not ws.policy_dsn:
        raise ConfigError("--workers above 1 needs [policy] dsn (PostgreSQL): proposals, runs and rate limits "
                          "must be shared between the processes", file=ws.config_file, key="policy.dsn")
    os.environ["TOOLCRIB_WORKSPACE"] = str(ws.root)
    if model_spec:
        os.environ[MODEL_ENV] = model_spec
    click.echo(f"toolcrib: serving {ws.config.workspace.name} on http://{host}:{port}/ ({workers} process"
               f"{'es' if workers > 1 else ''}); create a key with `toolcrib token create USER`", err=True)
    uvicorn.run("toolcrib.service.app:app_from_env", factory=True, host=host, port=port, workers=workers,
                log_level="warning", access_log=False)

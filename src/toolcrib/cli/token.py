"""``toolcrib token``: API keys for the service, one or more per workspace user."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.group("token")
def token_group() -> None:
    """Create, list and revoke the service's API keys."""


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC") if ts else "-"


@token_group.command("create")
@click.argument("user")
@click.option("--label", default="", help="What the key is for (shown by `token list`).")
@workspace_option
@controlled
def create_cmd(user: str, label: str, workspace: Path | None) -> None:
    """Create a key for USER and print it once (only its hash is kept)."""
    from toolcrib.auth.credentials import service_store

    ws = open_workspace(workspace)
    ws.principal(user)  # an unknown user is a ConfigError naming the configured ones
    store = service_store(ws)
    try:
        info, key = store.create_key(user, label)
    finally:
        store.close()
    click.echo(key)
    click.echo(f"key {info.id} for {user}: shown once, keep it secret; revoke with `toolcrib token revoke {info.id}`",
               err=True)


@token_group.command("list")
@click.option("--user", "-u", default=None, help="Only this user's keys.")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def list_cmd(user: str | None, as_json: bool, workspace: Path | None) -> None:
    """List keys (ids, users, labels, dates; never the keys)."""
    from toolcrib.auth.credentials import service_store

    store = service_store(open_workspace(workspace))
    try:
        keys = store.keys(user)
    finally:
        store.close()
    if as_json:
        click.echo(json.dumps([k.to_dict() for k in keys]))
        return
    if not keys:
        click.echo("No keys; create one with `toolcrib token create USER`.")
    for k in keys:
        state = f"revoked {_when(k.revoked_at)}" if k.revoked_at else "active"
        click.echo(f"{k.id}  {k.user:<12} {state:<28} created {_when(k.created_at)}  {k.label}")


@token_group.command("revoke")
@click.argument("key_id")
@workspace_option
@controlled
def revoke_cmd(key_id: str, workspace: Path | None) -> None:
    """Revoke the key with id KEY_ID (from `token list`); it stops working at once."""
    from toolcrib.auth.credentials import service_store
    from toolcrib.errors import ConfigError

    store = service_store(open_workspace(workspace))
    try:
        if not store.revoke(key_id):
            raise ConfigError(f"no active key with id '{key_id}' (see `toolcrib token list`)")
    finally:
        store.close()
    click.echo(f"Revoked key {key_id}.")

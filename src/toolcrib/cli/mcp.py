"""``toolcrib mcp``: serve a workspace's tools to MCP clients, and look after the MCP servers it uses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.group("mcp")
def mcp_group() -> None:
    """MCP both ways: `serve` the workspace's tools; `list` and `trust` the MCP servers it uses."""


def _need_sdk() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError:
        from toolcrib.errors import MissingDependency

        raise MissingDependency("toolcrib mcp", "mcp") from None


@mcp_group.command("serve")
@click.option("--user", "-u", default=None,
              help="Over stdio: the user every call acts for (default: the workspace's default user).")
@click.option("--http", "port", type=int, default=None,
              help="Serve streamable HTTP on this port at /mcp instead of stdio; each request's bearer key "
                   "(`toolcrib token create USER`) or JWT decides the user.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on with --http.")
@workspace_option
@controlled
def serve_cmd(user: str | None, port: int | None, host: str, workspace: Path | None) -> None:
    """Offer the workspace's tools to an MCP client, every call through toolcrib's gate."""
    _need_sdk()
    import anyio

    from toolcrib.mcp_server import ToolcribMCP, http_app, serve_stdio

    ws = open_workspace(workspace)
    if port is None:
        mcp = ToolcribMCP(ws, user=user)
        _ = ws.registry, ws.resources  # list MCP servers, build the database: before the first call, not in it
        anyio.run(serve_stdio, mcp)
        return
    if user is not None:
        raise click.UsageError("--user is for stdio; over HTTP the bearer credential names the user")
    import uvicorn

    from toolcrib.auth.credentials import Authenticator, JWTVerifier, service_store

    jwt = ws.config.service.jwt
    auth = Authenticator(ws, service_store(ws), JWTVerifier(jwt, ws.root) if jwt else None)
    mcp = ToolcribMCP(ws, auth=auth)
    _ = ws.registry, ws.resources
    click.echo(f"toolcrib: MCP over streamable HTTP at http://{host}:{port}/mcp ({ws.config.workspace.name}); "
               "create a key with `toolcrib token create USER`", err=True)
    uvicorn.run(http_app(mcp, host), host=host, port=port, log_level="warning", access_log=False)


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


@mcp_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def list_cmd(as_json: bool, workspace: Path | None) -> None:
    """The MCP servers in [mcp.servers], their tools, effect classes and pin state."""
    _need_sdk()
    from toolcrib.mcp.client import load_mcp_tools

    ws = open_workspace(workspace)
    tools = load_mcp_tools(ws.config.mcp, ws.root, ws.state_dir, pin_new=False)
    rows: list[dict[str, Any]] = [
        {"server": s.name, "where": s.where, "error": s.error,
         "tools": [{"name": t.name, "effect": t.effect.value, "state": t.state, "reason": t.reason,
                    "pinned_by": t.pin.by if t.pin else None} for t in s.tools]}
        for s in tools.servers]
    if as_json:
        click.echo(json.dumps(rows))
        return
    if not rows:
        click.echo("No MCP servers are configured ([mcp.servers.NAME] in toolcrib.toml).")
    for row in rows:
        click.echo(f"{row['server']}  {row['where']}" + (f"  DOWN: {row['error']}" if row["error"] else ""))
        for t in row["tools"]:
            state = {"pinned": f"pinned ({t['pinned_by']})", "new": "new (pinned on its first use)"}.get(t["state"],
                                                                                                     "DISABLED")
            click.echo(f"    {t['name']:<40} {t['effect']:<8} {state}")
            if t["reason"]:
                click.secho(f"        {t['reason']}", fg="yellow")


@mcp_group.command("trust")
@click.argument("server")
@click.option("--yes", "-y", is_flag=True, help="Store the new pins without asking.")
@workspace_option
@controlled
def trust_cmd(server: str, yes: bool, workspace: Path | None) -> None:
    """Show how SERVER's tools differ from their pins, then pin them as they are now."""
    _need_sdk()
    from toolcrib.errors import ConfigError
    from toolcrib.mcp.client import list_servers, pin_store
    from toolcrib.mcp.pins import Pin, difference

    ws = open_workspace(workspace)
    if server not in ws.config.mcp.servers:
        raise ConfigError(f"no MCP server named '{server}'; configured: {', '.join(ws.config.mcp.servers) or 'none'}",
                          file=ws.config_file, key="mcp.servers")
    listed = list_servers(ws.config.mcp, ws.root, ws.state_dir)[server]
    if isinstance(listed, str):
        raise ConfigError(f"MCP server '{server}' {listed}; nothing was trusted", key=f"mcp.servers.{server}")
    store = pin_store(ws.state_dir)
    pins = store.pins(server)
    now = {t.name: t.definition for t in listed}
    changes = 0
    for name in sorted(set(pins) | set(now)):
        old = pins[name].definition if name in pins else None
        if old == now.get(name) and pins[name].by == "operator":
            continue
        changes += 1
        what = "new" if old is None else "removed" if name not in now else "changed" if old != now[name] else "kept"
        click.echo(f"{server}.{name}: {what}" + (f" (pinned {_when(pins[name].pinned_at)} on {pins[name].by})"
                                                 if name in pins else ""))
        diff = difference(old, now.get(name))
        if diff:
            click.echo(diff)
    if not changes:
        click.echo(f"{server}: every tool is pinned by an operator as it is now; nothing to do.")
        return
    if not yes and not click.confirm(f"Trust {server}'s {len(now)} tools as shown?", default=False):
        click.echo("Nothing was trusted.")
        return
    store.replace(server, {name: Pin.of(definition, "operator") for name, definition in now.items()})
    click.echo(f"{server}: {len(now)} tools pinned as they are now; they are offered again where the policy says so.")

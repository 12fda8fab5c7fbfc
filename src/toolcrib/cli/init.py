"""``toolcrib init``: a commented starter workspace a developer can edit."""

from __future__ import annotations

from pathlib import Path

import click

from toolcrib.cli._support import controlled
from toolcrib.errors import ConfigError

STARTER_TOML = '''# toolcrib workspace. Every key is optional unless marked; `toolcrib tools -w .` checks it.

[workspace]
name = "My assistant"
require_evidence = true        # answers must rest on a tool result or a retrieved passage
mode = "single"                # "single": one tool call per question (level 4); "loop": bounded ReAct
# default_user = "me"

[model]
spec = "local"                 # "local" (embedded), "openai:MODEL", "scripted:FILE", "dry:MODEL"
max_tokens = 400
[model.settings]               # passed to the backend, e.g. n_threads for "local", base_url for "openai"
n_threads = 2

[tools]
modules = ["tools.py"]         # Python files whose module-level @tool objects are registered
builtin = []                   # "vector_search" (documents) and/or "sql_query" (read-only SQL)
# offer_only_groundable = true  # offer a tool only once the request names its required Identifier

[data]
# database = "data/app.sqlite" # a SQLite file; built from data/seed.sql beside it when missing
# documents = "docs"           # what `toolcrib ingest` reads by default

[sql]
allowed_tables = []            # the only tables sql_query may read

[limits]                       # a run stops, with a clear message, at the first limit it reaches
rounds = 5
tool_calls = 8
wall_s = 180
tokens = 32000

[paths]
state = ".toolcrib"            # traces, index, approvals and the audit record live here

[policy]
separation_of_duties = true    # an approver may not approve their own request
approval_ttl_s = 900           # an approval expires after this many seconds
proposal_ttl_s = 86400         # a proposal nobody decides on expires after this many seconds
# [policy.proposal_ttl]        # per tool: reserve_stock = 600
# [[webhooks]]                 # proposal created/decided/expired, signed: see docs/concepts/approvals.md
# url = "https://chat.example.com/hooks/approvals"
# secret_env = "TOOLCRIB_WEBHOOK_SECRET"

[groups.staff]                 # which tools each group is offered ("*" = all) and may approve
tools = ["echo_time"]
approve = []

[users.me]                     # users and their groups; the CLI picks one with --user
name = "Me"
tenant = "default"
groups = ["staff"]
'''

STARTER_TOOLS = '''"""Tools for this workspace. Each @tool function is offered to the model by name."""

from datetime import datetime, timezone

from toolcrib import Effect, tool


@tool(effect=Effect.READ)
def echo_time() -> dict:
    """Return the current UTC time. Use it when the user asks what time it is."""
    return {"utc": datetime.now(timezone.utc).isoformat(timespec="seconds")}
'''


def create_starter(path: Path) -> None:
    """Write toolcrib.toml and tools.py into ``path``; refuse to overwrite an existing workspace."""
    config = path / "toolcrib.toml"
    if config.exists():
        raise ConfigError("a workspace already exists here; not overwriting it", file=str(config))
    path.mkdir(parents=True, exist_ok=True)
    config.write_text(STARTER_TOML, encoding="utf-8")
    tools = path / "tools.py"
    if not tools.exists():
        tools.write_text(STARTER_TOOLS, encoding="utf-8")


def copy_template(name: str, path: Path) -> None:
    """Copy a shipped workspace (``demo``, ``clinic``) into ``path``; refuse to overwrite a workspace."""
    import shutil

    from toolcrib.workspace.locate import NOT_COPIED, template_source

    source = template_source(name)
    if (path / "toolcrib.toml").exists():
        raise ConfigError("a workspace already exists here; not overwriting it", file=str(path / "toolcrib.toml"))
    shutil.copytree(source, path, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__init__.py", *NOT_COPIED))


@click.command("init")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--template", default=None, metavar="NAME",
              help="Start from a shipped workspace instead of the bare starter: demo or clinic.")
@controlled
def init_cmd(path: Path, template: str | None) -> None:
    """Create a workspace at PATH: a commented starter, or a copy of a shipped one (--template)."""
    if template:
        copy_template(template, path)
    else:
        create_starter(path)
    click.echo(f"Created a {template + ' ' if template else 'starter '}workspace in {path}. "
               f"Try: toolcrib tools --workspace {path}")

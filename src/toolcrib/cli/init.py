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
@click.option("--database", default=None, metavar="FILE|DSN",
              help="Make the workspace from this SQLite file or postgresql:// database: the SQL tool over its "
                   "tables and a lookup per table.")
@click.option("--documents", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="Make the workspace search the documents under DIR (ingested now).")
@click.option("--leave-out", multiple=True, metavar="TABLE",
              help="A table no tool may read (repeatable).")
@click.option("--groups-from-folders", is_flag=True,
              help="The documents' first-level folders become access groups: docs/vets/ is read by 'vets'.")
@click.option("--model", "model", default="local", show_default=True, metavar="SPEC",
              help="The model spec [model] spec gets (with --database/--documents).")
@click.option("--no-ingest", is_flag=True, help="Do not index the documents now (the first search will).")
@controlled
def init_cmd(path: Path, template: str | None, database: str | None, documents: Path | None,
             leave_out: tuple[str, ...], groups_from_folders: bool, model: str, no_ingest: bool) -> None:
    """Create a workspace at PATH: a commented starter, a copy of a shipped one (--template), or one made
    from your own database and documents (--database, --documents)."""
    if database is not None or documents is not None:
        if template:
            raise ConfigError("--template and --database/--documents make different workspaces; give one")
        from_data(path, database, documents, leave_out, groups_from_folders, model=model, ingest=not no_ingest)
        return
    if leave_out or groups_from_folders:
        raise ConfigError("--leave-out and --groups-from-folders go with --database/--documents")
    if template:
        copy_template(template, path)
    else:
        create_starter(path)
    click.echo(f"Created a {template + ' ' if template else 'starter '}workspace in {path}. "
               f"Try: toolcrib tools --workspace {path}")


def from_data(path: Path, database: str | None, documents: Path | None, leave_out: tuple[str, ...],
              groups_from_folders: bool, *, model: str, ingest: bool) -> None:
    """``init --database/--documents``: plan, write, and index the documents."""
    from toolcrib.workspace import Workspace
    from toolcrib.workspace.generate import create_from_data, plan

    p = plan(path, database, documents, leave_out, groups_from_folders)
    created = not path.exists()
    config = create_from_data(path, p, model=model)
    try:
        ws = Workspace.open(path)
        lookups = [t.name for t in ws.registry if t.name.startswith("lookup_")]  # opens the database
    except Exception:
        for file in (config, path / ".gitignore", *([path] if created else [])):  # leave nothing half made
            file.rmdir() if file.is_dir() else file.unlink(missing_ok=True)
        raise
    click.echo(f"Created a workspace in {path} from your data: {len(p.tables)} tables, "
               f"{len(lookups)} lookup tools" + (f", access groups {', '.join(p.folders)}" if p.folders else "") + ".")
    if p.documents is not None and ingest:
        report = ws.ingest()
        click.echo(f"Indexed {p.documents}: {report.summary()}")
    click.echo(f"Check it: toolcrib doctor --workspace {path}; ask: toolcrib ask -w {path} \"...\"")

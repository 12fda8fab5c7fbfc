"""The workspace's tools, assembled from its configuration: its Python tools modules, the builtins that
can work here (``unavailable`` says why not), what ``[tools]`` declares of each tool's provenance, and the
checks that every tool the configuration names exists."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from toolcrib.config import CodeInterpreterSection, WebSearchSection, WorkspaceConfig
from toolcrib.errors import ConfigError
from toolcrib.tools.tool import Tool

if TYPE_CHECKING:
    from toolcrib.sandbox import Sandbox
    from toolcrib.sql.base import ReadOnlySQL


def load_module(path: Path) -> ModuleType:
    """A workspace's Python file (a tools module, a policy rule), imported once per process."""
    name = "toolcrib_ws_" + hashlib.sha256(str(path).encode()).hexdigest()[:10] + "_" + path.stem
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError("cannot import this file as a Python module", file=str(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"importing the tools module failed: {type(exc).__name__}: {exc}", file=str(path)) from None
    return module
    return module


def module_tools(root: Path, config: WorkspaceConfig, config_file: str) -> list[Tool]:
    """The tools defined in the workspace's ``[tools] modules``."""
    found: list[Tool] = []
    for module_path in config.tools.modules:
        path = root / module_path
        if not path.exists():
            raise ConfigError(f"tools module {module_path} does not exist", file=config_file, key="tools.modules")
        found.extend(value for value in vars(load_module(path)).values() if isinstance(value, Tool))
    return found


def configured_names(config: WorkspaceConfig) -> set[str]:
    """Every tool name the configuration mentions (groups and ``[tools]`` declarations)."""
    cfg = config.tools
    return ({n for s in config.groups.values() for n in [*s.tools, *s.approve]} | set(cfg.untrusted)
            | set(cfg.trusted) | set(cfg.sensitive) | set(cfg.egress) | set(cfg.intent))


def check_names(config: WorkspaceConfig, defined: Iterable[str], config_file: str) -> None:
    """Every tool the configuration names is ``defined`` (or belongs to a configured MCP server, which may
    be down now), and none is declared both trusted and untrusted."""
    servers = config.mcp.servers
    known = set(defined) | {n for n in configured_names(config) if n.split(".")[0] in servers}
    for group, section in config.groups.items():
        for tool_name in [*section.tools, *section.approve]:
            if tool_name != "*" and tool_name not in known:
                raise ConfigError(f"tool '{tool_name}' is not defined by any tools module or builtin",
                                  file=config_file, key=f"groups.{group}")
    cfg = config.tools
    both = sorted(set(cfg.untrusted) & set(cfg.trusted))
    if both:
        raise ConfigError(f"{', '.join(both)} cannot be both trusted and untrusted", file=config_file,
                          key="tools.trusted")
    for key, names in (("untrusted", cfg.untrusted), ("trusted", cfg.trusted), ("sensitive", cfg.sensitive),
                       ("egress", cfg.egress),
                       ("intent", cfg.intent), ("untrusted_fields", cfg.untrusted_fields)):
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ConfigError(f"no tool named {', '.join(unknown)}", file=config_file, key=f"tools.{key}")


def with_provenance(tool: Tool, config: WorkspaceConfig, config_file: str) -> Tool:
    """``tool`` with what ``[tools]`` declares about where its results and arguments come from."""
    cfg = config.tools
    changes: dict[str, Any] = {}
    if tool.name in cfg.untrusted:
        changes["trusted"] = False
    if tool.name in cfg.trusted:
        changes.update(trusted=True, trust_declared=True)
    for key, declared in (("sensitive", cfg.sensitive), ("egress", cfg.egress), ("intent", cfg.intent),
                          ("untrusted_fields", cfg.untrusted_fields)):
        if tool.name in declared:
            changes[key] = tuple(declared[tool.name])
    if not changes:
        return tool
    try:
        return dataclasses.replace(tool, **changes)  # the Tool checks the arguments named exist
    except ConfigError as exc:
        raise ConfigError(exc.message, file=config_file, key="tools") from None


def web_search_key_env(cfg: WebSearchSection) -> str | None:
    from toolcrib.websearch.providers import DEFAULT_KEY_ENV

    return cfg.key_env or (DEFAULT_KEY_ENV.get(cfg.provider) if cfg.provider else None)


def web_search_unavailable(cfg: WebSearchSection) -> str | None:
    """Why ``web_search`` cannot be offered (no provider, or its key not set), or None."""
    if cfg.provider is None:
        return ("no search provider is configured: set [web_search] provider (brave, tavily or searxng), "
                "so questions about current public data are answered \"I can't reach current data from here\"")
    env = web_search_key_env(cfg)
    if env and not os.environ.get(env):
        return f"the environment variable {env} ([web_search] key_env) with the {cfg.provider} API key is not set"
    return None


def web_search_tool(cfg: WebSearchSection) -> Tool:
    from toolcrib.websearch.providers import PROVIDERS
    from toolcrib.websearch.tool import make_web_search_tool

    assert cfg.provider is not None  # checked by web_search_unavailable
    env = web_search_key_env(cfg)
    provider = PROVIDERS[cfg.provider](cfg.endpoint, api_key=os.environ.get(env) if env else None,
                                       timeout_s=cfg.timeout_s)
    return make_web_search_tool(provider, max_results=cfg.max_results, timeout_s=cfg.timeout_s)


def sandbox_for(cfg: CodeInterpreterSection) -> Sandbox:
    """The bubblewrap sandbox of ``code_interpreter``, with the ``[code_interpreter]`` limits."""
    from toolcrib.sandbox import Sandbox, SandboxLimits

    limits = SandboxLimits(cpu_s=cfg.cpu_s, wall_s=cfg.wall_s, memory_mb=cfg.memory_mb, processes=cfg.processes,
                           output_bytes=cfg.output_kb * 1024, scratch_mb=cfg.scratch_mb, max_files=cfg.max_files)
    return Sandbox(limits, python=cfg.python)


def read_only_sql(config: WorkspaceConfig, database: Path | None, config_file: str) -> ReadOnlySQL:
    """The SQL guard of ``sql_query``: PostgreSQL on ``[sql] dsn``, else the workspace's SQLite file."""
    cfg = config.sql
    if cfg.dsn:
        from toolcrib.sql import PostgresReadOnly

        return PostgresReadOnly(cfg.dsn, cfg.allowed_tables, row_cap=cfg.row_cap, timeout_s=cfg.timeout_s)
    from toolcrib.sql import SQLiteReadOnly

    if database is None:
        raise ConfigError("sql_query needs data.database or sql.dsn", file=config_file, key="sql")
    return SQLiteReadOnly(database, cfg.allowed_tables, row_cap=cfg.row_cap, timeout_s=cfg.timeout_s)

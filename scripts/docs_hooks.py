"""MkDocs hooks for the toolcrib site: reference tables generated from the code, so they cannot drift.

``<!-- toolcrib:workspace-keys -->`` becomes every ``toolcrib.toml`` key with its type, default and meaning
(from ``toolcrib.config``'s models and the comments beside their fields); ``<!-- toolcrib:http-operations -->``
becomes the service's operations from its OpenAPI document, which is also written to the site as
``reference/openapi.json``. The functions are importable, so the tests check what the pages will show.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import tempfile
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

WORKSPACE_MARK = "<!-- toolcrib:workspace-keys -->"
HTTP_MARK = "<!-- toolcrib:http-operations -->"

# Meanings of the keys whose field has no comment in toolcrib/config.py (a comment there wins).
MEANINGS: dict[str, str] = {
    "workspace.name": "The workspace's name, shown by the CLI, the page and `/v1/me`.",
    "workspace.require_evidence": "An answer must rest on a successful tool result or retrieved passage; "
                                  "otherwise the runner asks once more, then abstains.",
    "workspace.system_prompt": "Text added to the system prompt of every run.",
    "workspace.default_user": "The user the CLI acts as without `--user` (and the MCP stdio server without it).",
    "workspace.mode": "`single` (one model decision per question) or `loop` (bounded ReAct).",
    "model.spec": "The model spec: `local`, `openai:MODEL`, `openai-responses:MODEL`, `anthropic:MODEL`, "
                  "`scripted:FILE`, `function:FILE.py:NAME`, `dry:MODEL`.",
    "model.settings": "Passed to the backend: `n_threads` for `local`, `base_url`, `api_key`, `timeout_s` for "
                      "remote ones (see Connect a model).",
    "model.max_tokens": "The most tokens one model reply may generate.",
    "tools.modules": "Python files (relative to the workspace) or modules whose module-level `@tool` objects "
                     "are registered.",
    "tools.builtin": "Built-in tools to add: `vector_search`, `sql_query`, `web_search`, `code_interpreter`.",
    "tools.max_result_chars": "A tool result longer than this is cut, with a visible marker.",
    "tools.egress_allowlist": "Address prefixes a READ that contacts an address may reach without the user "
                              "or a trusted source naming them.",
    "data.database": "A SQLite file (relative to the workspace), built from `seed.sql` beside it when missing.",
    "data.documents": "The folder `toolcrib ingest` reads by default.",
    "sql.dsn": "A PostgreSQL DSN for `sql_query` (instead of the workspace's SQLite database).",
    "web_search.provider": "`brave`, `tavily` or `searxng`; unset: `web_search` is not offered.",
    "web_search.max_results": "Hits one search returns.",
    "service.jwt.secret_env": "The environment variable holding a shared HS256 secret (never the secret itself).",
    "service.jwt.jwks_file": "A JWKS file (relative to the workspace) holding the verification keys.",
    "sql.allowed_tables": "The only tables `sql_query` may read.",
    "sql.row_cap": "The most rows one query returns.",
    "sql.timeout_s": "The longest one query may run.",
    "retrieval.chunker": "How documents are cut: by structure (headings, paragraphs), `fixed` or `parent_child`.",
    "retrieval.top_k": "Passages one search returns.",
    "retrieval.default_access": "The groups that may read a document whose metadata names none (`*`: everyone).",
    "retrieval.index": "`lance` (LanceDB under the workspace) or `pgvector` (PostgreSQL).",
    "retrieval.dsn": "The PostgreSQL DSN for the `pgvector` index.",
    "code_interpreter.cpu_s": "CPU seconds one run of model-written code may use.",
    "code_interpreter.wall_s": "Wall-clock seconds before the sandbox is killed from outside.",
    "code_interpreter.memory_mb": "Memory limit of the sandbox.",
    "code_interpreter.processes": "The most processes inside the sandbox.",
    "limits.rounds": "Model decisions one run may make.",
    "limits.tool_calls": "Tool calls one run may make.",
    "limits.wall_s": "Wall-clock seconds one run may take.",
    "limits.tokens": "Tokens (in and out) one run may use.",
    "paths.state": "Where traces, the index, approvals and the audit record live (relative to the workspace).",
    "policy.rules": "Extra policy rules, one string each.",
    "policy.separation_of_duties": "An approver may not approve their own request.",
    "policy.approval_ttl_s": "An approval not used within this many seconds expires.",
    "policy.proposal_ttl": "Per tool, seconds before an undecided proposal expires (`reserve_stock = 600`).",
    "policy.version": "The policy version, part of every proposal's hash: change it and older approvals no "
                      "longer match.",
    "service.max_body_bytes": "Largest request body; a larger one answers 413.",
    "service.max_question_chars": "Longest question `/v1/ask` accepts.",
    "service.jwt": "Accept JWTs from an identity provider beside API keys (the `[service.jwt]` table below).",
    "service.jwt.algorithms": "Signature algorithms accepted.",
    "service.jwt.issuer": "Required `iss` claim.",
    "service.jwt.audience": "Required `aud` claim.",
    "service.jwt.leeway_s": "Clock skew allowed on `exp` and `nbf`.",
    "service.jwt.jwks_url": "A JWKS URL to fetch the verification keys from.",
    "mcp.servers": "The MCP servers, one `[mcp.servers.NAME]` table each (below).",
    "mcp.servers.NAME.args": "Arguments of `command`.",
    "mcp.servers.NAME.url": "A streamable-HTTP MCP endpoint (instead of `command`).",
    "groups.NAME.tools": "The tools this group is offered (`*`: all).",
    "groups.NAME.approve": "The tools this group may approve calls of (`*`: all).",
    "users.NAME.name": "The name shown on the page and to approvers.",
    "users.NAME.role": "A role shown beside the name.",
    "users.NAME.tenant": "The tenant: object-level checks and what an approver sees are scoped by it.",
    "users.NAME.groups": "The user's groups: they decide tools, documents and approvals.",
    "webhooks.url": "Where proposal events are POSTed.",
    "webhooks.events": "Which events: `created`, `decided`, `expired`.",
    "webhooks.timeout_s": "Seconds one delivery may take.",
    "envelopes.TOOL": "A safety envelope for an ACTUATE tool: the bounds each argument must stay within.",
}

# Tables of named entries: the key as it is written in toolcrib.toml.
_NAMED = {"groups": "groups.NAME", "users": "users.NAME", "servers": "servers.NAME", "envelopes": "envelopes.TOOL"}


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """The comment beside each field (same line), else the comment lines right above it."""
    found: dict[str, str] = {}
    above: list[str] = []
    for line in inspect.getsource(model).splitlines()[1:]:
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(stripped.lstrip("# ").strip())
            continue
        field = re.match(r"\s+(\w+):", line)
        if field and not stripped.startswith(("def ", "@", "return")):
            beside = line.split("  # ", 1)[1].strip() if "  # " in line else ""
            found[field.group(1)] = beside or " ".join(above)
        above = []
    return found


def _type_name(annotation: Any) -> str:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _default(info: Any) -> str:
    if info.default is not PydanticUndefined:
        value = info.default
    elif info.default_factory is not None:
        value = info.default_factory()
    else:
        return "required"
    if isinstance(value, BaseModel):
        return "(table)"
    if value is None:
        return "unset"
    return f"`{json.dumps(value)}`"


def _sub_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        if (nested := _sub_model(arg)) is not None:
            return nested
    return None


def workspace_keys() -> list[tuple[str, str, str, str]]:
    """Every key of ``toolcrib.toml``: (dotted key, type, default, meaning)."""
    from toolcrib.config import WorkspaceConfig

    rows: list[tuple[str, str, str, str]] = []

    def walk(model: type[BaseModel], prefix: str) -> None:
        comments = _comments(model)
        for name, info in model.model_fields.items():
            named = _NAMED.get(name) if not prefix or name == "servers" else None
            key = prefix + (named or name)
            sub = _sub_model(info.annotation)
            meaning = comments.get(name) or MEANINGS.get(key) or MEANINGS.get(key.replace(".NAME", ""), "")
            if sub is not None and prefix and name != "servers":
                rows.append((key, "table", _default(info), meaning or (sub.__doc__ or "").strip()))
            if sub is not None:
                if name in ("servers",):
                    rows.append((key.removesuffix(".NAME"), "tables", "none", meaning))
                walk(sub, key + ".")
                continue
            rows.append((key, _type_name(info.annotation), _default(info), meaning))

    walk(WorkspaceConfig, "")
    return rows


def workspace_table() -> str:
    rows = workspace_keys()
    out: list[str] = []
    section = None
    for key, type_name, default, meaning in rows:
        top = key.split(".")[0]
        if top != section:
            section = top
            title = f"[[{top}]]" if top in ("webhooks", "lookups") else f"[{top}]"
            out += ["", f"### `{title}`", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        meaning = " ".join(meaning.split()).replace("|", "\\|")
        out.append(f"| `{key}` | `{type_name.replace('|', chr(92) + '|')}` | {default} | {meaning} |")
    return "\n".join(out).strip() + "\n"


def openapi_document() -> dict[str, Any]:
    """The service's OpenAPI document, from an app over an empty workspace (no model is loaded)."""
    from toolcrib.service.app import create_app
    from toolcrib.workspace import Workspace

    with tempfile.TemporaryDirectory() as folder:
        old = os.environ.get("TOOLCRIB_HOME")
        os.environ["TOOLCRIB_HOME"] = folder
        try:
            (Path(folder) / "toolcrib.toml").write_text('[model]\nspec = "dry:gpt-4o-mini"\n')
            document: dict[str, Any] = create_app(Workspace.open(folder)).openapi()
        finally:
            if old is None:
                os.environ.pop("TOOLCRIB_HOME", None)
            else:
                os.environ["TOOLCRIB_HOME"] = old
    return document


def http_table(document: dict[str, Any]) -> str:
    out = ["| operation | what | tag |", "|---|---|---|"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            what = (operation.get("description") or operation.get("summary") or "").split("\n\n")[0]
            what = " ".join(what.split()).replace("|", "\\|")
            out.append(f"| `{method.upper()} {path}` | {what} | {', '.join(operation.get('tags', []))} |")
    return "\n".join(out) + "\n"


_openapi: dict[str, Any] = {}


# ``test="skip"`` (and any ``test="..."``) on a fence is read by the example tests, not by the renderer.
_TEST_OPTION = re.compile(r'^(\s*```+[^\n]*?) test="[^"]*"', re.MULTILINE)


def _listed(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, dict):
        return set().union(*(_listed(v) for v in nav.values()))
    if isinstance(nav, list):
        return set().union(*(_listed(v) for v in nav)) if nav else set()
    return set()


def on_config(config: Any) -> Any:
    """Pages added under ``docs/`` but not yet in ``mkdocs.yml``'s nav join it at the end, one section per
    folder (``docs/operations/faults.md`` under "Operations"), so no page is left out of the site."""
    docs = Path(config["docs_dir"])
    listed = _listed(config["nav"] or [])
    extra: dict[str, list[str]] = {}
    for page in sorted(docs.rglob("*.md")):
        relative = page.relative_to(docs).as_posix()
        if relative not in listed and not page.name.startswith("_"):
            folder = relative.split("/")[0] if "/" in relative else "More"
            extra.setdefault(folder.replace("-", " ").capitalize(), []).append(relative)
    if config["nav"] is not None:
        for title, pages in extra.items():
            config["nav"].append({title: pages})
    return config


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    markdown = _TEST_OPTION.sub(r"\1", markdown)
    if WORKSPACE_MARK in markdown:
        markdown = markdown.replace(WORKSPACE_MARK, workspace_table())
    if HTTP_MARK in markdown:
        _openapi.update(_openapi or openapi_document())
        markdown = markdown.replace(HTTP_MARK, http_table(_openapi))
    return markdown


def on_post_build(config: Any) -> None:
    if _openapi:
        target = Path(config["site_dir"]) / "reference" / "openapi.json"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(_openapi, indent=2))

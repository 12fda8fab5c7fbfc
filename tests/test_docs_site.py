"""The documentation site builds strictly (a broken link or reference fails), its reference pages cover what the
code has (every workspace key with a meaning, every event kind, every error code), the README stays a front
page whose Quick start is unchanged, and the service's interactive API docs load nothing from outside."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType

import pytest
from fastapi.testclient import TestClient

from toolcrib import errors
from toolcrib.trace.events import EventKind

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
QUICK_START = ('./scripts/setup.sh && .venv/bin/toolcrib ask "What\'s the status of order ORD-1001?"\n'
               ".venv/bin/python -m pytest\n")


def hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_hooks", ROOT / "scripts" / "docs_hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.timeout(300)
def test_the_site_builds_strictly_and_has_every_section(tmp_path: Path) -> None:
    started = time.monotonic()
    # as a reader builds it: `toolcrib docs --build`, from any folder of the clone (mkdocs build --strict)
    toolcrib = Path(sys.executable).parent / "toolcrib"
    built = subprocess.run([str(toolcrib), "docs", "--build", str(tmp_path / "site")], cwd=ROOT / "src",
                           capture_output=True, text=True, timeout=240, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert built.returncode == 0, built.stdout + built.stderr
    assert time.monotonic() - started < 120
    site = tmp_path / "site"
    for page in ("get-started/first-approval", "concepts/pipeline", "how-to/postgres", "reference/python",
                 "reference/cli", "reference/http", "reference/workspace", "reference/events", "reference/errors"):
        assert (site / page / "index.html").is_file(), page
    python = (site / "reference/python/index.html").read_text()
    for name in ("toolcrib.Gate", "toolcrib.Runner", "toolcrib.tool", "toolcrib.ScriptedModel"):
        assert f'id="{name}"' in python, name
    cli = (site / "reference/cli/index.html").read_text()
    for command in ("toolcrib ask", "toolcrib approve", "toolcrib serve", "toolcrib mcp serve", "toolcrib docs"):
        assert command in cli, command
    http = (site / "reference/http/index.html").read_text()
    assert "POST /v1/proposals/{proposal_id}/approve" in http
    assert (site / "reference/openapi.json").is_file()
    assert "`" not in re.sub(r"<(pre|code)[^>]*>.*?</\1>", "", (site / "index.html").read_text(), flags=re.S)


def test_every_workspace_key_has_a_type_a_default_and_a_meaning() -> None:
    module = hooks()
    rows = module.workspace_keys()
    keys = {row[0] for row in rows}
    assert {"workspace.require_evidence", "policy.dsn", "mcp.servers.NAME.effects", "users.NAME.groups",
            "service.jwt.claim", "webhooks.secret_env"} <= keys
    assert [row[0] for row in rows if not row[3].strip()] == []
    stale = [key for key in module.MEANINGS if key not in keys and key.replace(".TOOL", "") not in keys]
    assert stale == [], "meanings for keys that no longer exist"
    table = module.workspace_table()
    assert "| `limits.rounds` | `int` | `5` |" in table


def test_the_event_page_names_every_event_kind() -> None:
    page = (DOCS / "reference" / "events.md").read_text()
    assert [kind.value for kind in EventKind if f"`{kind.value}`" not in page] == []


def test_the_error_page_names_every_error_code() -> None:
    import toolcrib.auth.credentials
    import toolcrib.policy.proposals
    import toolcrib.service.app
    import toolcrib.service.slots  # noqa: F401  (their error classes join the tree)

    page = (DOCS / "reference" / "errors.md").read_text()
    codes: set[str] = set()
    todo: list[type] = [errors.ToolcribError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if isinstance(getattr(cls, "code", None), str):
            codes.add(cls.code)
        if cls.__module__ == "toolcrib.errors":
            assert cls.__name__ in page, cls.__name__
    assert sorted(code for code in codes if f"`{code}`" not in page) == []


def test_the_readme_is_a_front_page_with_the_quick_start_unchanged() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    quick = readme.split("## Quick start", 1)[1]
    assert quick.split("```bash\n", 1)[1].split("```", 1)[0] == QUICK_START
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link


def test_the_interactive_api_docs_load_only_the_services_own_files(tmp_path: Path) -> None:
    from toolcrib.service.app import create_app
    from toolcrib.workspace import Workspace

    (tmp_path / "toolcrib.toml").write_text('[model]\nspec = "dry:gpt-4o-mini"\n')
    with TestClient(create_app(Workspace.open(tmp_path))) as client:
        page = client.get("/docs")
        assert page.status_code == 200
        assert "SwaggerUIBundle" in page.text
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text) + re.findall(r"url: '([^']+)'", page.text)
        assert sources and all(s.startswith("/") for s in sources), sources
        for source in sources:
            response = client.get(source)
            assert response.status_code == 200, source
        assert client.get("/docs/assets/swagger-ui-bundle.js").headers["content-type"].startswith(
            ("application/javascript", "text/javascript"))

"""The workspace templates inside the installed package are read-only to code: opening the shipped demo,
asking it with a scripted model, ingesting its documents, pointing ``--workspace`` or $TOOLCRIB_WORKSPACE at
the package's own folder, and copying it with ``toolcrib init`` change no file under ``toolcrib/demo/`` and
add none (a stray ``demo.sqlite`` there once reached every copy as an empty database)."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.test_cli_demo import call, script

import toolcrib.demo
from toolcrib.cli import main
from toolcrib.errors import ConfigError
from toolcrib.workspace import Workspace, locate
from toolcrib.workspace.locate import DEMO_SOURCE, TEMPLATES

PACKAGE_DEMO = Path(toolcrib.demo.__file__).parent
PRICE = "What does part HLV-2205 cost?"


def snapshot() -> dict[str, tuple[int, int, str]]:
    """Every file under the package's demo folder: size, mtime and sha256 (Python's own bytecode caches
    aside: importing a module writes them, in any package)."""
    return {str(p.relative_to(PACKAGE_DEMO)): (p.stat().st_size, p.stat().st_mtime_ns,
                                               hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(PACKAGE_DEMO.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOOLCRIB_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TOOLCRIB_WORKSPACE", raising=False)
    return tmp_path / "home"


def test_the_demo_paths_write_nothing_into_the_package(home: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot()
    assert not any(name.endswith(".sqlite") for name in before), "a database inside the package's templates"
    model = script(tmp_path, [call("lookup_part", part_number="HLV-2205"), "It costs $52.00."])

    # the shipped demo, opened by default and by the package's own folder (and its config file)
    opened = [Workspace.open(), Workspace.open(DEMO_SOURCE), Workspace.open(DEMO_SOURCE / "toolcrib.toml"),
              Workspace.open(TEMPLATES["clinic"])]
    databases = [ws.database for ws in opened]
    # asked and ingested through the command line, naming the package's folder as the workspace
    asked = CliRunner().invoke(main, ["ask", PRICE, "--model", model, "--workspace", str(DEMO_SOURCE), "--json"])
    ingested = CliRunner().invoke(main, ["ingest", "--workspace", str(DEMO_SOURCE)])
    # $TOOLCRIB_WORKSPACE on the package's folder
    monkeypatch.setenv("TOOLCRIB_WORKSPACE", str(DEMO_SOURCE))
    listed = CliRunner().invoke(main, ["tools"])
    # copies made with `toolcrib init --template`
    made = [CliRunner().invoke(main, ["init", str(tmp_path / f"copy-{name}"), "--template", name])
            for name in TEMPLATES]

    after = snapshot()
    assert after == before, {name: (before.get(name), after.get(name))
                             for name in set(before) | set(after) if before.get(name) != after.get(name)}
    # and each of them worked, on the writable copies
    assert [ws.root for ws in opened] == [home / "demo"] * 3 + [home / "clinic"]
    assert all(db is not None and db.is_relative_to(home) for db in databases)
    assert asked.exit_code == 0, asked.output
    assert "$52.00" in json.loads(asked.stdout.strip().splitlines()[-1])["text"]
    assert ingested.exit_code == 0, ingested.output
    assert (home / "demo" / ".toolcrib" / "index").is_dir()
    assert listed.exit_code == 0, listed.output
    assert all(m.exit_code == 0 for m in made), [m.output for m in made]


def test_the_package_template_itself_is_refused_as_a_workspace(home: Path) -> None:
    demo = Workspace.open()
    for root in (DEMO_SOURCE, DEMO_SOURCE / "docs", TEMPLATES["clinic"]):
        with pytest.raises(ConfigError, match="template inside the package is read-only"):
            Workspace(root, demo.config)


def test_a_stray_database_in_a_template_never_reaches_a_copy(home: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:

    fake = tmp_path / "template"
    shutil.copytree(DEMO_SOURCE, fake, ignore=shutil.ignore_patterns("__pycache__", ".toolcrib", "*.sqlite"))
    (fake / "data" / "demo.sqlite").write_bytes(b"")  # what a stray sqlite3.connect leaves
    monkeypatch.setitem(locate.TEMPLATES, "demo", fake)
    ws = Workspace.open(template="demo")
    assert ws.database is not None
    with sqlite3.connect(f"file:{ws.database}?mode=ro", uri=True) as conn:
        assert conn.execute("SELECT COUNT(*) FROM parts").fetchone()[0] > 0

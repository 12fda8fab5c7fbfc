"""Copies of the demo workspace for tests and benchmarks that run real ``toolcrib serve`` processes."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path


def demo_workspace(root: Path, dsn: str | None, service: dict[str, int], stock: int | None = None) -> Path:
    """A copy of the demo workspace: optional ``[policy] dsn``, these ``[service]`` settings, no document
    search when no tool found anything (so a question without a tool call touches no index), its
    database built and, with ``stock``, every part's stock set to it."""
    from toolcrib.workspace import Workspace
    from toolcrib.workspace.locate import DEMO_SOURCE

    shutil.copytree(DEMO_SOURCE, root, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = root / "toolcrib.toml"
    text = config.read_text(encoding="utf-8")
    if dsn:
        text = text.replace("\n[policy]\n", f'\n[policy]\ndsn = "{dsn}"\n', 1)
    text = text.replace("search_when_nothing_found = true", "search_when_nothing_found = false", 1)
    text += "\n[service]\nindex_on_start = false\n" + "".join(f"{k} = {v}\n" for k, v in service.items())
    config.write_text(text, encoding="utf-8")
    database = Workspace.open(root).database
    assert database is not None
    if stock is not None:
        with sqlite3.connect(database) as conn:
            conn.execute("UPDATE stock SET available = ?", (stock,))
    return root

"""The workspace's SQLite database as a tool reaches it: ``ctx.resources["db"]``, read-only unless asked.

Tools in a workspace's ``tools.py`` open one connection per call (``with connect(ctx) as conn``, or
``fetch_one`` for a lookup's one row): read calls cannot write (``mode=ro``), and a write runs in one
``BEGIN IMMEDIATE`` transaction that commits when the block ends and rolls back on any error.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from toolcrib.errors import ConfigError
from toolcrib.tools.tool import ToolContext


@contextmanager
def connect(ctx: ToolContext, *, write: bool = False) -> Iterator[sqlite3.Connection]:
    """A connection to the workspace database: read-only unless ``write``; commits on success."""
    db = ctx.resources.get("db")
    if db is None:
        raise ConfigError("this workspace's tools need its database ([data] database): "
                          "ToolContext.resources['db'] is not set", key="data.database")
    uri = Path(db).resolve().as_uri() + ("?mode=rw" if write else "?mode=ro")
    conn = sqlite3.connect(uri, uri=True, timeout=5.0, isolation_level=None)  # transactions are explicit
    conn.row_factory = sqlite3.Row
    try:
        if write:
            conn.execute("BEGIN IMMEDIATE")
        yield conn
        if write:
            conn.execute("COMMIT")
    except BaseException:
        if write and conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        conn.close()


def fetch_one(ctx: ToolContext, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
    """The first row ``sql`` selects with ``params``, read-only, or None: what a lookup reads."""
    with connect(ctx) as conn:
        row: sqlite3.Row | None = conn.execute(sql, params).fetchone()
    return row

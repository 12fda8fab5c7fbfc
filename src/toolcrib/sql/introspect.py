"""What a user's database holds, read once to generate a workspace (``toolcrib init --database``) and to
check one (``toolcrib doctor``): its tables, their columns and types, their primary keys."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcrib.errors import ConfigError

# words of a text column's name that say a person would name a row by it
_NAME_WORDS = re.compile(r"(?i)(^|_)(name|title|label|nickname|surname)s?($|_)|name$")
TEXT_TYPES = re.compile(r"(?i)char|text|clob|string|^$")
"""A declared column type that holds text (SQLite and PostgreSQL)."""


@dataclass(frozen=True)
class TableInfo:
    """One table: its columns (name, declared type) in order, its primary key's columns (empty: none)
    and whether SQLite keeps a ``rowid`` for it (a lookup can key a table without a primary key by it)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    primary_key: tuple[str, ...]
    rowid: bool = False

    def name_columns(self) -> list[str]:
        """The text columns a person would name a row by (name, title, label, ...), key columns aside."""
        return [c for c, t in self.columns
                if c not in self.primary_key and TEXT_TYPES.search(t) and _NAME_WORDS.search(c)]


def is_dsn(database: str) -> bool:
    return database.startswith(("postgresql://", "postgres://"))


def read_tables(database: str | Path) -> list[TableInfo]:
    """The tables of a SQLite file or a PostgreSQL database (DSN), sorted by name. Raises ConfigError
    with one line saying what is wrong when the file is missing or the database cannot be read."""
    if isinstance(database, str) and is_dsn(database):
        return _postgres_tables(database)
    path = Path(database)
    if not path.is_file():
        raise ConfigError(f"database file {path} does not exist")
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as exc:
        raise ConfigError(f"cannot open database {path}: {exc}") from None
    try:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' "
                            "AND name NOT LIKE 'sqlite_%' ORDER BY name").fetchall()
        tables = []
        for name, ddl in rows:
            info = conn.execute("SELECT name, type, pk FROM pragma_table_info(?)", (name,)).fetchall()
            key = tuple(str(c) for c, _t, pk in sorted(info, key=lambda r: r[2]) if pk)
            without_rowid = bool(re.search(r"(?i)\bwithout\s+rowid\b", ddl or ""))
            tables.append(TableInfo(str(name), tuple((str(c), str(t or "")) for c, t, _pk in info), key,
                                    rowid=not without_rowid))
    except sqlite3.Error as exc:
        raise ConfigError(f"{path} is not a readable SQLite database: {exc}") from None
    finally:
        conn.close()
    return tables


def _postgres_tables(dsn: str) -> list[TableInfo]:
    try:
        import psycopg
    except ImportError:
        raise ConfigError("a PostgreSQL database needs the postgres extra: pip install 'toolcrib[postgres]'") from None
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            columns: list[Any] = conn.execute(
                "SELECT table_name, column_name, data_type FROM information_schema.columns "
                "WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position").fetchall()
            keys: list[Any] = conn.execute(
                "SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc "
                "JOIN information_schema.key_column_usage kcu ON kcu.constraint_name = tc.constraint_name "
                "AND kcu.table_schema = tc.table_schema WHERE tc.constraint_type = 'PRIMARY KEY' "
                "AND tc.table_schema = current_schema() ORDER BY tc.table_name, kcu.ordinal_position").fetchall()
            kinds: list[Any] = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                "AND table_type = 'BASE TABLE'").fetchall()
    except psycopg.Error as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"cannot reach the PostgreSQL database: {first}") from None
    base = {str(r[0]) for r in kinds}
    tables: dict[str, list[tuple[str, str]]] = {}
    for table, column, kind in columns:
        if table in base:
            tables.setdefault(str(table), []).append((str(column), str(kind)))
    pk: dict[str, list[str]] = {}
    for table, column in keys:
        pk.setdefault(str(table), []).append(str(column))
    return [TableInfo(t, tuple(cols), tuple(pk.get(t, ()))) for t, cols in sorted(tables.items())]


def json_type(declared: str) -> str:
    """The JSON Schema type of a column's values, by SQLite's affinity rules (which suit PostgreSQL's
    type names too): integer, number or string."""
    t = declared.upper()
    if ("INT" in t and "INTERVAL" not in t and "POINT" not in t) or t.endswith("SERIAL"):
        return "integer"
    if any(word in t for word in ("REAL", "FLOA", "DOUB", "NUMERIC", "DECIMAL", "NUMBER")):
        return "number"
    return "string"

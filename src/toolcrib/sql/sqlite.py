"""SQLite, read-only three times over: a ``mode=ro`` file, ``query_only``, and an authorizer that
allows only reads of allowlisted tables; a progress handler bounds the time."""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from toolcrib.errors import ConfigError, InvalidArguments, ModelFacingError, NotPermitted, ToolFailed, ToolTimeout
from toolcrib.sql.base import ForeignKey, Param, QueryResult, ReadOnlySQL, Schema, allowed_keys
from toolcrib.sql.guard import DENIED_FUNCTIONS, DENIED_PREFIXES, MAX_QUERY_CHARS

log = logging.getLogger("toolcrib.sql")

_SQLITE_RECURSIVE = getattr(sqlite3, "SQLITE_RECURSIVE", 33)
_PROGRESS_EVERY = 1_000  # virtual-machine steps between deadline checks
_MAX_VALUE_BYTES = 10_000_000  # no string or blob (randomblob, zeroblob, printf) grows past this


class SQLiteReadOnly(ReadOnlySQL):
    """A SQLite file opened read-only, restricted to ``allowed_tables``."""

    dialect = "sqlite"
    placeholder_hint = "write ? for each value, in order"

    def __init__(self, path: str | Path, allowed_tables: Iterable[str], *, row_cap: int = 200,
                 timeout_s: float = 5.0, max_chars: int = 20_000) -> None:
        super().__init__(allowed_tables, row_cap=row_cap, timeout_s=timeout_s, max_chars=max_chars)
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError("the SQLite database file does not exist", file=str(self.path))
        try:
            conn = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                   check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA query_only = ON")
        except sqlite3.Error as exc:
            raise ConfigError(f"cannot open the SQLite database read-only ({exc})",
                              file=str(self.path)) from exc
        for name, part in _DATE_PARTS.items():  # what other dialects have and models write: YEAR(signed_on)
            conn.create_function(name, 1, part, deterministic=True)
        conn.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, _MAX_VALUE_BYTES)
        conn.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_QUERY_CHARS * 4)
        self._conn = conn
        self._lock = threading.Lock()
        self._denied: str | None = None
        conn.set_authorizer(self._authorize)

    # -- the authorizer ------------------------------------------------------------------------
    def _authorize(self, action: int, arg1: str | None, arg2: str | None, db: str | None,
                   via: str | None) -> int:
        """Allow SELECT, recursive CTEs, reads of allowlisted tables and safe functions only."""
        if action in (sqlite3.SQLITE_SELECT, _SQLITE_RECURSIVE):
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_READ:
            if db is None:
                return sqlite3.SQLITE_OK  # a CTE's or subquery's own rows, not a stored table
            if db == "main" and arg1 is not None and arg1.lower() in self.allowed_tables:
                return sqlite3.SQLITE_OK
            self._denied = f"table {arg1} is not available"
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            if name not in DENIED_FUNCTIONS and not name.startswith(DENIED_PREFIXES):
                return sqlite3.SQLITE_OK
            self._denied = f"function {name} is not allowed"
            return sqlite3.SQLITE_DENY
        self._denied = "only one SELECT statement is allowed"
        return sqlite3.SQLITE_DENY

    # -- ReadOnlySQL ---------------------------------------------------------------------------
    def load_schema(self) -> Schema:
        with self._lock:
            self._conn.set_authorizer(None)
            try:
                rows = self._conn.execute(
                    "SELECT type, name, sql FROM sqlite_master WHERE type IN ('table', 'view')"
                ).fetchall()
                views = {name.lower(): sql for kind, name, sql in rows if kind == "view" and sql}
                columns: dict[str, list[tuple[str, str]]] = {}
                for _kind, name, _sql in rows:
                    if name.lower() in self.allowed_tables:
                        info = self._conn.execute(
                            "SELECT name, type FROM pragma_table_info(?)", (name,)).fetchall()
                        columns[name] = [(str(c), str(t or "")) for c, t in info]
                keys = [ForeignKey(table, str(column), str(target), str(key or self._primary_key(target)))
                        for table in columns
                        for target, column, key in self._conn.execute(
                            'SELECT "table", "from", "to" FROM pragma_foreign_key_list(?)', (table,)).fetchall()]
            finally:
                self._conn.set_authorizer(self._authorize)
        return Schema(columns=columns, views=views, foreign_keys=allowed_keys(keys, columns))

    def _primary_key(self, table: str) -> str:
        """The one column of ``table``'s primary key ("" when it has none or several)."""
        key = [str(c) for c, pk in self._conn.execute("SELECT name, pk FROM pragma_table_info(?)", (table,)) if pk]
        return key[0] if len(key) == 1 else ""

    def execute_unchecked(self, sql: str, params: Sequence[Param] = ()) -> QueryResult:
        deadline = time.monotonic() + self.timeout_s
        with self._lock:
            self._denied = None
            self._conn.set_progress_handler(lambda: int(time.monotonic() > deadline), _PROGRESS_EVERY)
            cursor = self._conn.cursor()
            try:
                cursor.execute(sql, list(params))
                columns = [d[0] for d in cursor.description or ()]
                rows = cursor.fetchmany(self.row_cap + 1)
            except (sqlite3.Error, OverflowError) as exc:
                raise self._translate(exc) from None
            finally:
                cursor.close()
                self._conn.set_progress_handler(None, 0)
                if self._conn.in_transaction:
                    self._conn.rollback()
        more = len(rows) > self.row_cap
        return self.shape(columns, rows[: self.row_cap], more=more)

    def close(self) -> None:
        self._conn.close()

    # -- errors --------------------------------------------------------------------------------
    def _translate(self, exc: Exception) -> ModelFacingError:
        """A short, safe message for the model; the raw error only goes to the log."""
        log.info("sqlite query refused or failed: %s", exc)
        name = getattr(exc, "sqlite_errorname", "")
        text = str(exc)
        if name == "SQLITE_INTERRUPT" or text == "interrupted":
            return ToolTimeout(f"statement timed out after {self.timeout_s:g}s")
        if name == "SQLITE_AUTH" or "not authorized" in text or "prohibited" in text:
            return NotPermitted(self._denied or "only one SELECT statement is allowed")
        if name.startswith("SQLITE_READONLY") or "readonly" in text or "query_only" in text:
            return NotPermitted("the database refused a write: this connection is read-only")
        if isinstance(exc, sqlite3.ProgrammingError):
            if "one statement at a time" in text:
                return InvalidArguments("only one SELECT statement is allowed")
            if m := re.search(r"uses (\d+), and there are (\d+)", text):
                return InvalidArguments(f"the query has {m[1]} placeholder(s) but {m[2]} param(s) "
                                        f"were given; {self.placeholder_hint}")
            return InvalidArguments("the query or its params could not be used")
        if isinstance(exc, OverflowError) or "too big" in text:
            return InvalidArguments("a value is too large")
        for pattern, message in _MESSAGES:
            if m := pattern.search(text):
                return InvalidArguments(message.format(*(_short(g) for g in m.groups())))
        if "syntax error" in text or "incomplete input" in text:
            return InvalidArguments("the query is not valid SQL for SQLite")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            return ToolFailed("the database is busy; try again")
        return ToolFailed("the query failed in the database")


_ISO_DATE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})")


def _date_part(index: int) -> Callable[[Any], int | None]:
    def part(value: Any) -> int | None:
        m = _ISO_DATE.match(value) if isinstance(value, str) else None
        return int(m.group(index)) if m else None
    return part


# YEAR(d), MONTH(d), DAY(d) of an ISO date or timestamp text (NULL for anything else): SQLite has only strftime
_DATE_PARTS = {"year": _date_part(1), "month": _date_part(2), "day": _date_part(3)}

_MESSAGES: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"^no such column: (.+)$"), "unknown column '{}'"),
    (re.compile(r"^ambiguous column name: (.+)$"), "ambiguous column '{}': qualify it with its table"),
    (re.compile(r"^no such table: (.+)$"), "table {} is not available"),
    (re.compile(r"^no such function: (.+)$"), "unknown function '{}'"),
    (re.compile(r"^wrong number of arguments to function (\w+)"), "wrong number of arguments to {}()"),
    (re.compile(r"^misuse of aggregate(?: function)?:? (\w+)"), "misuse of aggregate {}()"),
    (re.compile(r'^near "(.{1,40})": syntax error$'), "syntax error near '{}'"),
]


def _short(text: Any) -> str:
    return str(text)[:60]

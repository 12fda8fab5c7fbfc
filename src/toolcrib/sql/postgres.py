"""PostgreSQL, read-only by the database's own rules: a role with SELECT on the allowed tables
only, ``SET TRANSACTION READ ONLY`` and ``SET LOCAL statement_timeout`` on every query."""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from toolcrib.errors import InvalidArguments, MissingDependency, ModelFacingError, NotPermitted, ToolFailed, ToolTimeout
from toolcrib.sql.base import ForeignKey, Param, QueryResult, ReadOnlySQL, Schema, allowed_keys

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("toolcrib.sql")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise MissingDependency("PostgresReadOnly", "postgres") from None
    return psycopg


class PostgresReadOnly(ReadOnlySQL):
    """A PostgreSQL database read through a SELECT-only ``role`` (see ``provision_readonly_role``).

    ``role`` names the login the connection uses (it overrides any user in ``dsn``); without it
    the dsn's own user is used and must already be restricted. Placeholders are ``$1, $2, ...``.
    """

    dialect = "postgres"
    placeholder_hint = "write $1, $2, ... for the values, numbered in order"
    placeholder = "$1"
    contains = "ILIKE"

    def __init__(self, dsn: str, allowed_tables: Iterable[str], *, role: str | None = None,
                 schema: str = "public", row_cap: int = 200, timeout_s: float = 5.0,
                 max_chars: int = 20_000, connect_timeout_s: int = 5) -> None:
        super().__init__(allowed_tables, row_cap=row_cap, timeout_s=timeout_s, max_chars=max_chars)
        _psycopg()
        self._dsn = dsn
        self.role = role
        self.db_schema = schema
        self._connect_timeout_s = connect_timeout_s
        self._conn: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()

    def dialect_label(self) -> str:
        return "PostgreSQL"

    def default_schemas(self) -> tuple[str, ...]:
        return (self.db_schema,)

    # -- connection and transaction ------------------------------------------------------------
    def _connection(self) -> psycopg.Connection[Any]:
        pg = _psycopg()
        if self._conn is None or self._conn.closed:
            extra: dict[str, Any] = {"user": self.role} if self.role else {}
            self._conn = pg.connect(self._dsn, autocommit=False, cursor_factory=pg.RawCursor,
                                    connect_timeout=self._connect_timeout_s,
                                    application_name="toolcrib-sql", **extra)
        return self._conn

    def _begin(self, cursor: psycopg.Cursor[Any]) -> None:
        """First statements of every transaction: read-only, bounded, in the configured schema."""
        sql = _psycopg().sql
        cursor.execute("SET TRANSACTION READ ONLY")
        cursor.execute(f"SET LOCAL statement_timeout = {max(1, int(self.timeout_s * 1000))}")
        cursor.execute(f"SET LOCAL lock_timeout = {max(1, int(self.timeout_s * 1000))}")
        cursor.execute(sql.SQL("SET LOCAL search_path TO {}").format(sql.Identifier(self.db_schema)))

    def _run(self, sql: str, params: Sequence[Any], limit: int) -> tuple[list[str], list[Any]]:
        pg = _psycopg()
        with self._lock:
            try:
                conn = self._connection()
            except pg.Error as exc:
                log.warning("postgres connection failed: %s", type(exc).__name__)
                raise ToolFailed("the database is unavailable") from None
            try:
                with conn.cursor() as cursor:
                    self._begin(cursor)
                    # stream(): the extended protocol (one statement only) and rows as they come,
                    # so a huge result is cut at the cap instead of being loaded.
                    rows: list[Any] = []
                    columns: list[str] = []
                    chunk = min(limit, 500) if pg.pq.version() >= 170000 else 1
                    for row in cursor.stream(sql, list(params), size=chunk):
                        if not rows:
                            columns = [d.name for d in cursor.description or ()]
                        rows.append(row)
                        if len(rows) >= limit:
                            break
                    if not rows:
                        columns = _describe(conn, sql)
                return columns, rows
            except pg.Error as exc:
                raise self._translate(exc) from None
            finally:
                self._reset(conn)

    def _reset(self, conn: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(Exception):
            conn.rollback()  # never commit: nothing a query did may last
        if conn.broken or conn.closed:
            conn.close()
            self._conn = None

    # -- ReadOnlySQL ---------------------------------------------------------------------------
    def execute_unchecked(self, sql: str, params: Sequence[Param] = ()) -> QueryResult:
        columns, rows = self._run(sql, params, self.row_cap + 1)
        return self.shape(columns, rows[: self.row_cap], more=len(rows) > self.row_cap)

    def load_schema(self) -> Schema:
        _, rows = self._run(
            "SELECT c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod),"
            " CASE WHEN c.relkind = 'v' THEN pg_get_viewdef(c.oid) END"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped"
            " WHERE n.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'p', 'f')"
            " ORDER BY c.relname, a.attnum",
            [self.db_schema], 1_000_000,
        )
        columns: dict[str, list[tuple[str, str]]] = {}
        views: dict[str, str] = {}
        for name, kind, col, typ, viewdef in rows:
            if kind == "v" and viewdef:
                views[name] = viewdef
            if name in self.allowed_tables:
                columns.setdefault(name, []).append((col, typ))
        _, references = self._run(
            "SELECT t.relname, a.attname, r.relname, f.attname FROM pg_constraint c"
            " JOIN pg_class t ON t.oid = c.conrelid JOIN pg_class r ON r.oid = c.confrelid"
            " JOIN pg_namespace n ON n.oid = t.relnamespace"
            " JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]"
            " JOIN pg_attribute f ON f.attrelid = c.confrelid AND f.attnum = c.confkey[1]"
            " WHERE c.contype = 'f' AND n.nspname = $1 AND cardinality(c.conkey) = 1",
            [self.db_schema], 10_000,
        )
        keys = [ForeignKey(str(t), str(c), str(r), str(k)) for t, c, r, k in references]
        return Schema(columns=columns, views=views, foreign_keys=allowed_keys(keys, columns))

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- errors --------------------------------------------------------------------------------
    def _translate(self, exc: Exception) -> ModelFacingError:
        """A short, safe message by SQLSTATE; the raw error only goes to the log."""
        state: str = getattr(exc, "sqlstate", None) or ""
        diag = getattr(exc, "diag", None)
        primary = str(getattr(diag, "message_primary", "") or "")
        log.info("postgres query refused or failed: sqlstate=%s %s", state, primary)
        pg = _psycopg()
        if isinstance(exc, (pg.OperationalError, pg.InterfaceError)) and (
                not state or state.startswith(("08", "57P"))):
            return ToolFailed("the database is unavailable")
        if not state:  # refused by the driver before the server saw it
            return InvalidArguments("the query could not be run as given (only one SELECT with "
                                    f"its params; {self.placeholder_hint})")
        if state == "57014":
            return ToolTimeout(f"statement timed out after {self.timeout_s:g}s")
        if state == "55P03":
            return ToolTimeout("the data is locked by another transaction; try again")
        if state == "25006":
            return NotPermitted("the database refused a write: this connection is read-only")
        if state == "42501":
            if m := re.search(r"permission denied for (?:table|relation|view|sequence) (\S+)", primary):
                return NotPermitted(f"table {m[1][:60]} is not available")
            return NotPermitted("the database refused this: permission denied")
        if state.startswith("25"):
            return NotPermitted("the database refused this in a read-only transaction")
        if state == "0A000":
            return InvalidArguments("the query uses a feature that is not supported here")
        if state == "42P01" and (m := re.search(r'relation "([^"]{1,60})" does not exist', primary)):
            return InvalidArguments(f"table {m[1]} is not available")
        if state == "42703" and (m := re.search(r'column "?([^" ]{1,60})"? does not exist', primary)):
            return InvalidArguments(f"unknown column '{m[1]}'")
        if state == "42883" and (m := re.search(r"function ([\w.]{1,60})\(", primary)):
            return InvalidArguments(f"unknown function '{m[1]}' (or wrong argument types)")
        if state == "42702" and (m := re.search(r'column reference "([^"]{1,60})" is ambiguous', primary)):
            return InvalidArguments(f"ambiguous column '{m[1]}': qualify it with its table")
        if state == "08P01" or "bind message supplies" in primary:
            return InvalidArguments(f"the number of params does not match the placeholders; "
                                    f"{self.placeholder_hint}")
        if state == "22012":
            return InvalidArguments("division by zero")
        if state.startswith("22"):
            return InvalidArguments("a value in the query or its params has the wrong type or format")
        if state == "42601" and "multiple commands" in primary:
            return InvalidArguments("only one SELECT statement is allowed")
        if state == "42601":
            return InvalidArguments("the query is not valid SQL for PostgreSQL")
        if state.startswith("42"):
            return InvalidArguments("the query is not valid for this database (check types and names)")
        if state.startswith(("53", "54")):
            return ToolFailed("the query needs more resources than allowed")
        return ToolFailed("the query failed in the database")


def _describe(conn: psycopg.Connection[Any], sql: str) -> list[str]:
    """Column names of a statement that returned no rows (stream() keeps none for it)."""
    pgconn = conn.pgconn
    pgconn.prepare(b"", sql.encode())
    described = pgconn.describe_prepared(b"")
    names = [(described.fname(i) or b"").decode() for i in range(described.nfields)]
    return names


def provision_readonly_role(admin_dsn: str, role: str, allowed_tables: Iterable[str],
                            schema: str = "public") -> None:
    """Create (or reset) a login role that can only SELECT from ``allowed_tables`` in ``schema``.

    Run once by an operator, with a superuser or owner ``admin_dsn``. The role gets no other
    table or sequence privileges in the schema, and every transaction of it starts read-only.
    """
    pg = _psycopg()
    sql = pg.sql
    who = sql.Identifier(role)
    where = sql.Identifier(schema)
    attributes = sql.SQL("LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS")
    with pg.connect(admin_dsn, autocommit=True) as conn, conn.transaction():
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", [role]).fetchone()
        verb = sql.SQL("ALTER ROLE") if exists else sql.SQL("CREATE ROLE")
        conn.execute(sql.SQL("{} {} {}").format(verb, who, attributes))
        conn.execute(sql.SQL("ALTER ROLE {} SET default_transaction_read_only = on").format(who))
        conn.execute(sql.SQL("REVOKE ALL ON ALL TABLES IN SCHEMA {} FROM {}").format(where, who))
        conn.execute(sql.SQL("REVOKE ALL ON ALL SEQUENCES IN SCHEMA {} FROM {}").format(where, who))
        conn.execute(sql.SQL("REVOKE CREATE ON SCHEMA {} FROM {}").format(where, who))
        conn.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(where, who))
        for table in allowed_tables:
            conn.execute(sql.SQL("GRANT SELECT ON TABLE {} TO {}").format(
                sql.Identifier(schema, table), who))

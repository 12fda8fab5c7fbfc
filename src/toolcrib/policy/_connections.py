"""The database connections the approval, audit and key stores share (and ``Store``, their lifecycle):
one per store and process, re-opened after a fork, guarded by a lock, handing out one transaction at a time.

A database that cannot be reached or written now (PostgreSQL down or restarting, a full disk) raises
``StoreUnavailable`` from any transaction: nothing of it was committed, and the next transaction tries
again. A PostgreSQL connection the server dropped (a restart) is replaced before its transaction begins,
so the first request after a restart is answered, not refused.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from toolcrib.errors import MissingDependency, StoreUnavailable


def _sqlite_connect(path: str) -> sqlite3.Connection:
    """Autocommit connection (transactions are explicit), WAL, fully synchronous, 30 s busy wait."""
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    return conn


class Store:
    """A store's lifecycle: ``close`` releases its connections (a do-nothing default), and a store is its
    own context manager."""

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _Closable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closable)


class _PerProcess(Generic[_C]):
    """A lazily opened connection, used under a lock, never reused by a forked child."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._conn: _C | None = None
        self._pid = 0

    def _connection(self) -> _C:
        """The open connection of this process (a forked parent's handle is never reused)."""
        if self._conn is None or self._pid != os.getpid() or not self._usable(self._conn):
            self._conn, self._pid = self._open(), os.getpid()
        return self._conn

    def _open(self) -> _C:
        raise NotImplementedError

    def _usable(self, conn: _C) -> bool:
        return True

    def close(self) -> None:
        with self._lock:
            if self._conn is not None and self._pid == os.getpid():
                self._conn.close()
            self._conn = None


_FULL = frozenset({sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR})  # primary result codes: no room, or a failed write


def _sqlite_unavailable(exc: sqlite3.Error, path: str) -> StoreUnavailable | None:
    """``StoreUnavailable`` for a SQLite error that a full (or failing) disk causes, else None."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None or code & 0xFF not in _FULL:
        return None
    return StoreUnavailable(f"the disk under {Path(path).name} is full or failing; nothing was recorded, "
                            "try again once there is room", what=path)


class SQLiteConnection(_PerProcess[sqlite3.Connection]):
    """One SQLite connection per store and process; the file's folder is created if missing."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path
        Path(path).parent.mkdir(parents=True, exist_ok=True)

    def _open(self) -> sqlite3.Connection:
        return _sqlite_connect(self.path)

    @contextmanager
    def tx(self, write: bool = True, *, synced: bool = True) -> Iterator[sqlite3.Cursor]:
        """One transaction, yielding a cursor; with ``write`` it holds the write lock throughout.
        ``synced`` False commits without an fsync (``synchronous=NORMAL`` for this transaction only):
        durable once committed against a killed process, against a power loss from the connection's
        next synced commit or checkpoint on (in WAL mode that fsync covers every earlier frame)."""
        with self._lock:
            conn = self._connection()
            if not synced:
                conn.execute("PRAGMA synchronous=NORMAL")
            try:
                # IMMEDIATE takes the write lock before the first read, so claims are serialised
                conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield conn.cursor()
                except BaseException:
                    if conn.in_transaction:  # SQLite may have rolled it back itself (a full disk)
                        conn.execute("ROLLBACK")
                    raise
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                unavailable = _sqlite_unavailable(exc, self.path)
                if unavailable is None:
                    raise
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise unavailable from exc
            finally:
                if not synced:
                    conn.execute("PRAGMA synchronous=FULL")

    @staticmethod
    def sql(text: str) -> str:
        """``text`` with this driver's placeholders (sqlite3 takes ``?`` as written)."""
        return text

    def migrate(self, statements: Sequence[str]) -> None:
        """Run the schema statements in one write transaction."""
        with self.tx() as cur:
            for statement in statements:
                cur.execute(statement)


class PostgresConnection(_PerProcess[Any]):
    """One psycopg 3 connection per store and process, optionally pinned to a schema.

    ``what`` names the store in error messages ("approval store", "audit store")."""

    def __init__(self, dsn: str, schema: str | None, what: str) -> None:
        try:
            import psycopg
        except ImportError:
            raise MissingDependency(f"the PostgreSQL {what}", "postgres") from None
        super().__init__()
        self._psycopg = psycopg
        self.dsn = dsn
        self.schema = schema
        self.what = what

    def _usable(self, conn: Any) -> bool:
        return not (conn.closed or conn.broken)

    def _open(self) -> Any:
        try:
            conn = self._psycopg.connect(self.dsn, autocommit=True, connect_timeout=5)
            if self.schema:
                from psycopg import sql

                conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema)))
        except self._psycopg.OperationalError as exc:
            raise self._unavailable(exc) from exc
        return conn

    def _unavailable(self, exc: Exception) -> StoreUnavailable:
        # the driver's text names the server's address: kept for the log (the cause), not the message
        return StoreUnavailable(f"cannot reach PostgreSQL for the {self.what} now ({type(exc).__name__}); "
                                "nothing was recorded, try again shortly. If it persists, check that the server "
                                "in [policy] dsn (or TOOLCRIB_POLICY_DSN) is running", what=self.what)

    def _begin(self, stack: ExitStack) -> Any:
        """Enter a transaction on this process's connection and return the connection; a connection the
        server dropped since its last use (a restart) fails at BEGIN, before anything ran, and is
        replaced once."""
        for attempt in range(2):
            conn = self._connection()
            try:
                stack.enter_context(conn.transaction())
            except self._psycopg.OperationalError:
                if attempt or not conn.broken:
                    raise
                self._conn = None
                continue
            return conn
        raise AssertionError("unreachable")

    @contextmanager
    def tx(self, write: bool = True) -> Iterator[Any]:
        """One transaction, yielding a cursor. ``write`` takes no lock here: callers serialise
        writers with row, advisory or table locks that fit their data. A server that cannot be
        reached raises ``StoreUnavailable`` (the transaction is not committed)."""
        with self._lock:
            try:
                with ExitStack() as stack:
                    conn = self._begin(stack)
                    cur = stack.enter_context(conn.cursor())
                    yield cur
            except self._psycopg.OperationalError as exc:
                raise self._unavailable(exc) from exc

    @staticmethod
    def sql(text: str) -> str:
        """``text`` with psycopg's ``%s`` placeholders for the ``?`` the stores write."""
        return text.replace("?", "%s")

    def migrate(self, statements: Sequence[str]) -> None:
        """Create the schema and tables once, serialised across processes."""
        from psycopg import sql

        with self.tx() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext('toolcrib.migrate'))")
            if self.schema:
                cur.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                    sql.Identifier(self.schema)))
            for statement in statements:
                cur.execute(statement)

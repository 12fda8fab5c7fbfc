"""API keys and per-user request counts: what the service shares between its processes.

A key is ``tck_<id>_<secret>``; only the SHA-256 of the secret is stored, and a presented key is
compared with it in constant time. Keys and request windows live in a SQLite file under the
workspace's state folder, or in PostgreSQL when ``[policy] dsn`` is set, so every ``toolcrib serve``
process (and host) sees the same keys and the same rate limits. Nothing here imports a web framework:
``toolcrib token`` uses it without the server extra.

A key found active is remembered for as long as the database has not changed: on SQLite each check
reads ``PRAGMA data_version`` on a connection of its own (a few microseconds, no transaction), which
changes whenever any other connection, in this process or another, commits to the file; any change
(a revocation, a new key, a rate-limit flush) forgets every remembered key, so a key revoked anywhere
is refused on the very next request. On PostgreSQL every check asks the database.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from toolcrib.policy._connections import PostgresConnection, SQLiteConnection

KEY_PREFIX = "tck_"
_KEY = re.compile(r"^tck_([0-9a-f]{16})_([A-Za-z0-9_-]{32,64})$")


@dataclass(frozen=True)
class KeyInfo:
    """One API key's record (never the key itself)."""

    id: str
    user: str
    label: str
    created_at: float
    revoked_at: float | None
    last_used_at: float | None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "user": self.user, "label": self.label, "created_at": self.created_at,
                "revoked_at": self.revoked_at, "last_used_at": self.last_used_at}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


_COLUMNS = "id, user_id, label, created_at, revoked_at, last_used_at"


class ServiceStore:
    """API keys and rate-limit windows in one database (see the module docstring)."""

    def __init__(self, db: SQLiteConnection | PostgresConnection, *, clock: Callable[[], float] = time.time) -> None:
        self._db = db
        self._clock = clock
        self._pg = isinstance(db, PostgresConnection)
        self._known: dict[str, tuple[str, str]] = {}  # key id -> (user, digest) of keys found active
        self._known_at: int | None = None  # the data_version they were found at
        self._known_lock = threading.Lock()
        self._watch: sqlite3.Connection | None = None  # reads data_version (never writes)
        self._watch_pid = 0
        real = "DOUBLE PRECISION" if self._pg else "REAL"
        self._db.migrate([
            f"""CREATE TABLE IF NOT EXISTS toolcrib_api_keys (
                id TEXT PRIMARY KEY, user_id TEXT NOT NULL, label TEXT NOT NULL, digest TEXT NOT NULL,
                created_at {real} NOT NULL, revoked_at {real}, last_used_at {real})""",
            """CREATE TABLE IF NOT EXISTS toolcrib_rate_windows (
                user_id TEXT NOT NULL, window_start BIGINT NOT NULL, hits INTEGER NOT NULL,
                PRIMARY KEY (user_id, window_start))""",
        ])

    @classmethod
    def sqlite(cls, path: str | os.PathLike[str]) -> ServiceStore:
        return cls(SQLiteConnection(os.fspath(path)))

    @classmethod
    def postgres(cls, dsn: str, *, schema: str | None = None) -> ServiceStore:
        return cls(PostgresConnection(dsn, schema, "service store"))

    @property
    def shared(self) -> bool:
        """Whether counts written here are one exact count for every process and host (PostgreSQL)."""
        return self._pg

    def _tx(self, write: bool = True) -> AbstractContextManager[Any]:
        return self._db.tx(write)

    @contextmanager
    def _count_tx(self) -> Iterator[Any]:
        """A write transaction for counts, committed without waiting for an fsync: a crash of the database
        (or the host) can lose its last counts, never a key."""
        if isinstance(self._db, SQLiteConnection):
            with self._db.tx(synced=False) as cur:
                yield cur
        else:
            with self._db.tx() as cur:
                cur.execute("SET LOCAL synchronous_commit = off")
                yield cur

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s") if self._pg else text

    # -- keys ---------------------------------------------------------------------------------------

    def create_key(self, user: str, label: str = "") -> tuple[KeyInfo, str]:
        """A new key for ``user``: its record and the key, which is shown once and never stored."""
        key_id, secret = secrets.token_hex(8), secrets.token_urlsafe(32)
        info = KeyInfo(key_id, user, label, self._clock(), None, None)
        with self._tx() as cur:
            cur.execute(self._sql("INSERT INTO toolcrib_api_keys (id, user_id, label, digest, created_at)"
                                  " VALUES (?, ?, ?, ?, ?)"), (key_id, user, label, _digest(secret), info.created_at))
        return info, f"{KEY_PREFIX}{key_id}_{secret}"

    def keys(self, user: str | None = None) -> list[KeyInfo]:
        query = f"SELECT {_COLUMNS} FROM toolcrib_api_keys"
        params: tuple[str, ...] = ()
        if user is not None:
            query, params = query + " WHERE user_id = ?", (user,)
        with self._tx(write=False) as cur:
            cur.execute(self._sql(query + " ORDER BY created_at"), params)
            return [KeyInfo(*row) for row in cur.fetchall()]

    def revoke(self, key_id: str) -> bool:
        """Revoke a key by id; False when there is no such active key."""
        with self._tx() as cur:
            cur.execute(self._sql("UPDATE toolcrib_api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL"),
                        (self._clock(), key_id))
            revoked = bool(cur.rowcount)
        self._forget()
        return revoked

    def user_for(self, key: str) -> str | None:
        """The user an active key belongs to, or None. The secret is compared in constant time."""
        match = _KEY.match(key)
        if match is None:
            return None
        key_id, secret = match.groups()
        version = self._version()  # read before the key: a change after it makes the next check forget it
        with self._tx(write=False) as cur:
            cur.execute(self._sql("SELECT user_id, digest, revoked_at FROM toolcrib_api_keys WHERE id = ?"), (key_id,))
            row = cur.fetchone()
        presented = _digest(secret)
        if row is None:
            hmac.compare_digest(presented, presented)  # the same work whether or not the id exists
            return None
        user, digest, revoked_at = row
        if not hmac.compare_digest(presented, digest) or revoked_at is not None:
            return None
        if version is not None:
            with self._known_lock:
                if self._known_at is None:
                    self._known_at = version
                if version == self._known_at:
                    self._known[key_id] = (str(user), str(digest))
        return str(user)

    def remembered_user(self, key: str) -> str | None:
        """The user of an active key this process found before, if nothing was committed to the database
        since (SQLite; a few microseconds, no transaction: fit for the event loop); None when only
        ``user_for`` can say (an unknown, wrong or revoked key, any change since, or PostgreSQL)."""
        match = _KEY.match(key)
        version = self._version()
        if match is None or version is None:
            return None
        key_id, secret = match.groups()
        with self._known_lock:
            if version != self._known_at:
                self._known.clear()
                self._known_at = version
                return None
            known = self._known.get(key_id)
        if known is None or not hmac.compare_digest(_digest(secret), known[1]):
            return None
        return known[0]

    def _version(self) -> int | None:
        """SQLite's ``PRAGMA data_version`` on this process's watching connection; None on PostgreSQL."""
        if not isinstance(self._db, SQLiteConnection):
            return None
        with self._known_lock:
            if self._watch is None or self._watch_pid != os.getpid():
                self._watch = sqlite3.connect(self._db.path, isolation_level=None, check_same_thread=False)
                self._watch_pid = os.getpid()
            return int(self._watch.execute("PRAGMA data_version").fetchone()[0])

    def _forget(self) -> None:
        with self._known_lock:
            self._known.clear()
            self._known_at = None

    # -- rate limits --------------------------------------------------------------------------------

    def hit(self, user: str, window_s: int = 60) -> int:
        """Count one request for ``user`` in the current window; returns the window's count so far (one
        exact count for every process on the database; committed without an fsync)."""
        now = self._clock()
        start = int(now // window_s) * window_s
        with self._count_tx() as cur:
            cur.execute(self._sql("INSERT INTO toolcrib_rate_windows (user_id, window_start, hits) VALUES (?, ?, 1)"
                                  " ON CONFLICT (user_id, window_start) DO UPDATE SET"
                                  " hits = toolcrib_rate_windows.hits + 1 RETURNING hits"), (user, start))
            hits = int(cur.fetchone()[0])
            if hits == 1:  # the first hit of a window clears the user's old windows
                cur.execute(self._sql("DELETE FROM toolcrib_rate_windows WHERE user_id = ? AND window_start < ?"),
                            (user, start))
        return hits

    def add_hits(self, window_start: int, hits: Mapping[str, int]) -> dict[str, int]:
        """Add ``hits`` (runs by user) to the window starting at ``window_start`` in one transaction without
        an fsync, clear older windows, and return every user's count in the window (``RateWindows``)."""
        with self._count_tx() as cur:
            for user, count in hits.items():
                cur.execute(self._sql("INSERT INTO toolcrib_rate_windows (user_id, window_start, hits) VALUES (?, ?, ?)"
                                      " ON CONFLICT (user_id, window_start) DO UPDATE SET"
                                      " hits = toolcrib_rate_windows.hits + EXCLUDED.hits"),
                            (user, window_start, count))
            cur.execute(self._sql("DELETE FROM toolcrib_rate_windows WHERE window_start < ?"), (window_start,))
            cur.execute(self._sql("SELECT user_id, hits FROM toolcrib_rate_windows WHERE window_start = ?"),
                        (window_start,))
            return {str(user): int(count) for user, count in cur.fetchall()}

    def close(self) -> None:
        with self._known_lock:
            if self._watch is not None and self._watch_pid == os.getpid():
                self._watch.close()
            self._watch = None
        self._db.close()

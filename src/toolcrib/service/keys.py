"""API keys and per-user request counts: what the service shares between its processes.

A key is ``tck_<id>_<secret>``; only the SHA-256 of the secret is stored, and a presented key is
compared with it in constant time. Keys and request windows live in a SQLite file under the
workspace's state folder, or in PostgreSQL when ``[policy] dsn`` is set, so every ``toolcrib serve``
process (and host) sees the same keys and the same rate limits. Nothing here imports a web framework:
``toolcrib token`` uses it without the server extra.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
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

    def _tx(self, write: bool = True) -> AbstractContextManager[Any]:
        return self._db.tx(write)

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
            return bool(cur.rowcount)

    def user_for(self, key: str) -> str | None:
        """The user an active key belongs to, or None. The secret is compared in constant time."""
        match = _KEY.match(key)
        if match is None:
            return None
        key_id, secret = match.groups()
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
        return str(user)

    # -- rate limits --------------------------------------------------------------------------------

    def hit(self, user: str, window_s: int = 60) -> int:
        """Count one request for ``user`` in the current window; returns the window's count so far."""
        now = self._clock()
        start = int(now // window_s) * window_s
        with self._tx() as cur:
            cur.execute(self._sql("INSERT INTO toolcrib_rate_windows (user_id, window_start, hits) VALUES (?, ?, 1)"
                                  " ON CONFLICT (user_id, window_start) DO UPDATE SET"
                                  " hits = toolcrib_rate_windows.hits + 1 RETURNING hits"), (user, start))
            hits = int(cur.fetchone()[0])
            if hits == 1:  # the first hit of a window clears the user's old windows
                cur.execute(self._sql("DELETE FROM toolcrib_rate_windows WHERE user_id = ? AND window_start < ?"),
                            (user, start))
        return hits

    def close(self) -> None:
        self._db.close()

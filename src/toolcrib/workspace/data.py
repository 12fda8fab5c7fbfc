"""The workspace's data: its SQLite file (built from ``seed.sql`` when missing), one builder of the
document index at a time, and resources built on first use."""

from __future__ import annotations

import contextlib
import fcntl
import re
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")


def build_database(db: Path) -> None:
    """Build ``db`` from the ``seed.sql`` beside it, when it is missing and there is one."""
    seed = db.with_name("seed.sql")
    if db.exists() or not seed.exists():
        return
    tmp = db.with_suffix(".building")
    tmp.unlink(missing_ok=True)
    script = seed.read_text(encoding="utf-8")
    conn = sqlite3.connect(tmp)
    try:  # one transaction: one fsync instead of one per row
        has_tx = re.search(r"^\s*BEGIN\b", script, re.I | re.M)
        conn.executescript(script if has_tx else f"BEGIN;\n{script}\nCOMMIT;")
    finally:
        conn.close()
    tmp.replace(db)


_BUILD_LOCK = threading.Lock()


@contextlib.contextmanager
def building(lock_file: Path) -> Iterator[None]:
    """Hold the index-build lock: a process-wide lock and an exclusive lock on ``lock_file``."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with _BUILD_LOCK, lock_file.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


class Lazy(Generic[T]):
    """Builds a resource on first attribute access, so runs that never search never load an index."""

    def __init__(self, factory: Callable[[], T]) -> None:
        self._factory = factory
        self._value: T | None = None

    def __getattr__(self, name: str) -> Any:
        if self._value is None:
            self._value = self._factory()
        return getattr(self._value, name)

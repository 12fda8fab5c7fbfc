"""Build the demo workspace's SQLite database from ``seed.sql`` (standard library only)."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import tempfile
from pathlib import Path

SEED = Path(__file__).with_name("seed.sql")


def seed_digest(seed: Path = SEED) -> str:
    """sha256 of the seed script; stored in the database to tell whether it is current."""
    return hashlib.sha256(seed.read_bytes()).hexdigest()


def _current_digest(target: Path) -> str | None:
    try:
        with sqlite3.connect(f"file:{target}?mode=ro", uri=True) as conn:
            row = conn.execute("SELECT value FROM build_info WHERE key = 'seed_sha256'").fetchone()
    except sqlite3.Error:
        return None
    return str(row[0]) if row else None


def build_database(target: Path, *, seed: Path = SEED, reset: bool = False) -> Path:
    """Create ``target`` from the seed script and return it.

    Idempotent: a database already built from the same seed is left as it is (so reservations and
    holds made in it survive); a missing, foreign or outdated one is rebuilt. ``reset=True``
    always rebuilds. The file is written beside the target and moved into place atomically.
    """
    target = Path(target)
    digest = seed_digest(seed)
    if not reset and target.exists() and _current_digest(target) == digest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        conn = sqlite3.connect(tmp)
        try:
            # one transaction: one sync to disk instead of one per statement
            conn.executescript("BEGIN;\n" + seed.read_text(encoding="utf-8") + "\n"
                               "CREATE TABLE build_info (key TEXT PRIMARY KEY, value TEXT NOT NULL);\n"
                               f"INSERT INTO build_info VALUES ('seed_sha256', '{digest}');\nCOMMIT;")
        finally:
            conn.close()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


if __name__ == "__main__":
    import sys

    args = [a for a in sys.argv[1:] if a != "--reset"]
    if not args:  # never beside this file: the package's template is read-only, copies build their own
        sys.exit("usage: python -m toolcrib.demo.workspace.data.build_db TARGET.sqlite [--reset]")
    print(build_database(Path(args[0]), reset="--reset" in sys.argv[1:]))

"""A private PostgreSQL server for fault tests and ``benchmarks/chaos.py``: its own data folder and port,
so that stopping, restarting or killing it disturbs nobody else's database. Made with the machine's
``initdb`` and ``pg_ctl`` (as the ``postgres`` user when run as root, which ``initdb`` refuses). And the
means to stop a server process at an exact point: a lock held in a transaction of one's own, and a way
to see that the process waits for it."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def _binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH, else the newest Debian/Ubuntu install."""
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def available() -> str:
    """Why a private server cannot be made here ("" when it can)."""
    if _binaries() is None:
        return "no initdb/pg_ctl on this machine"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without runuser to drop to the postgres user"
    return ""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivatePostgres:
    """One PostgreSQL server on 127.0.0.1 at a free port, trust authentication, user ``postgres``."""

    def __init__(self) -> None:
        reason = available()
        if reason:
            raise RuntimeError(reason)
        self.bin = _binaries()
        self.root = Path(tempfile.mkdtemp(prefix="toolcrib_pg_"))
        os.chmod(self.root, 0o755)  # the postgres user walks into it when we are root
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.port = _free_port()
        self.data.mkdir()
        self.log.touch()
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.data, "postgres")
            shutil.chown(self.log, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")

    def _run(self, program: str, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin / program), *args] if self.bin else [program, *args]
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=self.root)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr[-2000:]}\n"
                               f"{self.log.read_text(errors='replace')[-2000:]}")
        return done

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c max_connections=200 "
                   "-c fsync=off -c full_page_writes=off")  # a scratch server: the OS does not crash here
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")

    def stop(self, mode: str = "fast") -> None:
        """``fast``: connections are ended, then a clean shutdown; ``immediate``: like a crash (recovery at start)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop")

    def create_database(self, name: str) -> str:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.dsn(), autocommit=True, connect_timeout=3) as conn:
                    conn.execute(f'CREATE DATABASE "{name}"')
                return self.dsn(name)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def close(self) -> None:
        """Stop the server (whatever state it is in) and remove its folder."""
        with contextlib.suppress(RuntimeError, subprocess.TimeoutExpired):  # already stopped
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> PrivatePostgres:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextlib.contextmanager
def holding(dsn: str, statement: str, *params: Any) -> Iterator[None]:
    """A transaction of the caller's own that runs ``statement`` (taking a lock) and holds it until exit."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        conn.execute(statement, params)
        try:
            yield
        finally:
            conn.rollback()


def waiting_on_lock(dsn: str, like: str) -> bool:
    """Some connection waits for a lock in a statement ``LIKE like``."""
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE %s",
                            (like,)).fetchone() is not None


def in_thread(request: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    """Send a request from a thread (its server may be killed meanwhile); the list gets what it returned,
    or the exception it raised."""
    out: list[Any] = []

    def run() -> None:
        try:
            out.append(request())
        except Exception as exc:  # a connection the killed server dropped
            out.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out

"""Real ``toolcrib serve`` processes for end-to-end tests: keys made with ``toolcrib token create``, a free
loopback port, readiness polled on ``/readyz``, the log shown when a server dies or never gets ready,
and the process stopped afterwards."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import HTTPServer
from pathlib import Path

import httpx
import pytest

DESK = f"function:{Path(__file__).parent / 'desk_model.py'}:desk"  # the deterministic demo model


def toolcrib_command() -> str:
    found = Path(sys.executable).parent / "toolcrib"
    return str(found) if found.exists() else (shutil.which("toolcrib") or "toolcrib")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def create_keys(workspace: Path, users: tuple[str, ...]) -> dict[str, str]:
    """An API key for each user, made the way an operator makes one."""
    keys = {}
    for user in users:
        made = subprocess.run([toolcrib_command(), "token", "create", user, "--workspace", str(workspace)],
                              capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        keys[user] = made.stdout.strip()
    return keys


@contextmanager
def serving(workspace: Path, log: Path, *, model: str = DESK, ready_s: float = 60.0) -> Iterator[str]:
    """A ``toolcrib serve`` process on ``workspace``, ready; yields its base URL and stops it afterwards."""
    with serving_process(workspace, log, model=model, ready_s=ready_s) as (url, _):
        yield url


@contextmanager
def serving_process(workspace: Path, log: Path, *, model: str = DESK, ready_s: float = 60.0
                    ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``serving``, yielding the process too (a test may kill it); stopped afterwards if still running."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen([toolcrib_command(), "serve", "--host", "127.0.0.1", "--port", str(port),
                                 "--workspace", str(workspace), "--model", model], stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait_ready(url, proc, log, ready_s)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, ready_s: float) -> None:
    deadline = time.monotonic() + ready_s
    last = "no answer"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"server {url} exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
        try:
            response = httpx.get(f"{url}/readyz", timeout=2)
            if response.status_code == 200:
                return
            last = f"{response.status_code} {response.text}"
        except httpx.HTTPError as exc:
            last = type(exc).__name__
        time.sleep(0.1)  # polling for readiness
    pytest.fail(f"server {url} not ready within {ready_s:g}s ({last}):\n{log.read_text(errors='replace')}")


@contextmanager
def in_thread(server: HTTPServer) -> Iterator[HTTPServer]:
    """An in-process HTTP server answering on a daemon thread; shut down and closed afterwards."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()

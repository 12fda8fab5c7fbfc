"""Test-wide settings: no real network, and toolcrib's writable data in a temporary folder."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest


def pytest_configure(config: pytest.Config) -> None:
    from toolcrib.models import network

    network.ALLOW_NETWORK = False  # only loopback servers may be contacted from tests


@pytest.fixture(scope="session", autouse=True)
def toolcrib_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point TOOLCRIB_HOME at a fresh folder so the demo copy and its state never touch the user's."""
    home = tmp_path_factory.mktemp("toolcrib-home")
    old = os.environ.get("TOOLCRIB_HOME")
    os.environ["TOOLCRIB_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("TOOLCRIB_HOME", None)
    else:
        os.environ["TOOLCRIB_HOME"] = old


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real OpenAI-compatible server on loopback: llama-cpp-python's, running the shipped model."""
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed")
    from toolcrib.models.weights import ensure_model_file

    gguf = Path(ensure_model_file())
    port = _free_port()
    log = tmp_path_factory.mktemp("llama_server") / "server.log"
    env = dict(os.environ, OMP_NUM_THREADS="2")
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--verbose", "False"],
            stdout=sink, stderr=subprocess.STDOUT, env=env,
        )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}: {log.read_text()[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

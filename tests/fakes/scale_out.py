"""``toolcrib cluster up`` in a process of its own, for the scale-out test and ``benchmarks/serve_load.py``."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def cluster_up(run: Path, *options: str, deadline_s: float = 300) -> Iterator[dict[str, Any]]:
    """Start ``toolcrib cluster up OPTIONS`` (free ports, its parts under ``run``), yield its topology (the
    ready file: balancer, processes, model_server, dsn, workspace, logs) once every part answers, and stop
    it with SIGTERM (which stops every part). RuntimeError with its output if it fails to come up."""
    ready, log = run / "ready.json", run / "cluster.log"
    run.mkdir(parents=True, exist_ok=True)
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-c", "from toolcrib.cli import main; main()", "cluster", "up",
                                 "--port", "0", "--ready-file", str(ready), "--dir", str(run / "parts"), *options],
                                stdout=sink, stderr=subprocess.STDOUT)
    try:
        started = time.monotonic()
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"toolcrib cluster up exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
            if time.monotonic() - started > deadline_s:
                raise RuntimeError(f"toolcrib cluster up not ready in {deadline_s:g} s:\n{log.read_text()[-3000:]}")
            time.sleep(0.2)
        yield json.loads(ready.read_text())
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

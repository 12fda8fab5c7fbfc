"""What the service benchmarks share (``serve_load.py``, ``serve_peers.py``, and through ``serve_load``
``chaos.py`` and ``api_fuzz.py``): server processes on loopback, a closed loop of clients, and the
figures they report. Imports nothing of toolcrib at module level: ``serve_peers.py`` runs its PydanticAI
server from the peers' venv, where toolcrib is not installed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def server(command: list[str], log: Path, ready_path: str = "/readyz", deadline_s: float = 60,
           env: Mapping[str, str] | None = None) -> Iterator[str]:
    """Start one server process on a free port (``{port}`` in ``command``; ``env`` added to this
    process's environment), wait until ``ready_path`` answers 200, yield its URL, and stop it."""
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen([part.replace("{port}", str(port)) for part in command],
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + deadline_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{command[0]} exited with {proc.returncode}:\n{log.read_text(errors='replace')}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + ready_path, timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} not ready within {deadline_s:g}s:\n{log.read_text(errors='replace')}")
            time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def toolcrib_serve(ws: Path, model: str) -> list[str]:
    """``toolcrib serve`` of this python's install over ``ws`` with ``model``, on ``{port}``."""
    exe = Path(sys.executable).with_name("toolcrib")
    program = [str(exe)] if exe.exists() else [shutil.which("toolcrib") or "toolcrib"]
    return [*program, "serve", "--host", "127.0.0.1", "--port", "{port}", "--workspace", str(ws), "--model", model]


def make_keys(ws: Path, users: Sequence[str], label: str = "benchmark") -> dict[str, str]:
    """A new API key for each of ``users`` in the workspace's key store."""
    from toolcrib.auth.credentials import service_store
    from toolcrib.workspace import Workspace

    store = service_store(Workspace.open(ws))
    try:
        return {user: store.create_key(user, label)[1] for user in users}
    finally:
        store.close()


class BareAsk(BaseModel):
    question: str


def bare_app(answer: Callable[[str], dict[str, str]]) -> Any:
    """A FastAPI app whose ``POST /v1/ask`` validates the body toolcrib's takes and answers ``answer(question)``:
    the floor of serving a question over HTTP in Python."""
    from fastapi import FastAPI

    app = FastAPI()

    @app.get("/readyz")
    async def ready() -> dict[str, bool]:
        return {"ready": True}

    @app.post("/v1/ask")
    async def ask(body: BareAsk) -> dict[str, str]:
        return answer(body.question)

    return app


@dataclass
class Tally:
    """What a closed loop of clients saw."""

    latencies_ms: dict[str, list[float]] = field(default_factory=lambda: {"json": [], "stream": []})
    statuses: Counter[str] = field(default_factory=Counter)  # "200", "503", "stream_error:busy", "ReadTimeout"
    outcomes: Counter[str] = field(default_factory=Counter)
    run_ids: list[str] = field(default_factory=list)
    tool_calls: int = 0  # tools the answers say ran
    elapsed_s: float = 0.0

    @property
    def requests(self) -> int:
        return sum(self.statuses.values())

    @property
    def errors(self) -> int:
        return self.requests - self.statuses["200"]

    def all_latencies(self) -> list[float]:
        return self.latencies_ms["json"] + self.latencies_ms["stream"]


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def sse_data(body: str) -> Iterator[dict[str, Any]]:
    """The JSON ``data:`` frames of a server-sent event stream."""
    for line in body.splitlines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


def read_stream(body: str) -> tuple[dict[str, Any] | None, str]:
    """The Answer (the ``toolcrib.answer`` frame) of a toolcrib AG-UI stream, or the error code it ended with."""
    answer, error = None, ""
    for frame in sse_data(body):
        if frame.get("type") == "CUSTOM" and frame.get("name") == "toolcrib.answer":
            answer = frame["value"]
        elif frame.get("type") == "RUN_ERROR":
            error = str(frame.get("code", "error"))
    return answer, error or ("no_answer" if answer is None else "")


async def timed(tally: Tally, send: Callable[[], Awaitable[httpx.Response]]) -> tuple[httpx.Response, float] | None:
    """The response to ``send()`` and its milliseconds to the last byte; None (tallied) for an error or a
    status other than 200."""
    started = time.perf_counter()
    try:
        response = await send()
    except httpx.HTTPError as exc:
        tally.statuses[type(exc).__name__] += 1
        return None
    elapsed = (time.perf_counter() - started) * 1000
    if response.status_code != 200:
        tally.statuses[str(response.status_code)] += 1
        return None
    return response, elapsed


async def ask(client: httpx.AsyncClient, key: str, question: str, stream: bool, tally: Tally,
              check: Callable[[dict[str, Any]], str] | None = None) -> None:
    """One toolcrib ``POST /v1/ask``, timed to the last byte, tallied; ``check`` says what is wrong with an
    Answer (tallied as that status instead of "200"), or nothing."""
    headers = {"Authorization": f"Bearer {key}"}
    if stream:
        headers["Accept"] = "text/event-stream"
    sent = await timed(tally, lambda: client.post("/v1/ask", json={"question": question}, headers=headers))
    if sent is None:
        return
    response, elapsed = sent
    if stream:
        answer, error = read_stream(response.text)
        if error:
            tally.statuses[f"stream_error:{error}"] += 1
            return
    else:
        answer = response.json()
    assert answer is not None
    if check is not None and (wrong := check(answer)):
        tally.statuses[wrong] += 1
        return
    tally.statuses["200"] += 1
    tally.latencies_ms["stream" if stream else "json"].append(elapsed)
    tally.outcomes[str(answer.get("outcome", "?"))] += 1
    tally.tool_calls += len(answer.get("executed", []))
    if answer.get("run_id"):
        tally.run_ids.append(str(answer["run_id"]))


async def closed_loop(url: str, clients: int, seconds: float,
                      one: Callable[[httpx.AsyncClient, int, int, Tally], Awaitable[None]]) -> Tally:
    """``clients`` tasks, each sending its next request when the last one has ended, for ``seconds``. Each
    task has its own client (one connection): one httpx pool shared by 50 tasks caps out near 200
    requests/s on its own, which would measure the client instead of the server."""
    tally = Tally()
    started = time.perf_counter()
    deadline = started + seconds

    async def worker(i: int) -> None:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            n = 0
            while time.perf_counter() < deadline:
                await one(client, i, n, tally)
                n += 1

    await asyncio.gather(*(worker(i) for i in range(clients)))
    tally.elapsed_s = time.perf_counter() - started
    return tally


def summary(tally: Tally) -> dict[str, Any]:
    every = tally.all_latencies()
    return {"requests": tally.requests, "requests_per_s": tally.requests / tally.elapsed_s if tally.elapsed_s else 0.0,
            "p50_ms": percentile(every, 0.5), "p95_ms": percentile(every, 0.95),
            "errors": tally.errors, "non_200": {k: v for k, v in tally.statuses.items() if k != "200"}}


def rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 2)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value

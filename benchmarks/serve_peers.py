"""The service's cost per request next to a peer's agent server and a bare endpoint, in one run.

    python benchmarks/serve_peers.py [--seconds 5] [--clients 50] [--no-install] [--baseline-src DIR] [--quick]

Three servers answer the same question ("What does part HLV-2205 cost?") with the same fake model and the
same one tool (``lookup_part`` over an in-memory dict, ``benchmarks/_lookup.py``): the model calls the
tool once, then answers with the price it was shown. Each server is its own uvicorn process on loopback:

- toolcrib: ``toolcrib serve`` (``POST /v1/ask``, JSON and ``Accept: text/event-stream``) as shipped: API
  key auth, the rate limit, the run record, the JSONL trace and the audit all on.
- PydanticAI's AG-UI server: an ``Agent`` with a ``FunctionModel`` (the same fake model) and the tool,
  served the way PydanticAI 2.x documents it (``AGUIAdapter.dispatch_request`` on a Starlette route; 2.0
  removed ``Agent.to_ag_ui()`` and ``AGUIApp`` for it), from the peers' venv ``benchmarks/.peers-venv``
  (made by ``benchmarks/peers.py`` from ``peers-requirements.txt``). A stream of AG-UI events.
- bare: a FastAPI endpoint (``POST /v1/ask``) that validates the body, calls the tool function and answers
  JSON: the floor of serving this over HTTP in Python.

At concurrency 1 and ``--clients`` (closed loop, one connection per client), each for ``--seconds`` in
``--rounds`` turns (the servers alternate, so a machine whose load drifts weighs on each alike): p50
and p95 latency to the last byte, requests/s, and the ratios toolcrib/bare and toolcrib/AG-UI (p50).
Every answer is checked (a price in it; toolcrib's also ``answered`` with one executed call). ``--quick``
``--baseline-src DIR`` (a ``src`` folder of another toolcrib, e.g. ``git archive <commit> src | tar -x``)
adds that version's server as ``base_json`` and ``base_sse``, for a before/after in the same run. ``--quick``
uses the peers' venv only if it exists (the AG-UI figures are null with the reason otherwise). Ends with
one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick
import httpx
from _lookup import QUESTIONS, answer_from, has_price, lookup, part_in
from _serving import (
    Tally,
    ask,
    bare_app,
    closed_loop,
    make_keys,
    percentile,
    rounded,
    server,
    sse_data,
    timed,
    toolcrib_serve,
)

HERE = Path(__file__).resolve().parent
USER = "alice"
MODEL = f"function:{HERE / '_lookup_toolcrib.py'}:model"
FORMS = ("toolcrib_json", "toolcrib_sse", "agui", "bare")

WORKSPACE = """\
[workspace]
name = "serve_peers"
default_user = "alice"
require_evidence = true

[model]
spec = "{model}"

[tools]
modules = ["{tools}"]
builtin = []

[groups.desk]
tools = ["lookup_part"]

[users.alice]
name = "Alice"
tenant = "bench"
groups = ["desk"]

[service]
index_on_start = false
model_slots = 8
queue = {queue}
runs_per_user = {queue}
runs_per_minute = 10000000
"""


# -- the servers ----------------------------------------------------------------------------------------------

def make_workspace(root: Path, clients: int) -> Path:
    root.mkdir(parents=True)
    (root / "toolcrib.toml").write_text(WORKSPACE.format(model=MODEL, tools=HERE / "_lookup_toolcrib.py",
                                                         queue=4 * clients), encoding="utf-8")
    return root


def bare_answer(question: str) -> dict[str, str]:
    """The bare server's answer: the tool called for the question's part, the price read from its result."""
    part = part_in(question) or ""
    return {"text": answer_from(part, json.dumps(lookup(part))), "outcome": "answered"}


def agui_app() -> Any:
    """PydanticAI's AG-UI server for an agent with the fake model and the tool (run in the peers' venv)."""
    from collections.abc import AsyncIterator

    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
    from pydantic_ai.ui.ag_ui import AGUIAdapter
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    def turn(messages: list[ModelMessage]) -> tuple[str, str | None]:
        """The question's part, and the tool result once there is one."""
        question = next(str(p.content) for m in messages for p in m.parts if p.part_kind == "user-prompt")
        results = [p.model_response_str() for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        return part_in(question) or "", results[-1] if results else None

    def fake(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        part, result = turn(messages)
        if result is None:
            return ModelResponse(parts=[ToolCallPart("lookup_part", {"part_number": part}, tool_call_id="call_1")])
        return ModelResponse(parts=[TextPart(answer_from(part, result))])

    async def fake_stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str | DeltaToolCalls]:
        part, result = turn(messages)
        if result is None:
            yield {0: DeltaToolCall("lookup_part", json.dumps({"part_number": part}), tool_call_id="call_1")}
        else:
            yield answer_from(part, result)

    async def lookup_part(part_number: str) -> dict[str, object]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return lookup(part_number)

    agent = Agent(FunctionModel(fake, stream_function=fake_stream))
    agent.tool_plain(lookup_part)

    async def run(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    async def ready(request: Request) -> Response:
        return JSONResponse({"ready": True})

    return Starlette(routes=[Route("/", run, methods=["POST"]), Route("/readyz", ready)])


def peers_python(install: bool) -> tuple[Path | None, str]:
    """The peers' venv python (created and filled by peers.py's code when ``install``), or None and why not."""
    from peers import PEERS_VENV, ensure_peers_venv

    try:
        python = ensure_peers_venv(PEERS_VENV, install)
    except Exception as exc:  # no registry, no network: the AG-UI figures are null, the rest is measured
        return None, f"creating the peers' venv failed: {type(exc).__name__}: {exc}"[:300]
    if not python.exists():
        return None, f"no peers' venv at {PEERS_VENV} (run without --quick or --no-install once to create it)"
    return python, ""


# -- the clients ----------------------------------------------------------------------------------------------

One = Callable[[httpx.AsyncClient, int, int, Tally], Awaitable[None]]


def toolcrib_answer(answer: dict[str, Any]) -> str:
    """What is wrong with a toolcrib Answer to the question (nothing: "")."""
    if answer.get("outcome") != "answered":
        return f"outcome:{answer.get('outcome')}"
    if len(answer.get("executed") or ()) != 1:
        return "not_one_tool_call"
    return "" if has_price(str(answer.get("text", ""))) else "no_price"


def toolcrib_client(key: str, stream: bool) -> One:
    async def one(client: httpx.AsyncClient, i: int, n: int, tally: Tally) -> None:
        await ask(client, key, QUESTIONS[(i + n) % len(QUESTIONS)], stream, tally, toolcrib_answer)
    return one


async def _checked(tally: Tally, kind: str, send: Callable[[], Awaitable[httpx.Response]],
                   text: Callable[[httpx.Response], str]) -> None:
    sent = await timed(tally, send)
    if sent is None:
        return
    if not has_price(text(sent[0])):
        tally.statuses["no_price"] += 1
        return
    tally.statuses["200"] += 1
    tally.outcomes["answered"] += 1
    tally.latencies_ms[kind].append(sent[1])


def agui_text(response: httpx.Response) -> str:
    """The assistant's text of an AG-UI event stream (empty when the run ended in an error)."""
    frames = list(sse_data(response.text))
    if any(f.get("type") == "RUN_ERROR" for f in frames):
        return ""
    return "".join(str(f.get("delta", "")) for f in frames if f.get("type") == "TEXT_MESSAGE_CONTENT")


def agui_client() -> One:
    async def one(client: httpx.AsyncClient, i: int, n: int, tally: Tally) -> None:
        question = QUESTIONS[(i + n) % len(QUESTIONS)]
        body = {"threadId": f"t{i}", "runId": f"r{i}-{n}", "state": {}, "tools": [], "context": [],
                "forwardedProps": {}, "messages": [{"id": f"m{i}-{n}", "role": "user", "content": question}]}
        await _checked(tally, "stream", lambda: client.post(
            "/", json=body, headers={"Accept": "text/event-stream"}), agui_text)
    return one


def bare_client() -> One:
    async def one(client: httpx.AsyncClient, i: int, n: int, tally: Tally) -> None:
        question = QUESTIONS[(i + n) % len(QUESTIONS)]
        await _checked(tally, "json", lambda: client.post("/v1/ask", json={"question": question}),
                       lambda r: str(r.json().get("text", "")))
    return one


def measure(url: str, one: One, clients: int, seconds: float, into: Tally) -> None:
    """One measured stretch of ``seconds`` (after a short warm-up), added to ``into``."""
    asyncio.run(closed_loop(url, clients, min(0.5, seconds), one))  # warm up
    tally = asyncio.run(closed_loop(url, clients, seconds, one))
    for kind, values in tally.latencies_ms.items():
        into.latencies_ms[kind].extend(values)
    into.statuses.update(tally.statuses)
    into.elapsed_s += tally.elapsed_s


def figures_of(tally: Tally) -> dict[str, Any]:
    every = tally.all_latencies()
    return {"requests": tally.requests, "requests_per_s": tally.statuses["200"] / tally.elapsed_s,
            "p50_ms": percentile(every, 0.5), "p95_ms": percentile(every, 0.95), "errors": tally.errors,
            "non_200": {k: v for k, v in tally.statuses.items() if k != "200"}}


def ratio(ours: dict[str, Any] | None, theirs: dict[str, Any] | None) -> float | None:
    if not ours or not theirs or not theirs["p50_ms"] or theirs["p50_ms"] != theirs["p50_ms"]:
        return None
    return float(ours["p50_ms"] / theirs["p50_ms"])


# -- main -----------------------------------------------------------------------------------------------------

def serve_worker(which: str, port: int) -> None:
    import uvicorn

    app = agui_app() if which == "agui" else bare_app(bare_answer)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measured run")
    parser.add_argument("--clients", type=int, default=50, help="the higher concurrency (the lower is 1)")
    parser.add_argument("--rounds", type=int, default=3, help="the servers take turns this many times")
    parser.add_argument("--no-install", action="store_true", help="use the peers' venv as it is")
    parser.add_argument("--baseline-src", type=Path, help="another toolcrib's src folder, measured beside this one")
    parser.add_argument("--serve", choices=("agui", "bare"), help=argparse.SUPPRESS)  # a server's own process
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = _quick.parse(parser, argv, seconds=0.5, clients=4, rounds=1, no_install=True)
    if args.serve:
        serve_worker(args.serve, args.port)
        return 0

    figures: dict[str, Any] = {"benchmark": "serve_peers", "quick": args.quick, "cpus": os.cpu_count(),
                               "load_average_start": [round(x, 2) for x in os.getloadavg()]}
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    python, why = peers_python(not args.no_install)
    figures["agui_skipped"] = why or None
    if why:
        print(f"AG-UI peer not measured: {why}")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(HERE), os.environ.get("PYTHONPATH", "")]))}
    me = str(Path(__file__).resolve())
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="serve_peers_") as tmp_name:
        tmp = Path(tmp_name)
        ws = make_workspace(tmp / "ws", args.clients)
        key = make_keys(ws, [USER], "serve_peers")[USER]
        with contextlib.ExitStack() as stack:
            toolcrib = stack.enter_context(server(toolcrib_serve(ws, MODEL), tmp / "toolcrib.log", env=env))
            bare = stack.enter_context(server([sys.executable, me, "--serve", "bare", "--port", "{port}"],
                                              tmp / "bare.log", env=env))
            urls: dict[str, str | None] = {"toolcrib_json": toolcrib, "toolcrib_sse": toolcrib, "bare": bare}
            clients: dict[str, One] = {"toolcrib_json": toolcrib_client(key, False),
                                       "toolcrib_sse": toolcrib_client(key, True), "agui": agui_client(),
                                       "bare": bare_client()}
            if python is not None:
                urls["agui"] = stack.enter_context(server([str(python), me, "--serve", "agui", "--port", "{port}"],
                                                          tmp / "agui.log", env=env))
            if args.baseline_src is not None:
                base_ws = make_workspace(tmp / "base", args.clients)
                base_key = make_keys(base_ws, [USER], "serve_peers")[USER]
                base_env = {**env, "PYTHONPATH": os.pathsep.join([str(args.baseline_src.resolve()), env["PYTHONPATH"]])}
                urls["base_json"] = urls["base_sse"] = stack.enter_context(
                    server(toolcrib_serve(base_ws, MODEL), tmp / "base.log", env=base_env))
                clients["base_json"] = toolcrib_client(base_key, False)
                clients["base_sse"] = toolcrib_client(base_key, True)
            figures["levels"] = run_levels(urls, clients, args)
    figures["total_s"] = time.perf_counter() - started
    figures["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; total {figures['total_s']:.0f}s")
    print(json.dumps(rounded(figures)))
    errors = sum(f["errors"] for level in figures["levels"].values() for f in level["servers"].values() if f)
    return 1 if errors else 0


def run_levels(urls: dict[str, str | None], clients: dict[str, One], args: argparse.Namespace) -> dict[str, Any]:
    levels: dict[str, Any] = {}
    for concurrency in (1, args.clients):
        print(f"concurrency {concurrency}, {args.seconds:g}s each in {args.rounds} rounds:", flush=True)
        forms = FORMS + (("base_json", "base_sse") if "base_json" in urls else ())
        tallies = {form: Tally() for form in forms if urls.get(form)}
        for _ in range(args.rounds):  # the servers take turns: a load that drifts weighs on each alike
            for form, tally in tallies.items():
                measure(str(urls[form]), clients[form], concurrency, args.seconds / args.rounds, tally)
        servers: dict[str, dict[str, Any] | None] = {}
        for form in forms:
            servers[form] = figures_of(tallies[form]) if form in tallies else None
            if (f := servers[form]) is not None:
                print(f"  {form:14s} p50 {f['p50_ms']:7.2f} ms  p95 {f['p95_ms']:7.2f} ms  "
                      f"{f['requests_per_s']:7.1f} req/s  errors {f['errors']} {f['non_200'] or ''}", flush=True)
            else:
                print(f"  {form:14s} not measured")
        ratios = {"toolcrib_json_over_bare": ratio(servers["toolcrib_json"], servers["bare"]),
                  "toolcrib_sse_over_bare": ratio(servers["toolcrib_sse"], servers["bare"]),
                  "toolcrib_sse_over_agui": ratio(servers["toolcrib_sse"], servers["agui"]),
                  "toolcrib_json_over_agui": ratio(servers["toolcrib_json"], servers["agui"])}
        if "base_json" in servers:
            ratios["toolcrib_json_over_base_json"] = ratio(servers["toolcrib_json"], servers["base_json"])
            ratios["toolcrib_sse_over_base_sse"] = ratio(servers["toolcrib_sse"], servers["base_sse"])
            ratios["base_json_over_bare"] = ratio(servers["base_json"], servers["bare"])
            ratios["base_sse_over_agui"] = ratio(servers["base_sse"], servers["agui"])
        print("  ratios (p50): " + ", ".join(f"{k} {'n/a' if v is None else f'{v:.2f}'}" for k, v in ratios.items()))
        levels[f"c{concurrency}"] = {"servers": servers, "ratios": ratios}
    return levels


if __name__ == "__main__":
    sys.exit(main())

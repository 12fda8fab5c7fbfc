"""Answer quality next to a plain PydanticAI agent: the same model file, tools, users, questions and scorer.

    python benchmarks/answer_peers.py [--sets demo,clinic,check_demo,check_clinic] [--limit N] [--only KIND]
                                      [--systems toolcrib,peer] [--cold] [--no-install] [--quick]

Run it with the project's python (.venv/bin/python). Per question set (``src/toolcrib/evals/sets``; the shipped
``demo`` and ``clinic`` sets and the held-out ``check_demo`` and ``check_clinic``), ``--limit N`` keeps the first
N questions and ``--only`` keeps ids, kinds or attacks (as ``toolcrib eval --only``), for short runs.

- toolcrib: its own eval harness, ``toolcrib eval --questions SET --mode single --json`` (the workspace's
  embedded default model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M on llama.cpp), run as a subprocess on the
  questions chosen; its saved run file gives each question's verdict and latency.
- peer: a plain PydanticAI ``Agent`` (pydantic-ai-slim from ``benchmarks/.peers-venv``, the venv
  ``benchmarks/peers.py`` makes from ``peers-requirements.txt``, run as a worker subprocess in that venv)
  with PydanticAI's own ``OpenAIChatModel`` and ``OpenAICompatibleProvider``, talking to llama-cpp-python's
  OpenAI-compatible server (``python -m llama_cpp.server`` from the project venv, on a free loopback port)
  that hosts the very GGUF file toolcrib runs (``toolcrib.models.weights.ensure_model_file``), with the same
  context size (``toolcrib.models.local.DEFAULT_N_CTX``) and threads (the workspace's ``n_threads``).

The peer's configuration, and why. llama-cpp-python 0.3.36's ``chatml-function-calling`` chat format sends
tool results to the model as an empty tool turn (so no multi-turn tool use), and its ``functionary`` formats
are for Functionary models. The server's default format renders the GGUF's own Qwen2.5 chat template,
which shows the model the tools and its results (``<tool_response>``) properly, but returns the model's
``<tool_call>{"name": ..., "arguments": ...}</tool_call>`` blocks as plain text. So the peer is the server's
default format plus the two smallest adapters a PydanticAI user would write: a ``WrapperModel`` that turns
those blocks (or, in a reply without one, such a JSON object naming an offered tool, bare or fenced: the forms
toolcrib's own text-call parser reads for this model) into PydanticAI tool calls, and an HTTP transport that
sends ``""`` for the ``null`` content of an assistant turn that only calls tools, which the server refuses. The
profile sends ``max_tokens`` (the server ignores ``max_completion_tokens``). Everything else is PydanticAI's
defaults: its tool loop, its retries (1), its handling of unknown tools and malformed arguments. Settings as
toolcrib's: temperature 0, the workspace's ``max_tokens``; usage limits from the workspace's ``[limits]``
(requests = rounds + 1, tool calls, wall time).
Its instructions: the workspace's system prompt, who is asking, today's date (toolcrib tells its model too) and
how to cite. (The server takes a call's arguments only as a string, which the template encodes again: the
model sees its earlier calls' arguments as a JSON string. That is this stack as it is.)

The peer's tools are the workspace's own. For each question the worker gets the asking user's tool set as
the workspace's policy gives it (``groups`` in ``toolcrib.toml``), each with toolcrib's name, description and
JSON Schema (so the mirror cannot drift from ``tools.py``), as ``Tool.from_schema`` tools. Calling one posts it
to a tool bridge in this process (loopback HTTP/JSON), which runs the real tool: the tool's declared argument
validation and domain check (failing, a ``ModelRetry``, as a PydanticAI function tool's validation would),
then the tool function itself (``toolcrib.tools.invoke``: its time bound) with the user's principal and the
workspace's resources: the SQLite data, ``sql_query``'s read-only guard, and ``vector_search``'s retriever with
the user's document access. A WRITE or ACTUATE tool is never run: it is recorded as held for approval, and the
model is told so. None of toolcrib's gate runs for the peer (no grounding, no offer narrowing, no scanner, no
answer review): what it shares with toolcrib is the tools, the data and the access rules.

Scoring. Both are judged by ``toolcrib.evals.scoring.score`` with the workspace's registry. The peer's run is
turned into an ``Answer``: its text; its calls (every ``ToolCallPart`` it made) as executed, refused (by the
tool's validation, or by PydanticAI before any tool ran: an unknown tool, unparsable arguments) or pending
(held for approval); its citations, the ``[id]`` its text cites, read with toolcrib's own parser and kept when
the run retrieved them (a tool result says ``"citation": "lookup_part#1"``, a passage carries its own), an
invented one flagged as toolcrib's answer review flags it. The peer runs a loop, so it is scored as ``loop``
(no single-call rule). A run that fails (a usage limit, the model breaking PydanticAI's retries) scores as the
harness scores a failed toolcrib run. ``peer.passed_if_tools_cited`` also counts the peer's answers as if its
successful tool results had been cited for it, as toolcrib's code cites a tool result an answer rests on: the
part of the gap that is citing, not answering.

Latency: seconds per question, p50. toolcrib's harness first evaluates the prompt starts of the questions'
offers (``--cold`` turns that off); so that both measure a warm workspace, the peer first sends each question's
instructions and tools with a placeholder user message (max_tokens=1, untimed), which leaves that prefix in the
server's cache. The two systems never run at the same time (one model process at a time): every toolcrib set
first, then the model server and every peer set.

Prints a per-set table (passed/count and p50 seconds per system, ratios toolcrib/peer) and ends with one
JSON line: ``{"benchmark": "answer_peers", "sets": {SET: {"toolcrib": {"passed", "count", "p50_s"},
"peer": {...}}}, ...}`` with each question's verdicts and reasons beside. Offline: nothing is downloaded
but the peers' venv, from the configured package index (as ``peers.py``). ``--quick``: the first question of
``demo``, and the peer only where its venv already exists (its figures null with the reason otherwise).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import datetime
import importlib.metadata
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import _quick  # benchmarks/_quick.py: --quick
from peers import PEERS_VENV, ensure_peers_venv

if TYPE_CHECKING:
    from toolcrib.evals.questions import Question, QuestionSet
    from toolcrib.evals.scoring import QuestionResult
    from toolcrib.policy.principal import Principal
    from toolcrib.tools.result import CallOutcome
    from toolcrib.workspace import Workspace

ROOT = Path(__file__).resolve().parents[1]
SETS = ("demo", "clinic", "check_demo", "check_clinic")
SYSTEMS = ("toolcrib", "peer")
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"  # what the model server calls the GGUF
HELD = ("This action changes something, so it needs a person's approval: it was recorded as a proposal "
        "and has NOT been carried out.")
WARM_PROMPT = "Hello"  # the placeholder user message of the peer's untimed warm-up request
PEER_CONFIG = ("pydantic-ai-slim Agent + OpenAIChatModel/OpenAICompatibleProvider -> llama-cpp-python server "
               "(default chat format: the GGUF's Qwen2.5 template) hosting toolcrib's GGUF; <tool_call> text "
               "read back as ToolCallParts by a WrapperModel; null content sent as \"\"; max_tokens; "
               "temperature 0; the workspace's real tools over a loopback bridge, writes held for approval")


# -- peer worker (runs in benchmarks/.peers-venv: PydanticAI, no toolcrib) ----------------------------------

_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_NAME = re.compile(r"""["']name["']\s*:\s*["']([^"']+)["']""")
_DECODER = json.JSONDecoder()
_MAX_CANDIDATES = 256  # objects tried in a reply without <tool_call> blocks


def _call(data: Any) -> tuple[str, dict[str, Any] | str] | None:
    """``(name, arguments)`` of a ``{"name", "arguments"}`` object (``parameters`` also taken); arguments that are
    not a JSON object stay text, for PydanticAI to refuse as it refuses any."""
    if isinstance(data, dict) and isinstance(data.get("function"), dict):  # {"type": "function", "function": {...}}
        data = data["function"]
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    return data["name"], arguments if isinstance(arguments, (dict, str)) else json.dumps(arguments)


def text_tool_calls(text: str, offered: set[str]) -> list[tuple[str, dict[str, Any] | str]]:
    """The tool calls a reply writes as text: Qwen's ``<tool_call>{"name", "arguments"}</tool_call>`` blocks (what
    its chat template asks for); in a reply without one, each JSON object (bare or in a fenced block) naming an
    offered tool, the forms toolcrib's own text-call parser (``toolcrib.models.textcalls``) reads for this model."""
    calls: list[tuple[str, dict[str, Any] | str]] = []
    blocks = [m.group(1).strip() for m in _TOOL_CALL.finditer(text)]
    for block in blocks:
        try:
            found = _call(json.loads(block))
        except ValueError:  # malformed: a call of the tool it names, with arguments PydanticAI will refuse
            named = _NAME.search(block)
            found = (named.group(1), block) if named else None
        if found is not None:
            calls.append(found)
    if blocks:
        return calls
    start = text.find("{")
    for _ in range(_MAX_CANDIDATES):
        if start < 0:
            break
        try:
            data, end = _DECODER.raw_decode(text, start)
        except ValueError:
            end = start + 1
        else:
            found = _call(data)
            if found is not None and found[0] in offered:
                calls.append(found)
            else:
                end = start + 1  # look inside it
        start = text.find("{", end)
    return calls


def _peer_model(url: str, timeout_s: float) -> Any:
    """PydanticAI's OpenAI chat model on the llama.cpp server, with the two adapters the docstring describes."""
    # PydanticAI lives in the peers' venv only: the project's type checker does not see it
    import httpx2
    from pydantic_ai.messages import TextPart, ToolCallPart  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.models.openai import OpenAIChatModel  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.models.wrapper import WrapperModel  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.profiles.openai import OpenAIModelProfile  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.providers.openai_compatible import OpenAICompatibleProvider  # type: ignore[import-not-found, unused-ignore]

    class NoNullContent(httpx2.AsyncBaseTransport):
        """Sends ``""`` where a chat message's content is null: llama-cpp-python's server refuses null."""

        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            if request.method == "POST" and request.url.path.endswith("/chat/completions"):
                body = json.loads(await request.aread())
                for message in body.get("messages") or []:
                    if isinstance(message, dict) and message.get("content", "") is None:
                        message["content"] = ""
                headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "content-length"]
                request = httpx2.Request(request.method, request.url, headers=headers,
                                         content=json.dumps(body).encode(), extensions=request.extensions)
            return await self.inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    class TextToolCalls(WrapperModel):  # type: ignore[misc, unused-ignore]
        """The wrapped model, with the tool calls the server returns as text turned into ToolCallParts."""

        async def request(self, messages: Any, model_settings: Any, model_request_parameters: Any) -> Any:
            response = await super().request(messages, model_settings, model_request_parameters)
            offered = {t.name for t in model_request_parameters.function_tools}
            parts: list[Any] = []
            for part in response.parts:
                calls = text_tool_calls(part.content, offered) if isinstance(part, TextPart) else []
                parts.extend([ToolCallPart(name, arguments) for name, arguments in calls] or [part])
            return dataclasses.replace(response, parts=parts)

    client = httpx2.AsyncClient(transport=NoNullContent(), timeout=timeout_s)
    provider = OpenAICompatibleProvider("llama-cpp", base_url=url, http_client=client,
                                        profile=OpenAIModelProfile(openai_chat_supports_max_completion_tokens=False))
    return TextToolCalls(OpenAIChatModel(MODEL_ALIAS, provider=provider))


async def _peer_question(model: Any, job: dict[str, Any], q: dict[str, Any], bridge: Any) -> dict[str, Any]:
    """One question through a fresh Agent with the user's tools: its text, calls, tokens and seconds."""
    from pydantic_ai import Agent, ModelRetry, RunContext, Tool, capture_run_messages  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.messages import ModelResponse, ToolCallPart  # type: ignore[import-not-found, unused-ignore]
    from pydantic_ai.usage import UsageLimits  # type: ignore[import-not-found, unused-ignore]

    def tool_function(name: str) -> Any:
        async def call(ctx: RunContext[Any], **arguments: Any) -> Any:
            reply = await bridge.post(job["tools_url"], json={"key": q["key"], "tool": name,
                                                              "call_id": ctx.tool_call_id, "arguments": arguments})
            answer = reply.json()
            if answer.get("retry"):
                raise ModelRetry(str(answer.get("message")))
            return answer.get("content")
        return call

    tools = [Tool.from_schema(tool_function(t["name"]), name=t["name"], description=t["description"],
                              json_schema=t["parameters"], takes_ctx=True) for t in q["tools"]]
    settings = {"temperature": 0.0, "max_tokens": q["max_tokens"]}
    agent = Agent(model, instructions=q["instructions"], tools=tools, model_settings=settings)
    limits = q["limits"]
    if job.get("warm"):  # the prefix (instructions, tools) into the server's cache, untimed; see the docstring
        with contextlib.suppress(Exception):
            await agent.run(WARM_PROMPT, model_settings={**settings, "max_tokens": 1},
                            usage_limits=UsageLimits(request_limit=1))
    error = ""
    text = ""
    started = time.perf_counter()
    with capture_run_messages() as messages:
        try:
            result = await agent.run(q["question"], usage_limits=UsageLimits(
                request_limit=limits["rounds"] + 1, tool_calls_limit=limits["tool_calls"]), timeout=limits["wall_s"])
            text = str(result.output)
        except Exception as exc:  # a usage limit, retries used up, a timeout: the run failed
            error = f"{type(exc).__name__}: {exc}"[:400]
    seconds = time.perf_counter() - started
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    proposals: list[dict[str, Any]] = []
    for part in (p for m in responses for p in m.parts if isinstance(p, ToolCallPart)):
        try:
            arguments, parse_error = part.args_as_dict(), ""
        except Exception as exc:
            arguments, parse_error = {}, f"arguments are not a JSON object ({type(exc).__name__})"
        proposals.append({"id": part.tool_call_id, "name": part.tool_name, "arguments": arguments,
                          "parse_error": parse_error})
    out = {"key": q["key"], "text": text, "error": error, "seconds": round(seconds, 3), "proposals": proposals,
           "model_requests": len(responses), "tokens_in": sum(m.usage.input_tokens for m in responses),
           "tokens_out": sum(m.usage.output_tokens for m in responses)}
    if job.get("transcripts"):  # --logs: every message of the run, as PydanticAI keeps them
        from pydantic_core import to_jsonable_python

        out["transcript"] = to_jsonable_python(messages)
    return out


async def _peer_worker(job: dict[str, Any]) -> dict[str, Any]:
    import httpx2

    model = _peer_model(job["model_url"], max([float(q["limits"]["wall_s"]) for q in job["questions"]] or [180.0]))
    results = []
    async with httpx2.AsyncClient(timeout=60.0) as bridge:
        for n, q in enumerate(job["questions"], start=1):
            result = await _peer_question(model, job, q, bridge)
            results.append(result)
            print(f"[peer] {n}/{len(job['questions'])} {q['key']:<44} {result['seconds']:6.1f}s "
                  f"{result['error'][:80]}", file=sys.stderr, flush=True)
    versions = {d: importlib.metadata.version(d) for d in ("pydantic-ai-slim", "openai")}
    return {"results": results, "versions": versions}


# -- the tool bridge (this process: the workspace's real tools, for the peer) -------------------------------

@dataclasses.dataclass
class PeerRun:
    """One peer question's side of the bridge: who asks, in which workspace, and every call it made."""

    ws: Workspace
    principal: Principal
    outcomes: list[CallOutcome] = dataclasses.field(default_factory=list)
    tool_results: dict[str, CallOutcome] = dataclasses.field(default_factory=dict)  # by citation: "lookup_part#1"


class ToolBridge:
    """Runs a peer's tool calls with the workspace's real tools, as the user who asked (see the docstring)."""

    def __init__(self) -> None:
        self.runs: dict[str, PeerRun] = {}
        self._lock = threading.Lock()  # one call at a time: the calls are short, their records stay in order
        self._server: ThreadingHTTPServer | None = None

    def call(self, body: dict[str, Any]) -> dict[str, Any]:
        from toolcrib.errors import InvalidArguments, ModelFacingError, NotPermitted
        from toolcrib.models.base import ToolCall
        from toolcrib.retrieval.evidence import Evidence
        from toolcrib.tools.invoke import invoke
        from toolcrib.tools.result import CallOutcome, Status, ok_payload
        from toolcrib.tools.tool import Effect, ToolContext

        run = self.runs[str(body["key"])]
        arguments = body.get("arguments")
        call = ToolCall(str(body["call_id"]), str(body["tool"]), dict(arguments) if isinstance(arguments, dict) else {})
        tool = run.ws.registry.get(call.name)
        ctx = ToolContext(principal=run.principal, resources=run.ws.resources)
        with self._lock:
            try:
                if tool is None or not run.ws.policy.offers(run.principal, tool):
                    raise NotPermitted(f"{call.name} is not available to you")
                values = tool.validate(call.arguments, ctx)  # its schema and domain check, as declared
            except ModelFacingError as exc:
                run.outcomes.append(CallOutcome(call, "refused", exc.to_result()))
                return {"status": "refused", "retry": True, "message": exc.message}
            if tool.effect is not Effect.READ:
                run.outcomes.append(CallOutcome(call, "approval_required", {"ok": False, "error": {
                    "code": "approval_required", "message": HELD}}, effect=tool.effect.value))
                return {"status": "approval_required", "content": {"held_for_approval": True, "message": HELD}}
            try:
                value = asyncio.run(invoke(tool, tool.bind(values, ctx)))
            except ModelFacingError as exc:
                status: Status = "refused" if isinstance(exc, (NotPermitted, InvalidArguments)) else "error"
                run.outcomes.append(CallOutcome(call, status, exc.to_result(), effect="read"))
                return {"status": status, "content": {"error": exc.message}}
            payload = ok_payload(call.name, value, tool.max_result_chars or run.ws.config.tools.max_result_chars)
            outcome = CallOutcome(call, "ok", payload, effect="read")
            run.outcomes.append(outcome)
            data = payload["data"]
            if Evidence.from_payload(data) is not None:  # a document search: each passage carries its citation
                return {"status": "ok", "content": data}
            citation = f"{call.name}#{len(run.tool_results) + 1}"  # numbered as toolcrib numbers its tool results
            run.tool_results[citation] = outcome
            return {"status": "ok", "content": {"citation": citation, "result": data}}

    @contextlib.contextmanager
    def serving(self) -> Iterator[str]:
        """The bridge on a free loopback port, for the duration: its URL."""
        bridge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                try:
                    reply = bridge.call(body)
                except Exception as exc:  # a bridge bug, not the model's doing: the tool result says so
                    reply = {"status": "error", "content": {"error": f"bridge failed: {type(exc).__name__}: {exc}"}}
                data = json.dumps(reply, ensure_ascii=False, default=str).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # no access log on stderr
                return

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}/call"
        finally:
            server.shutdown()
            server.server_close()


# -- the model server --------------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def model_server(threads: int, n_ctx: int, log: Path, ready_s: float = 300.0) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server with toolcrib's GGUF, default chat format: its ``/v1`` URL."""
    from toolcrib.models.weights import ensure_model_file

    gguf = ensure_model_file()
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ALIAS,
               "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
               "--n_threads_batch", str(threads), "--verbose", "False"]
    with log.open("ab") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + ready_s
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the model server exited with {proc.returncode}; its log: {log}")
            with contextlib.suppress(OSError), urllib.request.urlopen(url + "/models", timeout=2) as reply:
                if reply.status == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the model server was not ready within {ready_s:g} s; its log: {log}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# -- driver ------------------------------------------------------------------------------------------------

@dataclasses.dataclass
class SetRun:
    """One question set: its questions as chosen, its workspace, and each system's verdicts."""

    name: str
    qset: QuestionSet
    ws: Workspace
    results: dict[str, list[QuestionResult]] = dataclasses.field(default_factory=dict)
    reasons: dict[str, str] = dataclasses.field(default_factory=dict)  # system -> why it has no figures
    extra: dict[str, dict[str, Any]] = dataclasses.field(default_factory=dict)


def select(qset: QuestionSet, only: list[str], limit: int | None) -> QuestionSet:
    """``toolcrib eval``'s selection: ids, kinds or attacks in ``only``, then the first ``limit``."""
    chosen = [q for q in qset.questions if not only or q.id in only or q.kind in only or (q.attack or "") in only]
    return dataclasses.replace(qset, questions=tuple(chosen[:limit] if limit else chosen))


def _skipped(q: Question, ws: Workspace) -> str:
    """Why the harness would skip ``q`` in ``ws`` (its ``_skip_reason``), or ""."""
    missing = [t for t in q.needs if t not in ws.registry]
    if missing:
        return f"tool not registered in this workspace: {', '.join(missing)}"
    if q.user and ws.config.users and q.user not in ws.config.users:
        return f"user '{q.user}' is not configured in this workspace"
    return ""


def run_toolcrib(s: SetRun, cold: bool, timeout_s: float) -> None:
    """``toolcrib eval`` on the chosen questions (a subprocess: the harness as users run it); its run file read."""
    from toolcrib.evals.scoring import QuestionResult

    command = [str(Path(sys.executable).with_name("toolcrib")), "eval", "--questions", s.name, "--mode", "single",
               "--json", *(["--cold"] if cold else [])]
    for q in s.qset.questions:
        command += ["--only", q.id]
    print(f"toolcrib: {s.name}, {len(s.qset)} questions ...", file=sys.stderr, flush=True)
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=timeout_s, cwd=ROOT)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            s.reasons["toolcrib"] = f"toolcrib eval exited {done.returncode}: {done.stdout.strip()[-300:]}"
            return
        headline = json.loads(lines[-1])
        saved = json.loads(Path(headline["path"]).read_text(encoding="utf-8"))
    except subprocess.TimeoutExpired:
        s.reasons["toolcrib"] = f"toolcrib eval ran past {timeout_s:g} s"
        return
    except (OSError, ValueError, KeyError, TypeError) as exc:
        s.reasons["toolcrib"] = f"toolcrib eval's result could not be read: {type(exc).__name__}: {exc}"
        return
    s.results["toolcrib"] = [QuestionResult.from_dict(q) for q in saved["questions"]]
    s.extra["toolcrib"] = {"run_id": headline.get("run_id"), "prefill_ms": headline.get("prefill_ms")}


def _instructions(ws: Workspace, principal: Principal) -> str:
    """What a plain agent for this workspace is told: the workspace's own system prompt, who is asking, today's
    date (toolcrib tells its model too), and how to cite what the tools return."""
    who = principal.display_name or principal.user_id
    return (f"{ws.config.workspace.system_prompt.strip()}\n\n"
            f"The signed-in user is {who} (user id {principal.user_id}). "
            f"Today is {datetime.date.today().isoformat()}.\n"
            "Cite every fact you use in square brackets with the citation id it came with: a tool result's "
            "\"citation\" (such as [tool_name#1]) or a document passage's \"citation\" (such as [doc-id#c2]).")


def peer_job(sets: list[SetRun], bridge: ToolBridge, tools_url: str, model_url: str, warm: bool) -> dict[str, Any]:
    """The worker's job: every question (not skipped) with its user's instructions and tools; each registered
    with the bridge under its key."""
    questions = []
    for s in sets:
        for q in s.qset.questions:
            if _skipped(q, s.ws):
                continue
            principal = s.ws.principal(q.user)
            key = f"{s.name}/{q.id}"
            bridge.runs[key] = PeerRun(s.ws, principal)
            tools = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                     for t in s.ws.registry if s.ws.policy.offers(principal, t)]
            limits = s.ws.config.limits
            questions.append({"key": key, "question": q.question, "instructions": _instructions(s.ws, principal),
                              "tools": tools, "max_tokens": s.ws.config.model.max_tokens,
                              "limits": {"rounds": limits.rounds, "tool_calls": limits.tool_calls,
                                         "wall_s": limits.wall_s}})
    return {"model_url": model_url, "tools_url": tools_url, "questions": questions, "warm": warm}


def peer_answer(q: Question, s: SetRun, run: PeerRun, result: dict[str, Any], cite_tools: bool) -> QuestionResult:
    """Score one peer run with toolcrib's scorer: its calls and citations as an ``Answer`` (see the docstring)."""
    from toolcrib.agent.answer import Answer
    from toolcrib.evals.scoring import QuestionResult, score
    from toolcrib.models.base import ToolCall
    from toolcrib.retrieval.citations import Citation, citations_in
    from toolcrib.retrieval.evidence import Evidence
    from toolcrib.tools.result import CallOutcome

    if result["error"]:  # as the harness scores a run that failed
        failed = QuestionResult(q.id, q.kind, q.user, q.question, attack=q.attack, must_abstain=q.must_abstain,
                                must_refuse=q.must_refuse, outcome="error", answer="", ms=result["seconds"] * 1000)
        failed.reasons.append(f"the run failed: {result['error']}")
        failed.answer_correct = False
        return failed
    ran = {o.call.id: o for o in run.outcomes}
    outcomes: list[CallOutcome] = []
    for p in result["proposals"]:
        found = ran.get(p["id"])
        if found is None:  # PydanticAI turned it down before any tool ran: an unknown tool, arguments not JSON
            why = p["parse_error"] or f"{p['name']} was not run by the agent"
            found = CallOutcome(ToolCall(p["id"], p["name"], p["arguments"], parse_error=p["parse_error"] or None),
                                "refused", {"ok": False, "error": {"code": "not_run", "message": why}})
        outcomes.append(found)
    searches = [Evidence.from_payload(o.payload.get("data")) for o in outcomes if o.ok]
    passages = {p.citation: p for e in searches if e is not None for p in e.passages}
    citations: list[Citation] = []
    flags: list[str] = []
    for cid in dict.fromkeys(citations_in(result["text"])):
        if cid in passages:
            citations.append(Citation(cid, "passage", passages[cid].source, passages[cid].text[:200]))
        elif cid in run.tool_results:
            citations.append(Citation(cid, "tool", run.tool_results[cid].call.name))
        else:
            flags.append(f"removed citation [{cid}]: not retrieved in this run")
    if cite_tools:  # as toolcrib's code cites each tool result an answer rests on (not one that found nothing)
        cited = {c.id for c in citations}
        citations += [Citation(cid, "tool", o.call.name) for cid, o in run.tool_results.items()
                      if cid not in cited and not o.found_nothing]
    answer = Answer(result["text"], citations=citations, outcome="answered",
                    executed=[o.summary() for o in outcomes if o.status in ("ok", "error")],
                    refused=[o.summary() for o in outcomes if o.status == "refused"],
                    pending=[o.summary() for o in outcomes if o.status == "approval_required"], flags=flags,
                    model_decided_steps=result["model_requests"], tokens_in=result["tokens_in"],
                    tokens_out=result["tokens_out"], ms=result["seconds"] * 1000)
    return score(q, answer, outcomes=outcomes, events=[], registry=s.ws.registry, mode="loop")


def run_peer(sets: list[SetRun], python: Path, warm: bool, timeout_s: float, log_dir: Path, keep_logs: bool) -> None:
    """The model server, the bridge and the worker, for every set; then each answer scored."""
    from toolcrib.evals.scoring import QuestionResult
    from toolcrib.models.local import DEFAULT_N_CTX

    threads = int(sets[0].ws.config.model.settings.get("n_threads", 2))
    bridge = ToolBridge()
    for s in sets:  # the document index and the embedder loaded before anything is timed
        if "retriever" in s.ws.resources:
            s.ws.resources["retriever"].retrieve("warm up", ["*"], 1)
    print(f"peer: the model server ({threads} threads) and {sum(len(s.qset) for s in sets)} questions ...",
          file=sys.stderr, flush=True)
    try:
        with model_server(threads, DEFAULT_N_CTX, log_dir / "model_server.log") as model_url, \
                bridge.serving() as tools_url:
            job = peer_job(sets, bridge, tools_url, model_url, warm)
            job["transcripts"] = keep_logs
            job_file = log_dir / "peer_job.json"
            job_file.write_text(json.dumps(job), encoding="utf-8")
            env = {**os.environ, "PYTHONWARNINGS": "ignore", "OTEL_SDK_DISABLED": "true"}
            done = subprocess.run([str(python), __file__, "--worker", str(job_file)], stdout=subprocess.PIPE,
                                  text=True, timeout=timeout_s, env=env, cwd=ROOT)
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines:
            raise RuntimeError(f"the peer worker exited {done.returncode}: {done.stdout.strip()[-300:]}")
        answers = json.loads(lines[-1])
    except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        for s in sets:
            s.reasons["peer"] = f"{type(exc).__name__}: {exc}"[:400]
        return
    by_key = {r["key"]: r for r in answers["results"]}
    if keep_logs:
        transcripts = {key: r.pop("transcript", None) for key, r in by_key.items()}
        (log_dir / "peer_transcripts.json").write_text(json.dumps(transcripts, indent=1, ensure_ascii=False),
                                                       encoding="utf-8")
    for s in sets:
        scored: list[QuestionResult] = []
        cited = 0
        for q in s.qset.questions:
            key = f"{s.name}/{q.id}"
            reason = _skipped(q, s.ws)
            if reason or key not in by_key:
                scored.append(QuestionResult(q.id, q.kind, q.user, q.question, attack=q.attack,
                                             must_abstain=q.must_abstain, must_refuse=q.must_refuse,
                                             skipped=reason or "no answer from the worker"))
                continue
            scored.append(peer_answer(q, s, bridge.runs[key], by_key[key], cite_tools=False))
            cited += peer_answer(q, s, bridge.runs[key], by_key[key], cite_tools=True).passed
        s.results["peer"] = scored
        s.extra["peer"] = {"passed_if_tools_cited": cited, "versions": answers.get("versions")}


def figures(s: SetRun, system: str) -> dict[str, Any]:
    """passed, count (questions run, skipped ones aside) and p50 seconds; nulls with the reason if none."""
    if system not in s.results:
        return {"passed": None, "count": None, "p50_s": None, "reason": s.reasons.get(system, "not run")}
    results = [r for r in s.results[system] if not r.skipped]
    seconds = [r.ms / 1000 for r in results]
    out: dict[str, Any] = {"passed": sum(r.passed for r in results), "count": len(results),
                           "p50_s": round(statistics.median(seconds), 2) if seconds else None,
                           "skipped": sum(1 for r in s.results[system] if r.skipped), **s.extra.get(system, {})}
    return out


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a is not None and b else None


def report(sets: list[SetRun], args: argparse.Namespace, started: float) -> dict[str, Any]:
    print("\nanswer quality, same model: toolcrib (eval harness, single mode) vs a plain PydanticAI agent")
    print(f"{'set':<14}{'toolcrib':>12}{'peer':>12}{'pass x':>8}{'p50 s tc':>10}{'p50 s peer':>12}{'p50 x':>8}"
          f"{'peer, tools cited':>19}")
    out: dict[str, Any] = {}
    for s in sets:
        tc, peer = figures(s, "toolcrib"), figures(s, "peer")

        def cell(f: dict[str, Any]) -> str:
            return "n/a" if f["passed"] is None else f"{f['passed']}/{f['count']}"

        def secs(f: dict[str, Any]) -> str:
            return "n/a" if f["p50_s"] is None else f"{f['p50_s']:.1f}"

        pass_ratio = _ratio(tc["passed"], peer["passed"])
        time_ratio = _ratio(tc["p50_s"], peer["p50_s"])
        cited = peer.get("passed_if_tools_cited")
        print(f"{s.name:<14}{cell(tc):>12}{cell(peer):>12}{'-' if pass_ratio is None else pass_ratio:>8}"
              f"{secs(tc):>10}{secs(peer):>12}{'-' if time_ratio is None else time_ratio:>8}"
              f"{'-' if cited is None else str(cited) + '/' + str(peer['count']):>19}")
        questions = []
        for q in s.qset.questions:
            row: dict[str, Any] = {"id": q.id, "kind": q.kind}
            for system in SYSTEMS:
                found = next((r for r in s.results.get(system, []) if r.id == q.id), None)
                row[system] = None if found is None else {
                    "passed": found.passed, "s": round(found.ms / 1000, 2), "skipped": found.skipped or None,
                    "reasons": found.reasons[:4], "answer": found.answer[:300],
                    "calls": [f"{c['name']}:{c['status']}" for c in found.proposed]}
            questions.append(row)
        out[s.name] = {"toolcrib": tc, "peer": peer, "toolcrib_over_peer": {"passed": pass_ratio, "p50_s": time_ratio},
                       "questions": questions}
    for s in sets:
        for system, reason in s.reasons.items():
            print(f"  {s.name} {system}: not measured: {reason}")
    print("pass x: toolcrib passed / peer passed; p50 x: toolcrib p50 / peer p50 (same machine, one after the "
          "other); peer, tools cited: the peer's passes had its tool results been cited for it")
    return {"benchmark": "answer_peers", "sets": out, "limit": args.limit, "only": args.only, "quick": args.quick,
            "cold": args.cold, "model": MODEL_ALIAS, "peer_config": PEER_CONFIG, "cpus": os.cpu_count(),
            "loadavg_end": [round(x, 2) for x in os.getloadavg()], "seconds": round(time.perf_counter() - started, 1)}


def drive(args: argparse.Namespace) -> None:
    from toolcrib.evals.questions import load_questions
    from toolcrib.workspace import Workspace

    started = time.perf_counter()
    systems = [x for x in args.systems.split(",") if x]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        sys.exit(f"unknown system(s): {', '.join(sorted(unknown))}; choose from {', '.join(SYSTEMS)}")
    names = [x for x in args.sets.split(",") if x]
    sets = []
    for name in names:
        qset = select(load_questions(name), args.only, args.limit)
        sets.append(SetRun(name, qset, Workspace.open(template=qset.workspace)))
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)",
          file=sys.stderr)
    if "toolcrib" in systems:
        for s in sets:
            run_toolcrib(s, args.cold, args.timeout)
    if "peer" in systems:
        python = ensure_peers_venv(args.venv, not args.no_install)
        if not python.exists():
            for s in sets:
                s.reasons["peer"] = f"no peers' venv at {args.venv} (run once without --quick or --no-install)"
        else:
            with tempfile.TemporaryDirectory(prefix="answer_peers-") as tmp:
                log_dir = Path(args.logs) if args.logs else Path(tmp)
                log_dir.mkdir(parents=True, exist_ok=True)
                run_peer(sets, python, not args.cold, args.timeout, log_dir, bool(args.logs))
    print(json.dumps(report(sets, args, started), ensure_ascii=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", default=",".join(SETS), help=f"question sets, comma-separated (default: all of "
                        f"{', '.join(SETS)})")
    parser.add_argument("--limit", type=int, default=None, help="the first N questions of each set")
    parser.add_argument("--only", action="append", default=[], help="question ids, kinds or attacks (repeatable)")
    parser.add_argument("--systems", default=",".join(SYSTEMS), help="toolcrib, peer, or both (default)")
    parser.add_argument("--cold", action="store_true", help="no prompt preparation on either side")
    parser.add_argument("--venv", type=Path, default=PEERS_VENV, help="the peers' venv (created if missing)")
    parser.add_argument("--no-install", action="store_true", help="use the peers' venv as it is")
    parser.add_argument("--timeout", type=float, default=14400.0,
                        help="seconds a system may take over all the chosen questions before it is given up")
    parser.add_argument("--logs", help="keep the model server's log, the peer's job and its transcripts here")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = _quick.parse(parser, sets="demo", limit=1, no_install=True)
    if args.worker:  # in the peers' venv: the JSON line is the last line of stdout, progress on stderr
        job = json.loads(Path(args.worker).read_text(encoding="utf-8"))
        with contextlib.redirect_stdout(sys.stderr):
            result = asyncio.run(_peer_worker(job))
        print(json.dumps(result, ensure_ascii=False))
        return
    drive(args)


if __name__ == "__main__":
    main()

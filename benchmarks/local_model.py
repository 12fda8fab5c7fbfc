"""Benchmark the embedded model: load time, first-call latency, decision latency, tool-selection accuracy, RSS.

Run: python benchmarks/local_model.py [--threads N] [--threads-batch N]
Prints one line per prompt, the figures, and finally one JSON line with every figure.

``--demo`` instead asks whole questions (decision + final answer) on the shipped demo workspace, the
way ``toolcrib ask`` does: each in a fresh process (``--no-one-process`` to skip the rest), then all
in one process (``--no-fresh`` to skip the first); it checks every answer. ``--setting KEY=VALUE``
passes model settings (e.g. ``prompt_cache=off``). TOOLCRIB_HOME defaults to a new temporary folder.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

import _quick  # benchmarks/_quick.py: --quick

from toolcrib.agent.sync import run_sync
from toolcrib.models.base import Completion, Message, Model, ModelSettings, ToolSpec
from toolcrib.models.local import LocalModel
from toolcrib.models.weights import ensure_model_file

if TYPE_CHECKING:
    from toolcrib.workspace import Workspace


def _tool(name: str, description: str, **params: str) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": {key: {"type": "string", "description": text} for key, text in params.items()},
            "required": list(params),
            "additionalProperties": False,
        },
    )


TOOLS = [
    _tool("get_order_status", "Current status, carrier and delivery date of a customer order.", order_id="order id"),
    _tool("lookup_part", "Catalogue entry of a part: name, price and description.", part_number="part number"),
    _tool("check_stock", "Units of a part in stock at one warehouse.", part_number="part number",
          warehouse="warehouse name"),
    _tool("search_documents", "Search manuals, policies and datasheets for passages.", query="search text"),
    _tool("cancel_order", "Cancel a customer order (needs approval).", order_id="order id"),
]

# (question, expected tool or None for a direct answer, expected arguments)
PROMPTS: list[tuple[str, str | None, dict[str, str]]] = [
    ("What's the status of order ORD-1001?", "get_order_status", {"order_id": "ORD-1001"}),
    ("What does part HLV-2205 cost?", "lookup_part", {"part_number": "HLV-2205"}),
    ("Has order SO-77812 shipped yet?", "get_order_status", {"order_id": "SO-77812"}),
    ("How many units of BRK-0042 are in the Leeds warehouse?", "check_stock",
     {"part_number": "BRK-0042", "warehouse": "Leeds"}),
    ("Please cancel order ORD-3310, the customer changed their mind.", "cancel_order", {"order_id": "ORD-3310"}),
    ("What does the returns policy say about opened items?", "search_documents", {}),
    ("Describe part VLV-118 for me.", "lookup_part", {"part_number": "VLV-118"}),
    ("What is 2+2? Answer directly", None, {}),
    ("Hello! Who are you?", None, {}),
    ("Find the torque spec for the M8 bolts in the pump manual.", "search_documents", {}),
    ("Is stock of HLV-2205 available in Rotterdam?", "check_stock",
     {"part_number": "HLV-2205", "warehouse": "Rotterdam"}),
    ("When will order 2026-55-A arrive?", "get_order_status", {"order_id": "2026-55-A"}),
]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

# --- --demo: whole `toolcrib ask` questions on the shipped demo workspace -----------------------

# (question, what the answer must contain (all, case-insensitive), what it must not contain)
DEMO_QUESTIONS: list[tuple[str, tuple[str, ...], tuple[str, ...]]] = [
    ("What's the status of order ORD-1001?", ("shipped",), ()),
    ("How much does part HLV-2205 cost?", ("52",), ()),
    ("How many F2 filters do we have in stock?", ("5",), ()),
    ("What was the last recorded temperature on channel C?", ("24.1", "09:00"), ()),
    ("How much does part HLV-9999 cost?", (), ("$",)),
    ("Does the library have The Art of Electronics? Don't place a hold.", ("yes",), ()),
]


class _Recording(Model):
    """The real model, with every completion kept for the report, and the tokens llama.cpp evaluated."""

    def __init__(self, inner: LocalModel) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls: list[Completion] = []
        self.evaluated: list[tuple[int, float]] = []  # per call: prompt tokens really evaluated, eval ms
        _count_evaluations()

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                       settings: ModelSettings | None = None) -> Completion:
        before = _EVALUATED.copy()
        reply = await self.inner.complete(messages, tools, settings)
        # every eval() call but one per generated token is prompt evaluation
        tokens = _EVALUATED["tokens"] - before["tokens"] - max(0, reply.tokens_out - 1)
        self.evaluated.append((int(tokens), _EVALUATED["ms"] - before["ms"]))
        self.calls.append(reply)
        return reply


_EVALUATED: dict[str, float] = {"tokens": 0, "ms": 0.0}


def _count_evaluations() -> None:
    """Count the tokens llama.cpp evaluates (prompt and generated) and the time it takes."""
    from llama_cpp import Llama

    if getattr(Llama.eval, "_counted", False):
        return
    original = Llama.eval

    def counted(self: Llama, tokens: Any) -> None:
        started = time.perf_counter()
        original(self, tokens)
        _EVALUATED["tokens"] += len(tokens)
        _EVALUATED["ms"] += (time.perf_counter() - started) * 1000

    counted._counted = True  # type: ignore[attr-defined]
    Llama.eval = counted  # type: ignore[method-assign]


def _demo_model(settings: dict[str, Any]) -> LocalModel:
    from toolcrib.workspace import Workspace

    merged = {**Workspace.open(None).config.model.settings, **{k: v for k, v in settings.items() if v is not None}}
    return LocalModel.from_spec("", merged)


def _ask_one(ws: Workspace, model: _Recording, question: str, must: tuple[str, ...],
             must_not: tuple[str, ...]) -> dict[str, Any]:
    before = len(model.calls)
    started = time.perf_counter()
    answer = ws.runner(model).ask(question, ws.principal("alice"))
    wall = time.perf_counter() - started
    calls = model.calls[before:]
    text = answer.text
    correct = all(m.lower() in text.lower() for m in must) and not any(m in text for m in must_not)
    return {
        "question": question,
        "ask_s": round(wall, 2),
        "model_calls": [{"tokens_in": c.tokens_in, "evaluated": e[0], "tokens_out": c.tokens_out,
                         "s": round(c.ms / 1000, 2), "eval_s": round(e[1] / 1000, 2),
                         "tool": c.tool_calls[0].name if c.tool_calls else None}
                        for c, e in zip(calls, model.evaluated[before:], strict=True)],
        "evaluated": sum(e[0] for e in model.evaluated[before:]),
        "model_s": round(sum(c.ms for c in calls) / 1000, 2),
        "tokens_in": sum(c.tokens_in for c in calls),
        "correct": correct,
        "answer": text[:160],
    }


def _demo_question(question_index: int, settings: dict[str, Any]) -> None:
    """One question in this (fresh) process: what a `toolcrib ask` invocation costs."""
    from toolcrib.workspace import Workspace

    started = time.perf_counter()
    ws = Workspace.open(None)
    model = _Recording(_demo_model(settings))
    load_ms = model.inner.load()
    row = _ask_one(ws, model, *DEMO_QUESTIONS[question_index])
    row["load_s"] = round(load_ms / 1000, 2)
    row["process_s"] = round(time.perf_counter() - started, 2)  # open + load + ask (not interpreter start-up)
    print(json.dumps(row))


def _print_row(row: dict[str, Any]) -> None:
    calls = " + ".join(f"{c['evaluated']}/{c['tokens_in']}in,{c['tokens_out']}out {c['s']}s"
                       for c in row["model_calls"])
    print(f"{row['ask_s']:7.1f} s  {'ok ' if row['correct'] else 'BAD'}  {row['question'][:48]:48}  [{calls}]  "
          f"{row['answer'][:70]!r}", flush=True)


def demo(settings: dict[str, Any], fresh: bool, in_process: bool) -> dict[str, Any]:
    """Ask the demo questions in fresh processes and/or in one process; return the figures."""
    import os
    import subprocess
    import tempfile

    os.environ.setdefault("TOOLCRIB_HOME", tempfile.mkdtemp(prefix="toolcrib-bench-"))
    from toolcrib.workspace import Workspace

    ws = Workspace.open(None)
    _ = ws.database  # build the demo database outside the timings
    figures: dict[str, Any] = {"load_avg_1m": round(os.getloadavg()[0], 2), "settings": settings}
    if fresh:
        print("-- fresh process per question (like `toolcrib ask`)")
        rows = []
        for index in range(len(DEMO_QUESTIONS)):
            args = [sys.executable, __file__, "--demo-question", str(index)]
            for key, value in settings.items():
                if value is not None:
                    args += ["--setting", f"{key}={value}"]
            started = time.perf_counter()
            out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            row["wall_s"] = round(time.perf_counter() - started, 2)
            _print_row(row)
            rows.append(row)
        figures["fresh"] = {
            "per_question_wall_s": [r["wall_s"] for r in rows],
            "per_question_ask_s": [r["ask_s"] for r in rows],
            "median_wall_s": round(statistics.median(r["wall_s"] for r in rows), 2),
            "median_ask_s": round(statistics.median(r["ask_s"] for r in rows), 2),
            "median_tokens_in": statistics.median(r["tokens_in"] for r in rows),
            "median_tokens_evaluated": statistics.median(r["evaluated"] for r in rows),
            "correct": sum(r["correct"] for r in rows),
        }
    if in_process:
        print("-- all questions in one process")
        model = _Recording(_demo_model(settings))
        started = time.perf_counter()
        model.inner.load()
        rows = [_ask_one(ws, model, *q) for q in DEMO_QUESTIONS]
        for row in rows:
            _print_row(row)
        figures["one_process"] = {
            "first_question_s_incl_load": round(time.perf_counter() - started - sum(r["ask_s"] for r in rows[1:]), 2),
            "per_question_ask_s": [r["ask_s"] for r in rows],
            "median_ask_s_after_first": round(statistics.median(r["ask_s"] for r in rows[1:]), 2),
            "total_s": round(time.perf_counter() - started, 2),
            "median_tokens_in": statistics.median(r["tokens_in"] for r in rows),
            "median_tokens_evaluated": statistics.median(r["evaluated"] for r in rows),
            "correct": sum(r["correct"] for r in rows),
        }
    figures["questions"] = len(DEMO_QUESTIONS)
    figures["prompt_cache"] = _prompt_cache_figures(settings)
    return figures


def _prompt_cache_figures(settings: dict[str, Any]) -> dict[str, Any]:
    """Size of the saved system block of the demo, and reading it back vs. evaluating it again."""
    import struct

    from toolcrib.models.prompt_cache import _HEADER

    model = _demo_model(settings)
    engine, _ = model._load()
    cache = model._disk_cache(engine)
    files = sorted(cache.directory.glob("*.kv"), key=lambda p: p.stat().st_mtime) if cache else []
    if cache is None or not files:
        return {"files": 0}
    blob = files[-1].read_bytes()
    tokens = list(struct.unpack_from(f"<{_HEADER.unpack_from(blob)[1]}i", blob, _HEADER.size))
    restore_ms, eval_ms = [], []
    for _ in range(3):
        started = time.perf_counter()
        assert cache.restore(engine.llama, tokens)
        restore_ms.append((time.perf_counter() - started) * 1000)
    started = time.perf_counter()
    engine.llama.reset()  # type: ignore[no-untyped-call]
    engine.llama.eval(tokens)
    eval_ms.append((time.perf_counter() - started) * 1000)
    return {
        "files": len(files),
        "prefix_tokens": len(tokens),
        "file_mib": round(len(blob) / 2**20, 1),
        "restore_ms_median": round(statistics.median(restore_ms), 1),
        "evaluate_prefix_ms": round(eval_ms[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=None, help="n_threads (default: llama.cpp's)")
    parser.add_argument("--threads-batch", type=int, default=None, help="n_threads_batch (default: llama.cpp's)")
    parser.add_argument("--demo", action="store_true", help="whole questions on the demo workspace")
    parser.add_argument("--no-fresh", action="store_true", help="--demo: skip the fresh-process runs")
    parser.add_argument("--no-one-process", action="store_true", help="--demo: skip the one-process run")
    parser.add_argument("--setting", action="append", default=[], help="model setting KEY=VALUE (repeatable)")
    parser.add_argument("--demo-question", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--prompts", type=int, default=None, help="only the first N prompts")
    args = _quick.parse(parser, prompts=2)
    settings: dict[str, Any] = {"n_threads": args.threads, "n_threads_batch": args.threads_batch}
    settings.update(item.split("=", 1) for item in args.setting)
    if args.demo_question is not None:
        _demo_question(args.demo_question, settings)
        return
    if args.demo:
        figures = demo(settings, fresh=not args.no_fresh, in_process=not args.no_one_process)
        print(json.dumps(figures))
        return

    started = time.perf_counter()
    ensure_model_file()
    ensure_ms = (time.perf_counter() - started) * 1000
    model = LocalModel.from_spec("", {k: v for k, v in settings.items() if v is not None})
    load_ms = model.load()
    rss_after_load = _rss_mib()

    latencies: list[float] = []
    tools_right = args_right = 0
    tokens_in: list[int] = []
    tokens_out: list[int] = []
    prompts = PROMPTS[: args.prompts]
    for question, want_tool, want_args in prompts:
        reply = run_sync(model.complete([Message("user", question)], TOOLS))
        latencies.append(reply.ms)
        tokens_in.append(reply.tokens_in)
        tokens_out.append(reply.tokens_out)
        got_tool = reply.tool_calls[0].name if reply.tool_calls else None
        got_args = reply.tool_calls[0].arguments if reply.tool_calls else {}
        tool_ok = got_tool == want_tool
        args_ok = tool_ok and all(got_args.get(k) == v for k, v in want_args.items())
        tools_right += tool_ok
        args_right += args_ok
        shown: Any = (got_tool, got_args) if got_tool else reply.text[:60]
        print(f"{reply.ms:8.0f} ms  {'ok ' if args_ok else 'BAD'}  {question[:55]:55}  -> {shown}", flush=True)

    figures = {
        "model": model.name,
        "n_threads": args.threads,
        "n_threads_batch": args.threads_batch,
        "prompts": len(prompts),
        "ensure_model_file_ms": round(ensure_ms, 1),
        "load_ms": round(load_ms, 1),
        "first_call_ms": round(latencies[0], 1),
        "median_decision_ms": round(statistics.median(latencies[1:]), 1),
        "max_decision_ms": round(max(latencies[1:]), 1),
        "tool_selection_accuracy": round(tools_right / len(prompts), 3),
        "argument_accuracy": round(args_right / len(prompts), 3),
        "median_tokens_in": statistics.median(tokens_in),
        "median_tokens_out": statistics.median(tokens_out),
        "rss_after_load_mib": round(rss_after_load, 1),
        "peak_rss_mib": round(_rss_mib(), 1),
    }
    for key, value in figures.items():
        print(f"{key:26} {value}")
    print(json.dumps(figures))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

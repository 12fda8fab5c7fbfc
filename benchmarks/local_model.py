"""Benchmark the embedded model: load time, first-call latency, decision latency, tool-selection accuracy, RSS.

Run: python benchmarks/local_model.py [--threads N] [--threads-batch N]
Prints one line per prompt, the figures, and finally one JSON line with every figure.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from typing import Any

from toolcrib.models.base import Message, ToolSpec
from toolcrib.models.local import LocalModel
from toolcrib.models.weights import ensure_model_file


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
    ("Is stock of HLV-2205 available in Rotterdam?", "check_stock", {"part_number": "HLV-2205", "warehouse": "Rotterdam"}),
    ("When will order 2026-55-A arrive?", "get_order_status", {"order_id": "2026-55-A"}),
]


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=None, help="n_threads (default: llama.cpp's)")
    parser.add_argument("--threads-batch", type=int, default=None, help="n_threads_batch (default: llama.cpp's)")
    args = parser.parse_args()

    started = time.perf_counter()
    ensure_model_file()
    ensure_ms = (time.perf_counter() - started) * 1000
    model = LocalModel.from_spec("", {"n_threads": args.threads, "n_threads_batch": args.threads_batch})
    load_ms = model.load()
    rss_after_load = _rss_mib()

    latencies: list[float] = []
    tools_right = args_right = 0
    tokens_in: list[int] = []
    tokens_out: list[int] = []
    for question, want_tool, want_args in PROMPTS:
        reply = model.complete([Message("user", question)], TOOLS)
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
        "prompts": len(PROMPTS),
        "ensure_model_file_ms": round(ensure_ms, 1),
        "load_ms": round(load_ms, 1),
        "first_call_ms": round(latencies[0], 1),
        "median_decision_ms": round(statistics.median(latencies[1:]), 1),
        "max_decision_ms": round(max(latencies[1:]), 1),
        "tool_selection_accuracy": round(tools_right / len(PROMPTS), 3),
        "argument_accuracy": round(args_right / len(PROMPTS), 3),
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

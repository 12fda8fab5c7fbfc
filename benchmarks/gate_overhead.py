"""Gate overhead for one READ call: everything except the tool body, median microseconds.

Runs a trivial ``async def`` tool through the full Gate (allowlist, strict validation, grounding,
authorization, timeout, normalization, trace) and subtracts nothing: the tool body is ~0.1 us.
Measured in the same run:

- the plain-Python floor (json.loads + pydantic TypeAdapter + call + json.dumps);
- the bare Gate (an in-memory trace, no stores);
- the gate as a workspace builds it: the SQLite audit record (a READ call's is journaled when its run
  ends and chained into the table ``chain_after`` records at a time), the content scanner and the JSONL
  trace file, with the audit flushed as a run's end flushes it; the flush's own wait at the end of a
  run is reported apart (p50, and the mean, which holds the chaining's share).

Both gates serve runs of ``--calls-per-run`` calls, each run with its own context (trace, grounding),
so the ratio is what the stores add: a run's first call grounds a result the run has not seen, in
either gate.

Floors: the bare gate within 2x the plain-Python floor (issue 40); the workspace gate within 2x the
bare gate (issue 15). A READ call's trace event is built when the trace is read (the bare gate's: its run's
end, not timed here) or by the JSONL trace's writer thread (the workspace gate's). Peer ratios come from
``benchmarks/peers.py``, measured side by side. Usage: python benchmarks/gate_overhead.py [N]
[--calls-per-run R]. Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Annotated

import _quick  # benchmarks/_quick.py: --quick
from pydantic import TypeAdapter

from toolcrib import CallContext, Gate, GroupPolicy, Identifier, Principal, Registry, ToolCall, Tracer, tool
from toolcrib.policy.audit import SQLiteAuditStore
from toolcrib.policy.scanner import PatternScanner
from toolcrib.tools.grounding import Grounding
from toolcrib.trace.tracer import JsonlExporter


@tool(cache_ttl_s=0)
async def get_order_status(order_id: Annotated[str, Identifier()]) -> dict[str, str]:
    """Order status."""
    return {"order_id": order_id, "status": "shipped"}


PRINCIPAL = Principal("alice", groups=frozenset({"support"}))
QUESTION = "What's the status of order ORD-1001?"
CALL = ToolCall(id="c1", name="get_order_status", arguments={"order_id": "ORD-1001"})


def _p50(values: list[float], n: int) -> float:
    return statistics.median(values[n // 10:])


def _runs(n: int, calls_per_run: int) -> list[int]:
    """How many calls each run makes: ``n`` calls in runs of ``calls_per_run`` (the last one shorter)."""
    return [min(calls_per_run, n - first) for first in range(0, n, calls_per_run)]


async def _run(gate: Gate, cctx: CallContext, calls: int, out: list[float]) -> None:
    """One run's READ calls through ``gate``, each timed into ``out``."""
    for _ in range(calls):
        start = time.perf_counter_ns()
        outcome = await gate.run(CALL, cctx)
        out.append((time.perf_counter_ns() - start) / 1000)
        assert outcome.ok


async def bare_gate(n: int, calls_per_run: int) -> tuple[list[float], list[float]]:
    """Each call's time, and per run, the time its trace's events took to build when read, per call."""
    gate = Gate(Registry([get_order_status]), GroupPolicy({"support": ["get_order_status"]}))
    out: list[float] = []
    reads: list[float] = []
    for calls in _runs(n, calls_per_run):  # runs as the workspace gate's: a run's first call grounds a new result
        tracer = Tracer()
        await _run(gate, CallContext(PRINCIPAL, tracer, Grounding(QUESTION)), calls, out)
        start = time.perf_counter_ns()  # the run ends: its record reads the events, built now
        assert len(tracer.events) == calls
        reads.append((time.perf_counter_ns() - start) / 1000 / calls)
    return out, reads


async def workspace_gate(n: int, calls_per_run: int, state: Path) -> tuple[list[float], list[float]]:
    audit = SQLiteAuditStore(state / "audit.sqlite")
    gate = Gate(Registry([get_order_status]), GroupPolicy({"support": ["get_order_status"]}), audit=audit,
                scanner=PatternScanner())
    exporter = JsonlExporter(state / "traces")
    out: list[float] = []
    flushes: list[float] = []
    for calls in _runs(n, calls_per_run):  # a run: its own trace file
        await _run(gate, CallContext(PRINCIPAL, Tracer([exporter]), Grounding(QUESTION)), calls, out)
        start = time.perf_counter_ns()  # the run ends: its READ records are durable before it returns
        audit.flush()
        flushes.append((time.perf_counter_ns() - start) / 1000)
    exporter.flush()  # the runs' trace lines are written before their folder goes
    audit.close()
    return out, flushes


async def plain_floor(n: int) -> list[float]:
    adapter = TypeAdapter(dict[str, str])
    raw = json.dumps({"order_id": "ORD-1001"})
    out: list[float] = []
    for _ in range(n):
        start = time.perf_counter_ns()
        args = adapter.validate_python(json.loads(raw))
        json.dumps(await get_order_status.fn(**args))
        out.append((time.perf_counter_ns() - start) / 1000)
    return out


async def measure(n: int, calls_per_run: int) -> dict[str, float | int | bool]:
    # the state files under the current folder, as a workspace's are (a /tmp may be a slower file system:
    # creating a file took 600 us there and 70 us beside the project on the machine this was written on)
    with tempfile.TemporaryDirectory(prefix=".toolcrib-gate-", dir=Path.cwd()) as tmp:
        bare, reads = await bare_gate(n, calls_per_run)
        workspace, flushes = await workspace_gate(n, calls_per_run, Path(tmp))
        floor = await plain_floor(n)
    figures: dict[str, float | int | bool] = {
        "calls": n, "calls_per_run": calls_per_run,
        "gate_read_call_us_p50": _p50(bare, n),
        "gate_read_call_us_p95": sorted(bare[n // 10:])[int(0.95 * (n - n // 10))],
        "workspace_gate_read_call_us_p50": _p50(workspace, n),
        # the calls after a run's first: the first follows the previous run's audit flush (an fsync the
        # caller waited on), and pays for waking up from it
        "workspace_gate_later_calls_us_p50": _p50([t for i, t in enumerate(workspace) if i % calls_per_run], n)
        if calls_per_run > 1 else 0.0,
        "run_end_audit_flush_us_p50": statistics.median(flushes) if flushes else 0.0,
        "run_end_audit_flush_us_mean": statistics.fmean(flushes) if flushes else 0.0,
        "trace_read_per_call_us_p50": statistics.median(reads),
        "plain_python_floor_us_p50": _p50(floor, n),
        "load_avg_1m": os.getloadavg()[0],
    }
    figures["ratio_vs_floor"] = figures["gate_read_call_us_p50"] / figures["plain_python_floor_us_p50"]
    figures["gate_within_2x_floor"] = bool(figures["ratio_vs_floor"] <= 2.0)
    figures["workspace_vs_bare"] = figures["workspace_gate_read_call_us_p50"] / figures["gate_read_call_us_p50"]
    figures["workspace_within_2x_bare"] = bool(figures["workspace_vs_bare"] <= 2.0)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("n", nargs="?", type=int, default=5000)
    parser.add_argument("--calls-per-run", type=int, default=2, help="READ calls per run (the audit flushes "
                        "at each run's end)")
    args = _quick.parse(parser, n=200)
    figures = asyncio.run(measure(args.n, max(1, args.calls_per_run)))
    print(f"one READ call (median of {args.n}): bare gate {figures['gate_read_call_us_p50']:.1f} us "
          f"(p95 {figures['gate_read_call_us_p95']:.1f}); the workspace's gate (SQLite audit, scanner, JSONL "
          f"trace) {figures['workspace_gate_read_call_us_p50']:.1f} us = x{figures['workspace_vs_bare']:.2f} "
          f"(floor x2.0); a run's calls after its first: {figures['workspace_gate_later_calls_us_p50']:.1f} us")
    print(f"the audit flush at the end of a run of {args.calls_per_run} READ calls: "
          f"{figures['run_end_audit_flush_us_p50']:.0f} us p50 (one journal write for the run's records), "
          f"{figures['run_end_audit_flush_us_mean']:.0f} us mean (with the chaining into the table)")
    print(f"the bare gate's events built when its run's trace is read: {figures['trace_read_per_call_us_p50']:.1f} us "
          "a call (p50)")
    print(f"plain-Python floor in the same run: {figures['plain_python_floor_us_p50']:.1f} us "
          f"(gate x{figures['ratio_vs_floor']:.2f}, floor x2.0); load average {figures['load_avg_1m']:.2f}")
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()

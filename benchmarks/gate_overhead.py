"""Gate overhead for one READ call: everything except the tool body, median microseconds.

Runs a trivial ``async def`` tool through the full Gate (allowlist, strict validation, grounding,
authorization, timeout, normalization, trace) and subtracts nothing: the tool body is ~0.1 us.
Compared, in the same run, with the plain-Python floor (json.loads + pydantic TypeAdapter + call +
json.dumps) measured the way STACK.md's peer table was. Usage: python benchmarks/gate_overhead.py [N]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from typing import Annotated

from pydantic import TypeAdapter

from toolcrib import CallContext, Gate, GroupPolicy, Identifier, Principal, Registry, ToolCall, Tracer, tool
from toolcrib.tools.grounding import Grounding


@tool(cache_ttl_s=0)
async def get_order_status(order_id: Annotated[str, Identifier()]) -> dict[str, str]:
    """Order status."""
    return {"order_id": order_id, "status": "shipped"}


async def measure(n: int) -> dict[str, float]:
    gate = Gate(Registry([get_order_status]), GroupPolicy({"support": ["get_order_status"]}))
    principal = Principal("alice", groups=frozenset({"support"}))
    cctx = CallContext(principal, Tracer(), Grounding("What's the status of order ORD-1001?"))
    call = ToolCall(id="c1", name="get_order_status", arguments={"order_id": "ORD-1001"})
    gate_us: list[float] = []
    for i in range(n):
        if i % 200 == 0:
            cctx.tracer = Tracer()  # keep the in-memory trace from growing without bound
        start = time.perf_counter_ns()
        outcome = await gate.run(call, cctx)
        gate_us.append((time.perf_counter_ns() - start) / 1000)
        assert outcome.ok
    adapter = TypeAdapter(dict[str, str])
    raw = json.dumps({"order_id": "ORD-1001"})
    floor_us: list[float] = []
    for _ in range(n):
        start = time.perf_counter_ns()
        args = adapter.validate_python(json.loads(raw))
        json.dumps(await get_order_status.fn(**args))
        floor_us.append((time.perf_counter_ns() - start) / 1000)
    warm = n // 10
    return {"gate_read_call_us_p50": statistics.median(gate_us[warm:]),
            "gate_read_call_us_p95": sorted(gate_us[warm:])[int(0.95 * (n - warm))],
            "plain_python_floor_us_p50": statistics.median(floor_us[warm:]), "calls": n}


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    figures = asyncio.run(measure(n))
    figures["budget_us"] = 50
    figures["ratio_vs_floor"] = round(figures["gate_read_call_us_p50"] / figures["plain_python_floor_us_p50"], 2)
    figures["ratio_vs_openai_agents_sdk_stack_md"] = round(figures["gate_read_call_us_p50"] / 8.8, 2)
    print(f"gate overhead, one READ call (median of {n}): {figures['gate_read_call_us_p50']:.1f} us "
          f"(p95 {figures['gate_read_call_us_p95']:.1f} us; budget 50 us)")
    print(f"plain-Python floor in the same run: {figures['plain_python_floor_us_p50']:.1f} us "
          f"(x{figures['ratio_vs_floor']})")
    print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in figures.items()}))


if __name__ == "__main__":
    main()

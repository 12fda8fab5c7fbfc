"""Monitoring from production traces: per day and per tool, how the model's decisions ended.

A model decision ends in a tool call or a direct answer. On unchanged traffic the share that ends
in a tool call should stay steady; when it falls, the model has stopped recognising that a tool
fits, which is the usual sign of a stale or misleading tool description (or a changed prompt).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from toolcrib.errors import TraceFormatError
from toolcrib.trace.events import Event, EventKind
from toolcrib.trace.journal import read_traces

FALLING_RATE_EXPLANATION = (
    "The share of model decisions that end in a tool call fell. On unchanged traffic this is the sign "
    "of a stale tool description: the model no longer sees that a tool fits the question and answers "
    "directly (or abstains) instead. Compare the tool descriptions and prompts with the last good run "
    "(`toolcrib eval compare`), and re-run `toolcrib eval` on the demo or your own question set.")


# What is counted per tool, in the report's order.
_TOOL_COUNTS = ("proposed", "ran", "refused", "held", "approved", "errors")


# What a call's event counts, per tool and (where named) per day.
_COUNTED: dict[EventKind, tuple[str, str]] = {
    EventKind.CALL_EXECUTED: ("ran", ""), EventKind.CALL_REFUSED: ("refused", "refusals"),
    EventKind.CALL_HELD: ("held", "held_for_approval"), EventKind.CALL_APPROVED: ("approved", "approved"),
    EventKind.CALL_FAILED: ("errors", "errors"),
}


def _parse_at(value: str) -> datetime | None:
    try:
        return datetime.fromisoformat(value)
    except (TypeError, ValueError):
        return None


def collect(trace_files: Iterable[Path], *, days: int | None = None, today: date | None = None) -> dict[str, Any]:
    """Per-day and per-tool statistics over JSONL traces, with a falling tool-call-rate flag."""
    today = today or date.today()
    since = today - timedelta(days=days - 1) if days else None
    per_day: dict[str, Counter[str]] = defaultdict(Counter)
    latency: dict[str, list[float]] = defaultdict(list)
    per_tool: dict[str, Counter[str]] = defaultdict(Counter)
    skipped = 0
    runs: list[list[Event]] = []
    for path in trace_files:
        try:
            runs.extend(read_traces(path))  # a trace's own file, or a journal of the service's traces
        except (OSError, TraceFormatError):
            skipped += 1
    for events in runs:
        if not events:
            continue
        start, end = _parse_at(events[0].at), _parse_at(events[-1].at)
        if start is None:
            skipped += 1
            continue
        if since and start.date() < since:
            continue
        key = start.date().isoformat()
        day = per_day[key]
        day["runs"] += 1
        if end is not None:
            latency[key].append((end - start).total_seconds() * 1000)
        for e in events:
            if e.kind is EventKind.MODEL_DECISION and e.decided_by == "model":
                day["decisions"] += 1
                day["tool_calls" if e.status == "tool_calls" else "direct_answers"] += 1
            elif e.kind is EventKind.RUN_FINISHED and e.status == "abstained":
                day["abstained"] += 1
            elif e.kind is EventKind.CALL_PROPOSED and e.decided_by == "model" and e.tool:
                per_tool[e.tool]["proposed"] += 1
            elif e.kind in _COUNTED and e.tool:
                tool_field, day_field = _COUNTED[e.kind]
                per_tool[e.tool][tool_field] += 1
                if day_field:
                    day[day_field] += 1
    days_out = []
    for key in sorted(per_day):
        d, ms = per_day[key], latency[key]
        days_out.append({
            "day": key, "runs": d["runs"], "decisions": d["decisions"], "tool_calls": d["tool_calls"],
            "direct_answers": d["direct_answers"],
            "tool_call_rate": round(d["tool_calls"] / d["decisions"], 4) if d["decisions"] else None,
            "refusals": d["refusals"], "held_for_approval": d["held_for_approval"], "approved": d["approved"],
            "errors": d["errors"], "abstained": d["abstained"],
            "latency_ms_p50": round(statistics.median(ms), 1) if ms else None,
            "latency_ms_max": round(max(ms), 1) if ms else None})
    tools = {name: {k: counts[k] for k in _TOOL_COUNTS} for name, counts in sorted(per_tool.items())}
    return {"days": days_out, "tools": tools,
            "falling_tool_call_rate": falling_rate(days_out), "unreadable_traces": skipped,
            "explanation": FALLING_RATE_EXPLANATION}


def falling_rate(days: list[dict[str, Any]], *, min_decisions: int = 10, drop: float = 0.15) -> dict[str, Any] | None:
    """Flag when the latest day's tool-call rate is ``drop`` below the mean of the days before it."""
    rated = [d for d in days if d["tool_call_rate"] is not None and d["decisions"] >= min_decisions]
    if len(rated) < 2:
        return None
    latest, earlier = rated[-1], rated[:-1]
    baseline = statistics.fmean(d["tool_call_rate"] for d in earlier)
    if baseline - latest["tool_call_rate"] >= drop:
        return {"day": latest["day"], "rate": latest["tool_call_rate"], "baseline": round(baseline, 4),
                "explanation": FALLING_RATE_EXPLANATION}
    return None


def render(stats: dict[str, Any]) -> str:
    lines = ["Per day: how the model's decisions ended"]
    lines.append(f"  {'day':<11}{'runs':>6}{'decide':>8}{'tool':>6}{'direct':>8}{'rate':>7}{'refused':>9}"
                 f"{'held':>6}{'approved':>10}{'errors':>8}{'p50 ms':>9}")
    for d in stats["days"]:
        rate = "-" if d["tool_call_rate"] is None else f"{d['tool_call_rate']:.2f}"
        p50 = "-" if d["latency_ms_p50"] is None else f"{d['latency_ms_p50']:.0f}"
        lines.append(f"  {d['day']:<11}{d['runs']:>6}{d['decisions']:>8}{d['tool_calls']:>6}{d['direct_answers']:>8}"
                     f"{rate:>7}{d['refusals']:>9}{d['held_for_approval']:>6}{d['approved']:>10}{d['errors']:>8}"
                     f"{p50:>9}")
    if not stats["days"]:
        lines.append("  (no recorded runs in this period)")
    lines.append("Per tool")
    lines.append(f"  {'tool':<26}{'proposed':>9}{'ran':>6}{'refused':>9}{'held':>6}{'approved':>10}{'errors':>8}")
    for name, t in stats["tools"].items():
        lines.append(f"  {name:<26}{t['proposed']:>9}{t['ran']:>6}{t['refused']:>9}{t['held']:>6}{t['approved']:>10}"
                     f"{t['errors']:>8}")
    flag = stats["falling_tool_call_rate"]
    if flag:
        lines.append(f"WARNING: tool-call rate fell to {flag['rate']:.2f} on {flag['day']} "
                     f"(earlier days: {flag['baseline']:.2f}).")
        lines.append("  " + flag["explanation"])
    else:
        lines.append("Tool-call rate steady (a fall of 0.15 or more against earlier days would be flagged: "
                     "on unchanged traffic it is the sign of a stale tool description).")
    return "\n".join(lines)

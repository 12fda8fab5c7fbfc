"""`toolcrib stats` over synthetic trace files: per day, per tool, and the falling tool-call-rate flag."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from click.testing import CliRunner

from toolcrib import Event, EventKind
from toolcrib.cli import main
from toolcrib.evals.stats import collect


def write_trace(folder: Path, name: str, day: str, *, tool: str | None, refused: bool = False, held: bool = False,
                error: bool = False) -> None:
    """A typed trace; titles are left empty: stats must not need them."""
    def at(second: str) -> str:
        return f"{day}T10:00:{second}+00:00"

    events = [Event(EventKind.RUN_STARTED, "code", at=at("00.000"))]
    if tool:
        events += [Event(EventKind.MODEL_DECISION, "model", status="tool_calls", at=at("01.000")),
                   Event(EventKind.CALL_PROPOSED, "model", tool=tool, call_id="c1", at=at("01.000"))]
        if refused:
            events.append(Event(EventKind.CALL_REFUSED, "policy", tool=tool, error_code="not_permitted",
                                at=at("01.100")))
        elif held:
            events.append(Event(EventKind.CALL_HELD, "policy", tool=tool, proposal_id="p1", at=at("01.100")))
        elif error:
            events.append(Event(EventKind.CALL_FAILED, "code", tool=tool, error_code="tool_failed", at=at("01.100")))
        else:
            events.append(Event(EventKind.CALL_EXECUTED, "code", tool=tool, status="ok", at=at("01.200")))
    else:
        events.append(Event(EventKind.MODEL_DECISION, "model", status="text", at=at("01.000")))
    events.append(Event(EventKind.RUN_FINISHED, "code", status="answered", at=at("02.000")))
    (folder / f"{name}.jsonl").write_text("\n".join(json.dumps(e.to_dict()) for e in events) + "\n")


def make_traces(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(12):  # day 1: 11 of 12 decisions call a tool
        write_trace(folder, f"a{i}", "2026-11-20", tool=None if i == 0 else "lookup_part", refused=i == 1)
    for i in range(12):  # day 2: steady
        write_trace(folder, f"b{i}", "2026-11-21", tool=None if i == 0 else "lookup_stock", held=i == 1)
    for i in range(12):  # day 3: only 4 of 12 call a tool: the description went stale
        write_trace(folder, f"c{i}", "2026-11-22", tool="lookup_part" if i < 4 else None, error=i == 0)


def test_stats_count_decisions_per_day_and_tool_and_flag_a_falling_rate(tmp_path: Path) -> None:
    make_traces(tmp_path)
    stats = collect(sorted(tmp_path.glob("*.jsonl")))
    days = {d["day"]: d for d in stats["days"]}
    assert days["2026-11-20"]["tool_calls"] == 11 and days["2026-11-20"]["direct_answers"] == 1
    assert days["2026-11-20"]["refusals"] == 1 and days["2026-11-21"]["held_for_approval"] == 1
    assert days["2026-11-22"]["tool_call_rate"] == round(4 / 12, 4) and days["2026-11-22"]["errors"] == 1
    assert days["2026-11-22"]["latency_ms_p50"] == 2000.0
    assert stats["tools"]["lookup_part"]["proposed"] == 15 and stats["tools"]["lookup_part"]["refused"] == 1
    flag = stats["falling_tool_call_rate"]
    assert flag is not None and flag["day"] == "2026-11-22" and "stale tool description" in flag["explanation"]


def test_days_limits_the_window(tmp_path: Path) -> None:
    make_traces(tmp_path)
    stats = collect(sorted(tmp_path.glob("*.jsonl")), days=2, today=date(2026, 11, 22))
    assert [d["day"] for d in stats["days"]] == ["2026-11-21", "2026-11-22"]


def test_stats_command_prints_the_table_and_the_warning(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "toolcrib.toml").write_text('[workspace]\nname = "stats test"\n')
    make_traces(root / ".toolcrib" / "traces")
    out = CliRunner().invoke(main, ["stats", "-w", str(root)])
    assert out.exit_code == 0, out.output
    assert "2026-11-22" in out.output and "lookup_stock" in out.output
    assert "WARNING: tool-call rate fell" in out.output and "stale tool description" in out.output
    as_json = CliRunner().invoke(main, ["stats", "-w", str(root), "--json"])
    assert json.loads(as_json.stdout)["falling_tool_call_rate"]["rate"] < 0.5


def test_a_trace_from_before_typed_events_is_counted_unreadable_not_misread(tmp_path: Path) -> None:
    make_traces(tmp_path)
    (tmp_path / "old.jsonl").write_text(json.dumps({"kind": "tool", "decided_by": "code", "title": "Run tool: x",
                                                    "at": "2026-11-22T10:00:00+00:00"}) + "\n")
    stats = collect(sorted(tmp_path.glob("*.jsonl")))
    assert stats["unreadable_traces"] == 1 and "x" not in stats["tools"]

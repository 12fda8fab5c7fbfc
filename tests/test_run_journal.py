"""The file run store and the service's trace journal: a run's record and trace, appended to a journal of
the process's instead of a file per run, read back by id from any process, also after a process died."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from toolcrib.agent.answer import Answer
from toolcrib.agent.runs import FileRunStore, PausedRun, RunRecord
from toolcrib.evals.stats import collect
from toolcrib.models.base import Message, ToolCall
from toolcrib.retrieval.citations import Citation
from toolcrib.trace.events import EventKind
from toolcrib.trace.journal import JournalExporter, last_trace, trace_files, trace_lines
from toolcrib.trace.tracer import Tracer


def _segment(run_id: str, outcome: str, events: list[str], *, user: str = "alice", paused: bool = False,
             trace: str = "t1") -> RunRecord:
    held = PausedRun(run_id, user, "Reserve 3 F2", "single", [Message("user", "Reserve 3 F2")],
                     [(ToolCall("c1", "reserve_stock", {"part_number": "F2", "quantity": 3}), "p1")], [])
    return RunRecord(run_id, user, "acme", "Reserve 3 F2", "single", outcome, {"text": outcome},
                     [{"kind": k} for k in events], [trace], held if paused else None)


def test_a_run_asked_in_one_process_is_read_and_resumed_in_another(tmp_path: Path) -> None:
    asked_on, resumed_on = FileRunStore(tmp_path), FileRunStore(tmp_path)  # each holds a journal of its own
    asked_on.record(_segment("r1", "paused", ["run_started", "call_held"], paused=True))
    paused = resumed_on.load("r1")
    assert paused.pending[0][0].arguments == {"part_number": "F2", "quantity": 3}
    resumed_on.record(_segment("r1", "answered", ["call_executed", "run_finished"], trace="t2"))
    for store in (asked_on, resumed_on):
        record = store.get("r1")
        assert record is not None
        assert (record.outcome, record.answer) == ("answered", {"text": "answered"})
        assert [e["kind"] for e in record.events] == ["run_started", "call_held", "call_executed", "run_finished"]
        assert record.traces == ["t1", "t2"] and record.paused is not None  # kept: a duplicate resume replays
        assert record.created_at <= record.updated_at
    assert len(list((tmp_path / "journals").glob("*.runs"))) == 2
    assert not list(tmp_path.glob("*.json"))  # no file per run


def test_runs_are_listed_per_user_newest_first_with_an_earlier_versions_files(tmp_path: Path) -> None:
    old = RunRecord("r0", "alice", "acme", "old question", "single", "answered", created_at=1.0, updated_at=1.0)
    (tmp_path / "r0.json").write_text(json.dumps(old.to_dict()))
    store = FileRunStore(tmp_path)
    store.record(_segment("r1", "answered", ["run_finished"]))
    store.record(_segment("r2", "answered", ["run_finished"], user="bob"))
    store.record(_segment("r3", "answered", ["run_finished"]))
    assert [r.run_id for r in store.for_user("alice")] == ["r3", "r1", "r0"]
    assert [r.run_id for r in store.for_user("alice", limit=1)] == ["r3"]
    assert [r.run_id for r in FileRunStore(tmp_path).for_user("bob")] == ["r2"]
    store.record(_segment("r0", "answered", ["run_finished"]))  # an earlier version's run, resumed now
    record = FileRunStore(tmp_path).get("r0")
    assert record is not None and record.question == "old question" and record.created_at == 1.0
    assert [e["kind"] for e in record.events] == ["run_finished"] and record.updated_at > 1.0
    assert store.get("../r1") is None and store.get("nope") is None


def test_a_line_its_writer_died_writing_is_never_read_and_is_cut_off_by_the_next_holder(tmp_path: Path) -> None:
    script = f"""
import os, sys
from toolcrib.agent.runs import FileRunStore, RunRecord
store = FileRunStore(__import__("pathlib").Path({str(tmp_path)!r}))
store.record(RunRecord("done", "alice", "acme", "q", "single", "answered", {{}}, [{{"kind": "run_finished"}}]))
fd = os.open(store.journal.folder / (store.journal.own.name + ".runs"), os.O_WRONLY | os.O_APPEND)
os.write(fd, b'["half","alice","acme",1.0,false]\\t{{"run_id": "ha')  # killed -9 inside this write
os._exit(0)
"""
    subprocess.run([sys.executable, "-c", script], check=True)
    store = FileRunStore(tmp_path)
    assert store.get("half") is None
    done = store.get("done")
    assert done is not None and done.outcome == "answered"
    store.record(_segment("next", "answered", ["run_finished"]))  # takes over the dead process's journal
    [journal] = (tmp_path / "journals").glob("*.runs")
    assert journal.read_bytes().endswith(b"\n") and b'"ha' not in journal.read_bytes()
    fresh = FileRunStore(tmp_path)
    assert {r.run_id for r in fresh.for_user("alice")} == {"done", "next"}


def test_the_services_trace_journal_is_read_by_trace_id_by_the_trace_readers(tmp_path: Path) -> None:
    exporter = JournalExporter(tmp_path)
    ids = []
    for question in ("first", "second"):
        tracer = Tracer([exporter])
        tracer.record(EventKind.RUN_STARTED, f"Question: {question}", detail={"question": question})
        tracer.record(EventKind.RUN_FINISHED, "Final answer (answered)", status="answered")
        tracer.close()
        ids.append(tracer.trace_id)
    assert not list(tmp_path.glob("*.jsonl")) and len(trace_files(tmp_path)) == 1  # no file per trace
    for trace_id, question in zip(ids, ("first", "second"), strict=True):
        lines = [json.loads(line) for line in trace_lines(tmp_path, trace_id)]
        assert [e["kind"] for e in lines] == ["run_started", "run_finished"]
        assert lines[0]["detail"] == {"question": question}
    assert last_trace(tmp_path) == ids[-1] and trace_lines(tmp_path, "nope") == []
    assert sum(day["runs"] for day in collect(trace_files(tmp_path))["days"]) == 2


def test_an_answer_as_a_dict_is_what_asdict_gives_and_shares_nothing() -> None:
    answer = Answer("Price $52 [lookup_part#1].", [Citation("lookup_part#1", "tool", "lookup_part", "52")],
                    executed=[{"id": "c1", "name": "lookup_part", "arguments": {"part": ["HLV", 1]}, "status": "ok"}],
                    flags=["x"], trace_id="t", run_id="r", tokens_in=3, ms=1.5)
    out = answer.to_dict()
    assert out == asdict(answer) and list(out) == list(asdict(answer))
    out["executed"][0]["arguments"]["part"].append(2)
    assert answer.executed[0]["arguments"] == {"part": ["HLV", 1]}

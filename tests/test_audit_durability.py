"""READ records are group-committed; nothing acknowledged is lost, even to kill -9 (issue 15)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from toolcrib.policy.audit import SQLiteAuditStore
from toolcrib.policy.canonical import canonical_json, sha256_hex

# Appends deferred READ records and, every few, a synchronous one; prints what is acknowledged:
# "ack N" once flush() returned for every READ record up to N, "sync N SEQ" once append returned.
WRITER = textwrap.dedent("""
    import sys
    from toolcrib.policy.audit import SQLiteAuditStore
    store = SQLiteAuditStore(sys.argv[1])
    n = 0
    while True:
        n += 1
        store.append_deferred("executed", actor="alice", decided_by="code", tool="lookup", detail={"n": n})
        if n % 7 == 0:
            record = store.append("proposed", actor="alice", decided_by="model", tool="reserve",
                                  detail={"n": n})
            print(f"sync {n} {record.seq}", flush=True)  # every READ record queued before it is acknowledged
        elif n % 3 == 0:
            store.flush()
            print(f"ack {n}", flush=True)
""")


def test_a_killed_process_loses_no_acknowledged_record_and_the_chain_verifies(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    acknowledged, synced = 0, {}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline().split()
        if line[0] == "ack":
            acknowledged = int(line[1])
        else:
            synced[int(line[1])] = int(line[2])
            acknowledged = int(line[1])
        if acknowledged >= 300:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    for line in proc.stdout.read().splitlines():  # what it printed before the kill is acknowledged too
        parts = line.split()
        acknowledged = int(parts[1])
        if parts[0] == "sync":
            synced[int(parts[1])] = int(parts[2])
    proc.stdout.close()

    store = SQLiteAuditStore(path)
    assert store.verify().ok
    records = list(store.records())
    reads = [r.detail["n"] for r in records if r.event == "executed"]
    assert set(range(1, acknowledged + 1)) - set(synced) <= set(reads)
    assert reads == sorted(reads)  # in the order queued
    for n, seq in synced.items():  # each synchronous record where append said, after the READs before it
        record = records[seq - 1]
        assert record.event == "proposed" and record.detail == {"n": n}
        assert {r.detail["n"] for r in records[:seq - 1] if r.event == "executed"} >= \
            set(range(1, n)) - set(synced)
    store.close()


def test_deferred_records_are_written_in_order_before_a_later_synchronous_one(tmp_path: Path) -> None:
    with SQLiteAuditStore(tmp_path / "audit.db") as store:
        for n in range(50):
            store.append_deferred("executed", actor="a", decided_by="code", tool="t", detail={"n": n})
        record = store.append("proposed", actor="a", decided_by="model", tool="w")
        assert record.seq == 51
        events = [(r.event, r.detail.get("n")) for r in store.records()]
        assert events == [("executed", n) for n in range(50)] + [("proposed", None)]
        assert store.verify().ok


def test_without_group_commit_a_deferred_record_is_written_before_append_returns(tmp_path: Path) -> None:
    store = SQLiteAuditStore(tmp_path / "audit.db", group_reads=False)
    store.append_deferred("executed", actor="a", decided_by="code", tool="t")
    assert store._writer is None and store.head()[0] == 1
    store.close()


def test_close_writes_what_is_queued(tmp_path: Path) -> None:
    store = SQLiteAuditStore(tmp_path / "audit.db")
    for _ in range(20):
        store.append_deferred("executed", actor="a", decided_by="code", tool="t")
    store.close()
    with SQLiteAuditStore(tmp_path / "audit.db") as again:
        assert again.head()[0] == 20 and again.verify().ok


def test_each_record_hashes_its_canonical_body_however_it_was_written(tmp_path: Path) -> None:
    with SQLiteAuditStore(tmp_path / "audit.db") as store:
        store.append_deferred("executed", actor="a", decided_by="code", tool="t",
                              detail={"arguments": {"n": 3.0, "x": "é", "nested": {"z": [1, 2.5], "a": None}}})
        store.append("approved", actor="ada", decided_by="human", tool="w", proposal_id="p1", detail={"b": [1.0]})
        store.flush()
        records = list(store.records())
        assert [r.seq for r in records] == [1, 2]
        assert records[0].detail == {"arguments": {"n": 3, "x": "é", "nested": {"z": [1, 2.5], "a": None}}}
        for record in records:  # the documented definition, independent of how the writer computes it
            assert record.hash == sha256_hex(canonical_json(record.body()))
        assert records[1].prev_hash == records[0].hash and store.verify().ok


def test_flush_commits_on_the_callers_thread_and_a_failed_commit_keeps_the_records_queued(tmp_path: Path) -> None:
    store = SQLiteAuditStore(tmp_path / "audit.db")
    real_tx = store._tx

    def broken(write: bool = True, **_: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")
    store._tx = broken  # type: ignore[method-assign]  # before queueing: neither thread can commit it
    store.append_deferred("executed", actor="a", decided_by="code", tool="t")
    with pytest.raises(sqlite3.OperationalError):
        store.flush()
    store._tx = real_tx  # type: ignore[method-assign]
    store.flush()
    assert store.head()[0] == 1 and store.verify().ok
    store.close()


def test_a_group_commit_leaves_the_connection_fsyncing_what_comes_next(tmp_path: Path) -> None:
    # READ records are committed without an fsync; a proposal or approval after them must still be fsync'd
    with SQLiteAuditStore(tmp_path / "audit.db") as store:
        store.append_deferred("executed", actor="a", decided_by="code", tool="t")
        store.flush()
        with store._tx(write=False) as cur:
            assert cur.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        store.append("approved", actor="ada", decided_by="human", tool="w", proposal_id="p1")
        assert store.head()[0] == 2 and store.verify().ok

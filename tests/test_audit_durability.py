"""READ records are journaled at a run's end and chained many runs at a time; nothing acknowledged is
lost, even to kill -9 (issue 15)."""

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
from toolcrib.policy.audit import journal as audit_journal
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


def _rows(path: Path) -> int:
    """The records in the audit table, read past the store (what another process sees)."""
    with sqlite3.connect(path) as conn:
        return int(conn.execute("SELECT COUNT(*) FROM toolcrib_audit").fetchone()[0])


def test_flush_journals_a_runs_records_and_the_table_gets_them_many_runs_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    store = SQLiteAuditStore(path, chain_after=10)
    for _ in range(3):
        store.append_deferred("executed", actor="a", decided_by="code", tool="t")
        store.append_deferred("executed", actor="a", decided_by="code", tool="t")
        store.flush()
    assert _rows(path) == 0  # acknowledged: in this process's journal, not in the table yet
    journals = list((tmp_path / "audit.db-reads").glob("*.journal"))
    assert len(journals) == 1 and len(journals[0].read_bytes().splitlines()) == 6
    for _ in range(4):  # the 10th journaled record chains them all
        store.append_deferred("executed", actor="a", decided_by="code", tool="t")
    store.flush()
    assert _rows(path) == 10
    store.close()
    assert not list((tmp_path / "audit.db-reads").glob("*.journal"))  # all chained: removed


def test_a_failed_journal_write_falls_back_to_the_table_and_a_failure_of_both_keeps_the_records_queued(
        tmp_path: Path) -> None:
    store = SQLiteAuditStore(tmp_path / "audit.db")
    real_tx, real_append = store._tx, store._journal.append

    def full(data: bytes, *, sync: bool = False) -> None:
        raise OSError(28, "No space left on device")

    def broken(write: bool = True, **_: Any) -> Any:
        raise sqlite3.OperationalError("disk I/O error")
    store._journal.append = full  # type: ignore[method-assign]
    store.append_deferred("executed", actor="a", decided_by="code", tool="t", detail={"n": 1})
    store.flush()
    assert _rows(tmp_path / "audit.db") == 1  # the journal failed: committed to the table instead
    store._tx = broken  # type: ignore[method-assign]  # neither thread can write it now
    store.append_deferred("executed", actor="a", decided_by="code", tool="t", detail={"n": 2})
    with pytest.raises(sqlite3.OperationalError):
        store.flush()
    store._tx, store._journal.append = real_tx, real_append  # type: ignore[method-assign]
    store.flush()
    assert [r.detail["n"] for r in store.records()] == [1, 2] and store.verify().ok
    store.close()


# Journals two runs' READ records, chains the first (head()), journals a third, then waits to be killed.
LIVE = textwrap.dedent("""
    import sys, time
    from toolcrib.policy.audit import SQLiteAuditStore
    store = SQLiteAuditStore(sys.argv[1])
    for n in range(1, 7):
        store.append_deferred("executed", actor="alice", decided_by="code", tool="lookup", detail={"n": n})
        if n % 2 == 0:
            store.flush()
        if n == 4:
            store.head()
    print("ready", flush=True)
    time.sleep(60)
""")


def test_a_live_process_journal_is_left_to_it_and_a_dead_ones_is_chained_once(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    proc = subprocess.Popen([sys.executable, "-c", LIVE, str(path)], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    with SQLiteAuditStore(path) as other:  # its process lives: its journal is its own to chain
        assert [r.detail["n"] for r in other.records()] == [1, 2, 3, 4]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    for _ in range(2):  # chained by the first store to open the file, from where it was chained to; once
        with SQLiteAuditStore(path) as store:
            assert [r.detail["n"] for r in store.records()] == [1, 2, 3, 4, 5, 6] and store.verify().ok
    assert not list((tmp_path / "audit.db-reads").iterdir())


def test_a_journal_cut_mid_line_gives_its_whole_lines_only(tmp_path: Path) -> None:
    folder = tmp_path / "audit.db-reads"
    folder.mkdir()
    whole = audit_journal.encode([(1.0, "executed", "a", "code", "t", "", "tr1", '{"n":1}'),
                                  (2.5, "executed", "a", "code", "t", "", "tr1", '{"n":2}')])
    (folder / "123-dead.journal").write_bytes(whole + b'[3.0,"executed","a","co')
    with SQLiteAuditStore(tmp_path / "audit.db") as store:
        records = list(store.records())
        assert [(r.timestamp, r.detail) for r in records] == [(1.0, {"n": 1}), (2.5, {"n": 2})]
        assert store.verify().ok


def test_a_group_commit_leaves_the_connection_fsyncing_what_comes_next(tmp_path: Path) -> None:
    # READ records are committed without an fsync; a proposal or approval after them must still be fsync'd
    with SQLiteAuditStore(tmp_path / "audit.db") as store:
        store.append_deferred("executed", actor="a", decided_by="code", tool="t")
        assert store.head()[0] == 1  # chained, without an fsync
        with store._tx(write=False) as cur:
            assert cur.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
        store.append("approved", actor="ada", decided_by="human", tool="w", proposal_id="p1")
        assert store.head()[0] == 2 and store.verify().ok

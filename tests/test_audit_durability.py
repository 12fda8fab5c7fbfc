"""READ records are group-committed; nothing acknowledged is lost, even to kill -9 (issue 15)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from toolcrib.policy.audit import SQLiteAuditStore

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

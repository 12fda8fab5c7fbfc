"""Journals rotate: a run or trace journal past ``[service] journal_file_mb`` is closed and a new one started,
and closed ones past ``journal_keep_mb`` are removed oldest first, so the folders stop growing; a run (and
its trace) is still found by id in a closed journal, and the audit chain still verifies."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from toolcrib.trace.journal import Journal, Retention, trace_lines

pytest.importorskip("fastapi")

from test_service import PRICE, Service, demo_copy


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir())


def test_a_journal_past_its_size_is_closed_and_the_oldest_closed_ones_go(tmp_path: Path) -> None:
    journal = Journal(tmp_path, ".log", retention=Retention(file_bytes=100, keep_bytes=300))
    names = [journal.append(b"x" * 49 + b"\n")[0] for _ in range(40)]  # two lines fill a journal
    assert len(set(names)) == 20 and names[0] == names[1] != names[2]
    kept = sorted(p.name for p in tmp_path.iterdir())
    assert _size(tmp_path) <= 300 and len(kept) == 3  # the bound, and nothing left open (the last was full)
    assert names[0] + ".log" not in kept and names[-1] + ".log" in kept
    journal.append(b"y\n")
    assert journal.name not in names  # a full journal is never written again, not even by its process


def test_nobody_takes_over_a_full_journal(tmp_path: Path) -> None:
    retention = Retention(file_bytes=100, keep_bytes=None)
    first = Journal(tmp_path, ".log", retention=retention)
    full, _ = first.append(b"x" * 120 + b"\n")
    first.close()
    second = Journal(tmp_path, ".log", retention=retention)
    assert second.append(b"y\n")[0] != full
    assert (tmp_path / f"{full}.log").stat().st_size == 121


def test_an_old_run_is_read_by_id_after_rotation_and_the_audit_chain_verifies(tmp_path: Path) -> None:
    root = demo_copy(tmp_path, "[service]\njournal_file_mb = 0.01\njournal_keep_mb = 0.04\n")
    svc = Service(root)
    runs = svc.ws.state_dir / "runs" / "journals"
    with svc.client:
        asked = [svc.ask("alice", PRICE).json() for _ in range(8)]
        closed = [p for p in runs.glob("*.runs") if p.stat().st_size >= 0.01 * (1 << 20)]
        assert len(closed) >= 2  # written past the limit: rotated at least twice
        first = svc.client.get(f"/v1/runs/{asked[0]['run_id']}", headers=svc.as_("alice"))
        assert first.status_code == 200 and first.json()["answer"]["text"] == asked[0]["text"]
        assert trace_lines(svc.ws.traces_dir, asked[0]["trace_id"])  # and its trace
        audit = svc.client.app.state.service.desk.audit  # the service's: it chains what it journaled
        checked = audit.verify()
        assert checked.ok and checked.count >= 8, checked

        asked += [svc.ask("alice", PRICE).json() for _ in range(30)]
        line = max(len(p.read_bytes()) // max(1, p.read_bytes().count(b"\n")) for p in runs.iterdir())
        for folder in (runs, svc.ws.traces_dir / "journals"):  # bounded: what is kept, and the open journal
            assert _size(folder) <= int(0.04 * (1 << 20)) + int(0.01 * (1 << 20)) + line, os.listdir(folder)
        gone = svc.client.get(f"/v1/runs/{asked[0]['run_id']}", headers=svc.as_("alice"))
        assert gone.status_code == 404  # its journal was removed: the runs past the bound are gone
        latest = svc.client.get(f"/v1/runs/{asked[-1]['run_id']}", headers=svc.as_("alice"))
        assert latest.status_code == 200
        checked = audit.verify()  # the audit is not a rotated journal: its chain is whole
        assert checked.ok and checked.count >= 38, checked

"""Faults in the middle of work, as a user of ``toolcrib serve`` meets them (issue 39): PostgreSQL going
away and coming back, a server killed -9 while an approval commits or a WRITE runs, a full disk under
the trace or run folder. Nothing acknowledged is lost, no call runs twice, the audit chain verifies,
and clients get a clear 503 with ``Retry-After`` in toolcrib's error shape while a store is down, and
normal answers after it, without restarting anything. Real processes, a real PostgreSQL of the test's
own (``fakes/pg_cluster.py``), real tmpfs mounts; ``benchmarks/chaos.py`` measures the same faults."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import signal
import sqlite3
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from fakes import pg_cluster  # noqa: E402
from fakes.serving import create_keys, serving, serving_process, toolcrib_command  # noqa: E402
from fakes.workspaces import demo_workspace  # noqa: E402
from toolcrib.trace.journal import trace_lines  # noqa: E402
from toolcrib.workspace import Workspace  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]


@pytest.fixture(scope="module")
def pg() -> Iterator[pg_cluster.PrivatePostgres]:
    """A PostgreSQL server of this module's own: stopping it disturbs nobody else's tests."""
    reason = pg_cluster.available()
    if reason:
        pytest.skip(f"no private PostgreSQL server: {reason}")
    with pg_cluster.PrivatePostgres() as server:
        yield server


def _workspace(root: Path, dsn: str | None) -> Path:
    """A copy of the demo workspace (on ``dsn`` if given) whose sweep runs every second."""
    return demo_workspace(root / "ws", dsn, {"expiry_sweep_s": 1})


def _headers(keys: dict[str, str], user: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {keys[user]}"}


def _ask(url: str, key: str, question: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/ask", json={"question": question}, headers={"Authorization": f"Bearer {key}"},
                      timeout=60)


def _unavailable(response: httpx.Response) -> None:
    """A 503 a client can act on: toolcrib's error shape, a stable code, when to retry, no internals."""
    assert response.status_code == 503, response.text
    assert int(response.headers["Retry-After"]) >= 1
    body = response.json()
    assert set(body) == {"error"} and {"code", "message"} <= set(body["error"])
    assert body["error"]["code"] == "unavailable"
    assert "127.0.0.1" not in body["error"]["message"] and "Traceback" not in body["error"]["message"]


def _eventually(check: Callable[[], bool], what: str, within_s: float = 60) -> None:
    deadline = time.monotonic() + within_s
    while not check():
        assert time.monotonic() < deadline, f"never: {what}"
        time.sleep(0.05)  # polling a state another process changes


def _verify(ws: Path) -> str:
    done = subprocess.run([toolcrib_command(), "audit", "verify", "--workspace", str(ws)], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


class Pair:
    """Two ``toolcrib serve`` processes on one workspace on the private PostgreSQL; A can be killed -9."""

    def __init__(self, ws: Path, dsn: str, urls: list[str], procs: list[subprocess.Popen[bytes]],
                 keys: dict[str, str]) -> None:
        self.ws, self.dsn, self.urls, self.procs, self.keys = ws, dsn, urls, procs, keys

    def post(self, i: int, path: str, user: str, body: Any = None) -> httpx.Response:
        return httpx.post(self.urls[i] + path, json=body, headers=_headers(self.keys, user), timeout=120)

    def propose(self, part: str) -> tuple[str, dict[str, Any]]:
        asked = self.post(0, "/v1/ask", "alice", {"question": f"Please reserve 1 {part} units"})
        assert asked.status_code == 200 and asked.json()["outcome"] == "paused", asked.text
        pid = asked.json()["pending"][0]["proposal_id"]
        shown = httpx.get(f"{self.urls[1]}/v1/proposals/{pid}", headers=_headers(self.keys, "ada"), timeout=60)
        return asked.json()["run_id"], shown.json()

    def kill_a(self) -> None:
        os.kill(self.procs[0].pid, signal.SIGKILL)
        self.procs[0].wait()

    def status(self, pid: str) -> str:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            return str(conn.execute("SELECT status FROM toolcrib_proposals WHERE id = %s", (pid,)).fetchone()[0])

    def audit_events(self, pid: str) -> list[str]:
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            rows = conn.execute("SELECT event FROM toolcrib_audit WHERE proposal_id = %s ORDER BY seq", (pid,))
            return [e for (e,) in rows.fetchall()]

    def reservations(self, part: str) -> int:
        with sqlite3.connect(self.ws / "data" / "demo.sqlite") as db:
            return int(db.execute("SELECT count(*) FROM reservations WHERE part_number = ?", (part,)).fetchone()[0])


@pytest.fixture
def pair(pg: pg_cluster.PrivatePostgres, tmp_path: Path) -> Iterator[Pair]:
    """A fresh pair (A is killed by the tests that use it) on a fresh database."""
    dsn = pg.create_database(f"toolcrib_faults_{uuid.uuid4().hex[:8]}")
    ws = _workspace(tmp_path, dsn)
    keys = create_keys(ws, ("alice", "ada"))
    with (serving_process(ws, tmp_path / "a.log") as (a, proc_a),
          serving_process(ws, tmp_path / "b.log") as (b, proc_b)):
        yield Pair(ws, dsn, [a, b], [proc_a, proc_b], keys)


def test_postgresql_down_answers_503_with_retry_after_and_normal_answers_once_it_is_back(
        pg: pg_cluster.PrivatePostgres, tmp_path: Path) -> None:
    ws = _workspace(tmp_path, pg.create_database(f"toolcrib_faults_{uuid.uuid4().hex[:8]}"))
    keys = create_keys(ws, ("alice", "ada"))
    with serving(ws, tmp_path / "serve.log") as url:
        assert _ask(url, keys["alice"], "What does part HLV-2205 cost?").status_code == 200
        pg.stop("fast")  # every connection the server held is ended
        try:
            _unavailable(_ask(url, keys["alice"], "What does part HLV-2205 cost?"))
            _unavailable(httpx.get(f"{url}/v1/proposals", headers=_headers(keys, "ada"), timeout=30))
            streamed = httpx.post(f"{url}/v1/ask", json={"question": "What does part F1 cost?"}, timeout=30,
                                  headers={**_headers(keys, "alice"), "Accept": "text/event-stream"})
            _unavailable(streamed)
            assert httpx.get(f"{url}/readyz", timeout=30).status_code == 503  # out of the load balancer
            assert httpx.get(f"{url}/healthz", timeout=30).status_code == 200  # but alive: not restarted
        finally:
            pg.start()
        # the same process, not restarted: the first request after the restart is answered
        answered = _ask(url, keys["alice"], "What does part HLV-2205 cost?")
        assert answered.status_code == 200 and "$52.00" in answered.json()["text"], answered.text
        assert httpx.get(f"{url}/v1/proposals", headers=_headers(keys, "ada"), timeout=30).status_code == 200
        assert httpx.get(f"{url}/readyz", timeout=30).status_code == 200
    assert "audit chain OK" in _verify(ws)


def test_a_server_killed_inside_an_approval_leaves_no_approval_and_the_retry_on_the_other_counts_once(
        pair: Pair) -> None:
    run_id, shown = pair.propose("F1")
    before = pair.reservations("F1")
    with pg_cluster.holding(pair.dsn, "SELECT 1 FROM toolcrib_proposals WHERE id = %s FOR UPDATE", shown["id"]):
        thread, got = pg_cluster.in_thread(lambda: pair.post(0, f"/v1/proposals/{shown['id']}/approve", "ada",
                                                   {"hash": shown["hash"]}))
        _eventually(lambda: pg_cluster.waiting_on_lock(pair.dsn, "%toolcrib_proposals%"), "the approval waits")
        pair.kill_a()
    thread.join()
    assert isinstance(got[0], httpx.HTTPError)  # the approver's page got no answer
    assert pair.status(shown["id"]) == "pending"  # not recorded at all

    retried = pair.post(1, f"/v1/proposals/{shown['id']}/approve", "ada", {"hash": shown["hash"]})
    assert retried.status_code == 200 and retried.json()["status"] == "approved", retried.text
    resumed = pair.post(1, f"/v1/runs/{run_id}/resume", "alice")
    assert resumed.status_code == 200 and resumed.json()["outcome"] == "answered", resumed.text
    assert pair.reservations("F1") == before + 1
    assert pair.audit_events(shown["id"]) == ["proposed", "approved", "executed"]
    assert "audit chain OK" in _verify(pair.ws)


def test_a_server_killed_after_an_approval_commits_gets_its_audit_record_from_the_survivor(pair: Pair) -> None:
    run_id, shown = pair.propose("F2")
    with pg_cluster.holding(pair.dsn, "LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE"):
        thread, got = pg_cluster.in_thread(lambda: pair.post(0, f"/v1/proposals/{shown['id']}/approve", "ada",
                                                   {"hash": shown["hash"]}))
        _eventually(lambda: pg_cluster.waiting_on_lock(pair.dsn, "%LOCK TABLE toolcrib_audit%"),
                    "the audit append waits")
        assert pair.status(shown["id"]) == "approved"  # committed; its audit record was not
        pair.kill_a()
    thread.join()
    assert isinstance(got[0], httpx.HTTPError)  # the approver's page got no answer
    retried = pair.post(1, f"/v1/proposals/{shown['id']}/approve", "ada", {"hash": shown["hash"]})
    assert retried.status_code == 409 and retried.json()["error"]["reason"] == "used"  # approved once, not twice
    # the survivor's sweep appends the record the killed process never wrote
    _eventually(lambda: "approved" in pair.audit_events(shown["id"]), "the approval in the audit")
    assert pair.audit_events(shown["id"]).count("approved") == 1
    resumed = pair.post(1, f"/v1/runs/{run_id}/resume", "alice")
    assert resumed.status_code == 200 and resumed.json()["outcome"] == "answered", resumed.text
    assert "audit chain OK" in _verify(pair.ws)


def test_runs_waiting_on_a_locked_audit_table_stall_none_of_the_process_s_other_requests(pair: Pair) -> None:
    """A run is a task on the service's event loop; its store commits run in worker threads. Runs whose
    READ records wait on an audit table another process has locked wait there, and the same process goes on
    answering: its health check, who a key stands for, the runs' proposals page. Once the lock is gone the
    waiting runs answer, and every READ of theirs is in a chain that verifies."""
    with pg_cluster.holding(pair.dsn, "LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE"):
        asks = [pg_cluster.in_thread(functools.partial(pair.post, 0, "/v1/ask", "alice",
                                                       {"question": f"What does part {part} cost?"}))
                for part in ("F1", "F2")]  # two: runs_per_user
        _eventually(lambda: pg_cluster.waiting_on_lock(pair.dsn, "%LOCK TABLE toolcrib_audit%"),
                    "the runs' audit commits wait")
        began = time.monotonic()
        for _ in range(5):
            assert httpx.get(f"{pair.urls[0]}/healthz", timeout=5).status_code == 200
            me = httpx.get(f"{pair.urls[0]}/v1/me", headers=_headers(pair.keys, "alice"), timeout=5)
            assert me.status_code == 200
        assert time.monotonic() - began < 5
        assert all(thread.is_alive() for thread, _ in asks), [got for _, got in asks]  # still waiting
    for thread, got in asks:
        thread.join(60)
        assert got[0].status_code == 200 and got[0].json()["outcome"] == "answered", got[0]
    assert "audit chain OK" in _verify(pair.ws)


def test_a_server_killed_after_a_write_ran_never_runs_it_again_and_the_run_resumes_on_the_other(
        pair: Pair) -> None:
    run_id, shown = pair.propose("F1")
    pid = shown["id"]
    assert pair.post(1, f"/v1/proposals/{pid}/approve", "ada", {"hash": shown["hash"]}).status_code == 200
    before = pair.reservations("F1")
    db = sqlite3.connect(pair.ws / "data" / "demo.sqlite", isolation_level=None)
    db.execute("BEGIN IMMEDIATE")  # the tool waits inside the call for the database
    try:
        thread, got = pg_cluster.in_thread(lambda: pair.post(0, f"/v1/runs/{run_id}/resume", "alice"))
        _eventually(lambda: pair.status(pid) == "executing", "the approval claimed")
        with pg_cluster.holding(pair.dsn, "SELECT 1 FROM toolcrib_proposals WHERE id = %s FOR UPDATE", pid):
            db.execute("ROLLBACK")  # the write goes through; recording its outcome waits, and A dies
            _eventually(lambda: pair.reservations("F1") == before + 1, "the write")
            _eventually(lambda: pg_cluster.waiting_on_lock(pair.dsn, "%toolcrib_proposals%"), "the outcome waits")
            pair.kill_a()
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.close()
    thread.join()
    assert isinstance(got[0], httpx.HTTPError)

    for _ in range(2):  # resumed on the survivor, twice: the call is reported, never run again
        resumed = pair.post(1, f"/v1/runs/{run_id}/resume", "alice")
        assert resumed.status_code == 200, resumed.text
        assert [c["status"] for c in resumed.json()["executed"]] == ["outcome_unknown"], resumed.json()
    assert pair.reservations("F1") == before + 1
    assert pair.status(pid) == "outcome_unknown"
    assert pair.audit_events(pid) == ["proposed", "approved", "outcome_unknown"]
    assert "audit chain OK" in _verify(pair.ws)


# -- a full disk -----------------------------------------------------------------------------------------


class SmallDisk:
    """A folder on a 1 MiB tmpfs of its own, which ``fill`` fills to the last byte and ``make_room`` empties."""

    def __init__(self, folder: Path) -> None:
        self.filler = folder / "filler"

    def fill(self) -> None:
        fd = os.open(self.filler, os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):  # ENOSPC: full
            while os.write(fd, b"\0" * 4096):
                pass
        os.close(fd)

    def make_room(self) -> None:
        self.filler.unlink()


@contextlib.contextmanager
def _small_disk(folder: Path, size: str = "1m") -> Iterator[SmallDisk]:
    folder.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}): run as root to fill a disk")
    try:
        yield SmallDisk(folder)
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def test_a_full_trace_disk_fails_no_run_and_loses_none_of_its_events(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, None)
    keys = create_keys(ws, ("alice",))
    with _small_disk(ws / ".toolcrib" / "traces") as disk, serving(ws, tmp_path / "serve.log") as url:
        disk.fill()
        during = _ask(url, keys["alice"], "What does part HLV-2205 cost?")
        assert during.status_code == 200 and "$52.00" in during.json()["text"], during.text
        run = httpx.get(f"{url}/v1/runs/{during.json()['run_id']}", headers=_headers(keys, "alice"), timeout=30)
        assert "call_executed" in [e["kind"] for e in run.json()["events"]]  # the run record has every event
        disk.make_room()
        after = _ask(url, keys["alice"], "What does part F1 cost?")
        assert after.status_code == 200
        assert trace_lines(ws / ".toolcrib" / "traces", after.json()["trace_id"])  # the server's trace journal
    assert "trace lines were not written" in (tmp_path / "serve.log").read_text()
    assert "audit chain OK" in _verify(ws)


def test_a_full_run_folder_answers_503_and_the_write_runs_once_when_there_is_room(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, None)  # SQLite stores: runs are files in the run folder
    keys = create_keys(ws, ("alice", "ada"))
    with _small_disk(ws / ".toolcrib" / "runs") as disk, serving(ws, tmp_path / "serve.log") as url:
        asked = _ask(url, keys["alice"], "Please reserve 1 F2 units")
        run_id, pid = asked.json()["run_id"], asked.json()["pending"][0]["proposal_id"]
        shown = httpx.get(f"{url}/v1/proposals/{pid}", headers=_headers(keys, "ada"), timeout=30).json()
        approved = httpx.post(f"{url}/v1/proposals/{pid}/approve", json={"hash": shown["hash"]},
                              headers=_headers(keys, "ada"), timeout=30)
        assert approved.status_code == 200
        before = Pair(ws, "", [], [], keys).reservations("F2")
        disk.fill()
        _unavailable(_ask(url, keys["alice"], "What does part HLV-2205 cost?"))
        resumed = httpx.post(f"{url}/v1/runs/{run_id}/resume", headers=_headers(keys, "alice"), timeout=60)
        _unavailable(resumed)  # the call ran; its run could not be recorded
        disk.make_room()
        again = httpx.post(f"{url}/v1/runs/{run_id}/resume", headers=_headers(keys, "alice"), timeout=60)
        assert again.status_code == 200, again.text
        assert [c["status"] for c in again.json()["executed"]] == ["ok"]  # the recorded outcome, replayed
        assert Pair(ws, "", [], [], keys).reservations("F2") == before + 1
        assert _ask(url, keys["alice"], "What does part HLV-2205 cost?").status_code == 200
    assert "audit chain OK" in _verify(ws)


def test_a_full_disk_under_the_sqlite_stores_answers_503_and_normal_answers_once_there_is_room(
        tmp_path: Path) -> None:
    ws = _workspace(tmp_path, None)  # keys, rate limits, approvals and the audit in SQLite files
    with _small_disk(ws / ".toolcrib", "16m") as disk:
        keys = create_keys(ws, ("alice",))
        with serving(ws, tmp_path / "serve.log") as url:
            assert _ask(url, keys["alice"], "What does part HLV-2205 cost?").status_code == 200
            disk.fill()
            _unavailable(_ask(url, keys["alice"], "What does part F1 cost?"))
            disk.make_room()
            answered = _ask(url, keys["alice"], "What does part HLV-2205 cost?")
            assert answered.status_code == 200 and "$52.00" in answered.json()["text"], answered.text
        assert "audit chain OK" in _verify(ws)


def test_a_server_killed_under_load_keeps_every_answered_run_its_record_trace_and_audit(tmp_path: Path) -> None:
    """Run records, trace lines and READ audit records are written without an fsync (and the trace by the
    run itself, the audit through its journal): each is with the operating system before the Answer goes
    out, so kill -9 in the middle of concurrent asks loses nothing of a run a client was answered."""
    ws = _workspace(tmp_path, None)
    keys = create_keys(ws, ("alice", "hana"))
    parts = ["HLV-2205", "HLV-2210", "F1", "F2", "PSU-4030", "FAN-8025", "RLY-1240", "ENC-2000"]
    answered: list[dict[str, Any]] = []
    stop = threading.Event()

    def client(i: int, url: str) -> None:
        with httpx.Client(base_url=url, timeout=30, headers=_headers(keys, ("alice", "hana")[i % 2])) as c:
            n = 0
            while not stop.is_set():
                question = f"What does part {parts[(i + n) % len(parts)]} cost?"
                try:
                    response = c.post("/v1/ask", json={"question": question})
                except httpx.HTTPError:  # the server is gone
                    return
                if response.status_code == 200:
                    answered.append(response.json())
                n += 1

    with serving_process(ws, tmp_path / "serve.log") as (url, proc):
        clients = [threading.Thread(target=client, args=(i, url)) for i in range(6)]
        for thread in clients:
            thread.start()
        _eventually(lambda: len(answered) >= 60, "60 answers")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stop.set()
        for thread in clients:
            thread.join()
    workspace = Workspace.open(ws)
    runs, audit = workspace.run_store, workspace.audit()
    executed = {r.trace_id for r in audit.records() if r.event == "executed"}
    audit.close()
    for answer in answered:
        record = runs.get(answer["run_id"])
        assert record is not None and record.outcome == answer["outcome"] == "answered", answer
        kinds = [e["kind"] for e in record.events]
        assert kinds[-1] == "run_finished"
        trace = trace_lines(workspace.traces_dir, answer["trace_id"])  # in the killed server's trace journal
        assert [json.loads(line)["kind"] for line in trace] == kinds
        if "call_executed" in kinds:  # a READ the gate ran (not one served from its cache) is audited
            assert answer["trace_id"] in executed
    assert "audit chain OK" in _verify(ws)

"""Faults that lose nothing: two ``toolcrib serve`` processes on one PostgreSQL, real processes, kill -9.

    python benchmarks/chaos.py [--clients 50] [--soak-seconds 600] [--outage-s 3] [--quick]

A private PostgreSQL server (its own data folder and port, made with ``initdb``; the machine's shared
server is never touched) holds approvals, runs, keys and the audit of two ``toolcrib serve`` processes
(A and B) on one copy of the demo workspace, with the deterministic desk model. Background clients ask
READ questions over both processes the whole time (a client whose process is gone goes to the other,
as a load balancer would; after a 503 it tries again 0.25 s later, sooner than ``Retry-After`` says, to
time the recovery). The faults, one after another:

1. ``write_killed_before_commit``: A is killed -9 while an approved reserve_stock runs, before its write
   commits (a held SQLite lock keeps it inside the tool).
2. ``write_killed_after_commit``: A is killed -9 after the write committed, before its outcome is
   recorded (a held row lock keeps ``finish`` waiting).
3. ``approval_killed_before_commit``: A is killed -9 inside the approval's transaction (a held row lock).
4. ``approval_killed_after_commit``: A is killed -9 after the approval committed, before its audit
   record is appended (a held audit table lock).
5. ``audit_killed``: A is killed -9 while its READ audit records wait to be appended under load.
6. ``postgres_restart``: PostgreSQL stopped (fast: every connection ended) for ``--outage-s`` and started
   again, under load; a run paused before it is approved and resumed after it.
7. ``trace_disk_full``: the trace folder is a full tmpfs for a while, under load.

After each: approvals lost (an approval given that the store or the audit does not hold), calls
executed twice (reservations rows, ``executed`` audit records), whether the paused run resumed on the
survivor, ``toolcrib audit verify``, what clients saw during the fault (statuses; every 503 with a
``Retry-After``) and how long after it each process answered 200 again, without a restart. A killed A
is started again before the next fault. Acknowledged READs missing from the audit are counted over the
whole run. Then the soak: ``--clients`` clients for ``--soak-seconds`` over both processes: errors,
resident memory of each process after warm-up (the first tenth) and at the end, p95 per tenth.

Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick
import httpx
from _serving import free_port, make_keys, percentile, rounded
from serve_load import PARTS, USERS, make_workspace, toolcrib_serve

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fakes import pg_cluster  # noqa: E402  (tests/fakes/pg_cluster.py: the private PostgreSQL server)

# -- processes ------------------------------------------------------------------------------------------


class Serve:
    """One ``toolcrib serve`` process that can be killed -9 and started again on the same port."""

    def __init__(self, name: str, ws: Path, logs: Path) -> None:
        self.name, self.ws, self.logs = name, ws, logs
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, deadline_s: float = 60) -> float:
        """Start and wait for ``/readyz``; returns the seconds it took."""
        started = time.monotonic()
        self.starts += 1
        with (self.logs / f"{self.name}-{self.starts}.log").open("wb") as out:
            command = [p.replace("{port}", str(self.port)) for p in toolcrib_serve(self.ws)]
            self.proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}: {self.log_text()[-3000:]}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/readyz", timeout=2).status_code == 200:
                    return time.monotonic() - started
            if time.monotonic() - started > deadline_s:
                raise RuntimeError(f"{self.name} not ready in {deadline_s}s: {self.log_text()[-3000:]}")
            time.sleep(0.05)

    def kill(self) -> None:
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def rss_mb(self) -> float:
        assert self.proc is not None
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def log_text(self) -> str:
        return "".join(p.read_text(errors="replace") for p in sorted(self.logs.glob(f"{self.name}-*.log")))


# -- background load ------------------------------------------------------------------------------------


@dataclass
class Seen:
    """One answer a background client got."""

    at: float  # monotonic
    target: int  # 0: A, 1: B
    status: str  # "200", "503", "ConnectError", "stream_error:unavailable" ...
    retry_after: bool
    ms: float
    trace_id: str = ""


@dataclass
class Load:
    """``clients`` clients asking READ questions over the processes until stopped (its own event loop, in
    a thread). ``seen`` is every answer, in order."""

    serves: list[Serve]
    keys: dict[str, str]
    clients: int
    seen: list[Seen] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Load:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._drive()), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join()

    async def _drive(self) -> None:
        await asyncio.gather(*(self._client(i) for i in range(self.clients)))

    async def _client(self, i: int) -> None:
        n, avoid = 0, [0.0, 0.0]  # a process that dropped a connection is avoided for a second (a health check)
        key = self.keys[USERS[i % len(USERS)]]
        async with httpx.AsyncClient(timeout=60) as client:
            while not self._stop.is_set():
                part = PARTS[(i * 7 + n) % len(PARTS)]
                target = (i + n) % 2
                if avoid[target] > time.monotonic():
                    target = 1 - target
                n += 1
                started = time.monotonic()
                try:
                    r = await client.post(self.serves[target].url + "/v1/ask", json={
                        "question": f"What does part {part} cost?"}, headers={"Authorization": f"Bearer {key}"})
                except httpx.HTTPError as exc:  # the process is gone: the other one, as a load balancer would
                    self.seen.append(Seen(time.monotonic(), target, type(exc).__name__, False, 0.0))
                    avoid[target] = time.monotonic() + 1.0
                    await asyncio.sleep(0.05)
                    continue
                ms = (time.monotonic() - started) * 1000
                body = r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
                trace = body.get("trace_id", "") if r.status_code == 200 else ""
                self.seen.append(Seen(time.monotonic(), target, str(r.status_code), "retry-after" in r.headers,
                                      ms, trace))
                if r.status_code != 200:
                    await asyncio.sleep(0.25)

    def between(self, start: float, end: float) -> list[Seen]:
        return [s for s in self.seen if start <= s.at < end]


def saw(seen: Sequence[Seen]) -> dict[str, Any]:
    """What clients saw in a window: answers by status, and whether every 503 carried Retry-After."""
    statuses = Counter(s.status for s in seen)
    unavailable = [s for s in seen if s.status == "503"]
    return {"answers": dict(statuses), "retry_after_on_every_503": all(s.retry_after for s in unavailable),
            "errors_500": sum(n for k, n in statuses.items() if k.startswith("5") and k != "503")}


def recovery(load: Load, since: float, serves: int = 2) -> dict[str, Any]:
    """Seconds from ``since`` to each process's first 200, and what came after that which was not a 200."""
    out: dict[str, Any] = {}
    later = load.between(since, float("inf"))
    for target in range(serves):
        first = next((s.at for s in later if s.target == target and s.status == "200"), None)
        out[f"recovered_s_{'AB'[target]}"] = None if first is None else first - since
        out[f"non_200_after_recovery_{'AB'[target]}"] = sum(
            1 for s in later if s.target == target and first is not None and s.at > first and s.status != "200")
    return out


# -- the cluster ----------------------------------------------------------------------------------------


@dataclass
class Cluster:
    ws: Path
    dsn: str
    pg: pg_cluster.PrivatePostgres
    serves: list[Serve]
    keys: dict[str, str]

    def h(self, user: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}"}

    def call(self, target: int, method: str, path: str, user: str, body: Any = None,
             timeout: float = 60) -> httpx.Response:
        return httpx.request(method, self.serves[target].url + path, headers=self.h(user), json=body,
                             timeout=timeout)

    def propose(self, part: str, target: int = 0) -> tuple[str, dict[str, Any]]:
        """alice asks to reserve one unit on ``target``; returns the run id and the proposal as ada sees it."""
        asked = self.call(target, "POST", "/v1/ask", "alice", {"question": f"Please reserve 1 {part} units"})
        answer = asked.json()
        assert asked.status_code == 200 and answer["outcome"] == "paused", asked.text
        pid = answer["pending"][0]["proposal_id"]
        shown = self.call(1 - target, "GET", f"/v1/proposals/{pid}", "ada").json()
        return answer["run_id"], shown

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            return list(conn.execute(query, params).fetchall())

    def status(self, pid: str) -> str:
        rows = self.sql("SELECT status FROM toolcrib_proposals WHERE id = %s", pid)
        return str(rows[0][0]) if rows else ""

    def audit_events(self, pid: str) -> list[str]:
        return [e for (e,) in self.sql("SELECT event FROM toolcrib_audit WHERE proposal_id = %s ORDER BY seq", pid)]

    def reservations(self, part: str) -> int:
        with sqlite3.connect(self.ws / "data" / "demo.sqlite") as db:
            return int(db.execute("SELECT count(*) FROM reservations WHERE part_number = ?", (part,)).fetchone()[0])

    def verify(self, cli: bool = False) -> dict[str, Any]:
        """The audit chain walked, as ``toolcrib audit verify`` does: in this process (after each fault), or
        with ``cli`` by the command itself, as an operator runs it (at the end)."""
        if not cli:
            from toolcrib.workspace import Workspace

            with Workspace.open(self.ws).audit() as audit:
                found = audit.verify()
            return {"audit_verify_ok": found.ok, "audit_verify": f"{found.count} records"
                    + ("" if found.ok else f", broken at {found.first_bad_seq}: {found.problem}")}
        exe = toolcrib_serve(self.ws)[0]
        done = subprocess.run([exe, "audit", "verify", "--workspace", str(self.ws)], capture_output=True, text=True,
                              timeout=300)
        return {"audit_verify_ok": done.returncode == 0, "audit_verify": (done.stdout + done.stderr).strip()[-200:]}

    def waiting_on_lock(self, like: str) -> bool:
        return pg_cluster.waiting_on_lock(self.dsn, like)


def wait_for(check: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


def answered(response: Any) -> str:
    return type(response).__name__ if isinstance(response, Exception) else str(response.status_code)


# -- the faults -----------------------------------------------------------------------------------------


def resume_on_survivor(c: Cluster, run_id: str, pid: str, part: str, before: int) -> dict[str, Any]:
    """Resume on B (the survivor) and count what ran: the answer, the proposal's status, its audit records
    and the reservations made."""
    started = time.monotonic()
    resumed = c.call(1, "POST", f"/v1/runs/{run_id}/resume", "alice", timeout=120)
    body = resumed.json()
    executed = body.get("executed") or []
    refused = body.get("refused") or []
    events = c.audit_events(pid)
    made = c.reservations(part) - before
    return {
        "resume_status": resumed.status_code, "resume_s": time.monotonic() - started,
        "resume_outcome": body.get("outcome"),
        "call_reported_as": (executed[0].get("status") if executed else
                             f"refused:{refused[0].get('error', {}).get('reason', '?')}" if refused else None),
        "proposal_status": c.status(pid), "audit_events": events, "reservations_made": made,
        "resumed_on_survivor": resumed.status_code == 200 and body.get("outcome") != "paused" and bool(executed),
        "double_executions": max(0, made - 1) + max(0, events.count("executed") - 1),
        "lost_approvals": int("approved" not in events),
    }


def write_killed(c: Cluster, part: str, after_commit: bool) -> dict[str, Any]:
    run_id, shown = c.propose(part, target=0)
    pid = shown["id"]
    approved = c.call(1, "POST", f"/v1/proposals/{pid}/approve", "ada", {"hash": shown["hash"]})
    assert approved.status_code == 200, approved.text
    before = c.reservations(part)
    started = time.monotonic()
    db = sqlite3.connect(c.ws / "data" / "demo.sqlite", isolation_level=None)
    db.execute("BEGIN IMMEDIATE")  # the tool waits for the database's write lock inside the call
    try:
        thread, got = pg_cluster.in_thread(lambda: c.call(0, "POST", f"/v1/runs/{run_id}/resume", "alice"))
        wait_for(lambda: c.status(pid) == "executing", 30, "the claim")
        if after_commit:  # the write commits; recording its outcome waits on the proposal's row; A dies
            with pg_cluster.holding(c.dsn, "SELECT 1 FROM toolcrib_proposals WHERE id = %s FOR UPDATE", pid):
                db.execute("ROLLBACK")
                wait_for(lambda: c.reservations(part) > before, 30, "the write to commit")
                wait_for(lambda: c.waiting_on_lock("%toolcrib_proposals%"), 30, "the outcome to wait")
                c.serves[0].kill()
        else:  # A dies inside the call, before the write
            time.sleep(0.3)
            c.serves[0].kill()
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
        db.close()
    killed_at = time.monotonic() - started
    thread.join()
    out = resume_on_survivor(c, run_id, pid, part, before)
    out.update({"client_of_killed_process_saw": answered(got[0]), "killed_after_s": killed_at,
                "write_committed_before_kill": after_commit})
    return out


def approval_killed(c: Cluster, part: str, after_commit: bool) -> dict[str, Any]:
    run_id, shown = c.propose(part, target=1)
    pid = shown["id"]
    before = c.reservations(part)

    def approve(target: int) -> Callable[[], httpx.Response]:
        return lambda: c.call(target, "POST", f"/v1/proposals/{pid}/approve", "ada", {"hash": shown["hash"]})

    if after_commit:  # the approval commits; its audit record waits on the audit table, then A dies
        with pg_cluster.holding(c.dsn, "LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE"):
            thread, got = pg_cluster.in_thread(approve(0))
            wait_for(lambda: c.status(pid) == "approved", 30, "the approval to commit")
            wait_for(lambda: c.waiting_on_lock("%LOCK TABLE toolcrib_audit%"), 30, "the audit append to wait")
            c.serves[0].kill()
    else:  # the approval's transaction waits on the proposal's row, then A dies
        with pg_cluster.holding(c.dsn, "SELECT 1 FROM toolcrib_proposals WHERE id = %s FOR UPDATE", pid):
            thread, got = pg_cluster.in_thread(approve(0))
            wait_for(lambda: c.waiting_on_lock("%toolcrib_proposals%"), 30, "the approval to wait")
            c.serves[0].kill()
    thread.join()
    killed = time.monotonic()
    status_after_kill = c.status(pid)
    retried = approve(1)()  # the approver, told nothing, tries again on the survivor
    out = resume_on_survivor(c, run_id, pid, part, before)
    out["audit_events_at_resume"] = out["audit_events"]
    with contextlib.suppress(RuntimeError):  # a decision without its record: any process's sweep appends it
        wait_for(lambda: "approved" in c.audit_events(pid), 30, "the approval's audit record")
    out["approval_in_audit_after_s"] = time.monotonic() - killed if "approved" in c.audit_events(pid) else None
    out["audit_events"] = c.audit_events(pid)
    out["lost_approvals"] = int("approved" not in out["audit_events"])
    out.update({"client_of_killed_process_saw": answered(got[0]), "status_after_kill": status_after_kill,
                "retry_on_survivor": retried.status_code,
                "retry_reason": retried.json().get("error", {}).get("reason") if retried.status_code != 200 else "",
                "approvals_recorded": out["audit_events"].count("approved")})
    return out


def audit_killed(c: Cluster, load: Load) -> dict[str, Any]:
    """A's READ audit appends pile up behind a held audit table lock; A is killed while they wait."""
    with pg_cluster.holding(c.dsn, "LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE"):
        wait_for(lambda: c.waiting_on_lock("%LOCK TABLE toolcrib_audit%"), 30, "audit appends to wait")
        time.sleep(0.3)
        waiting = len(c.sql("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"))
        c.serves[0].kill()
    return {"appends_waiting_at_kill": waiting}


def postgres_restart(c: Cluster, load: Load, outage_s: float) -> dict[str, Any]:
    run_id, shown = c.propose("PSU-0505", target=0)
    before = c.reservations("PSU-0505")
    down = time.monotonic()
    c.pg.stop("fast")
    time.sleep(outage_s)
    during_approve = c.call(1, "POST", f"/v1/proposals/{shown['id']}/approve", "ada", {"hash": shown["hash"]})
    c.pg.start()
    up = time.monotonic()
    wait_for(lambda: any(s.at > up and s.status == "200" for s in load.seen), 30, "an answer after the restart")
    time.sleep(1.0)
    approved = c.call(1, "POST", f"/v1/proposals/{shown['id']}/approve", "ada", {"hash": shown["hash"]})
    out = {"outage_s": up - down, **saw(load.between(down, up)), **recovery(load, up),
           "approve_during_outage": during_approve.status_code,
           "approve_during_outage_code": during_approve.json().get("error", {}).get("code"),
           "approve_during_outage_retry_after": during_approve.headers.get("retry-after"),
           "approve_after": approved.status_code}
    out.update(resume_on_survivor(c, run_id, shown["id"], "PSU-0505", before))
    return out


def trace_disk_full(c: Cluster, load: Load, seconds: float) -> dict[str, Any]:
    """A 256 KiB tmpfs over the trace folder, filled to the last byte, for ``seconds``; then room again."""
    traces = c.ws / ".toolcrib" / "traces"
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(traces)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        return {"skipped": f"cannot mount a tmpfs here: {mounted.stderr.strip()}"}
    try:
        fd = os.open(traces / "filler", os.O_WRONLY | os.O_CREAT)
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 4096):
                pass
        os.close(fd)
        full = time.monotonic()
        time.sleep(seconds)
        runs_during = [s.trace_id for s in load.between(full, time.monotonic()) if s.status == "200"]
        (traces / "filler").unlink()
        room = time.monotonic()
        time.sleep(min(seconds, 2.0))
        files_after = sum(1 for p in traces.glob("*.jsonl"))
        recorded = {t for (t,) in c.sql("SELECT DISTINCT trace_id FROM toolcrib_audit WHERE trace_id = ANY(%s)",
                                         runs_during)}
    finally:
        subprocess.run(["umount", "-l", str(traces)], capture_output=True)
    logs = "".join(s.log_text() for s in c.serves)
    return {**saw(load.between(full, room)), **recovery(load, room),
            "answered_during": len(runs_during), "answered_during_missing_from_audit": len(set(runs_during) - recorded),
            "trace_files_written_after": files_after,
            "servers_logged_trace_failure": "trace lines were not written" in logs}


def soak(c: Cluster, clients: int, seconds: float) -> dict[str, Any]:
    load = Load(c.serves, c.keys, clients)
    samples: list[tuple[float, float, float]] = []
    started = time.monotonic()
    with load:
        while time.monotonic() - started < seconds:
            time.sleep(1.0)
            samples.append((time.monotonic() - started, c.serves[0].rss_mb(), c.serves[1].rss_mb()))
    tenths = []
    for k in range(10):
        lo, hi = started + seconds * k / 10, started + seconds * (k + 1) / 10
        window = [s.ms for s in load.between(lo, hi) if s.status == "200"]
        tenths.append(percentile(window, 0.95))
    warm = next((s for s in samples if s[0] >= seconds / 10), samples[0])
    end = samples[-1]
    growth = [(end[i] - warm[i]) / warm[i] * 100 for i in (1, 2)]
    ok = [s for s in load.seen if s.status == "200"]
    return {"clients": clients, "seconds": seconds, "requests": len(load.seen),
            "requests_per_s": len(load.seen) / seconds, "errors": len(load.seen) - len(ok),
            "answers": dict(Counter(s.status for s in load.seen)),
            "p50_ms": percentile([s.ms for s in ok], 0.5), "p95_ms": percentile([s.ms for s in ok], 0.95),
            "p95_ms_by_tenth": tenths, "p95_last_over_second_tenth": tenths[-1] / tenths[1] if tenths[1] else None,
            "rss_mb_after_warmup": [warm[1], warm[2]], "rss_mb_end": [end[1], end[2]],
            "rss_growth_pct": growth, "rss_within_10pct": all(g <= 10 for g in growth)}


# -- main -----------------------------------------------------------------------------------------------


def shown(value: Any) -> Any:
    """``rounded``, into lists too."""
    if isinstance(value, list):
        return [shown(v) for v in value]
    if isinstance(value, dict):
        return {k: shown(v) for k, v in value.items()}
    return rounded(value)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=50, help="soak clients")
    parser.add_argument("--soak-seconds", type=float, default=600, help="length of the soak")
    parser.add_argument("--fault-clients", type=int, default=8, help="background clients during the faults")
    parser.add_argument("--outage-s", type=float, default=3.0, help="how long PostgreSQL stays down")
    parser.add_argument("--disk-full-s", type=float, default=3.0, help="how long the trace folder stays full")
    parser.add_argument("--skip", default="", help="faults to leave out, comma-separated")
    args = _quick.parse(parser, argv, clients=8, soak_seconds=4.0, fault_clients=4, outage_s=1.5, disk_full_s=1.0,
                        skip="write_killed_before_commit")  # it waits out the tool's timeout as its twin does
    reason = pg_cluster.available()
    if reason:
        print(f"chaos needs a private PostgreSQL server: {reason}")
        print(json.dumps({"skipped": reason}))
        return 0
    figures: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_start": list(os.getloadavg())}
    begun = time.monotonic()
    with (tempfile.TemporaryDirectory(prefix="chaos_") as tmp_name, pg_cluster.PrivatePostgres() as pg):
        tmp = Path(tmp_name)
        dsn = pg.create_database(f"toolcrib_chaos_{uuid.uuid4().hex[:8]}")
        service = {"model_slots": 8, "queue": 512, "runs_per_minute": 10_000_000, "runs_per_user": 512,
                   "expiry_sweep_s": 1}
        ws = make_workspace(tmp / "ws", dsn, service, stock=100_000)
        keys = make_keys(ws, USERS)
        serves = [Serve("A", ws, tmp), Serve("B", ws, tmp)]
        try:
            figures["start_s"] = [s.start() for s in serves]
            c = Cluster(ws, dsn, pg, serves, keys)
            faults: dict[str, Any] = {}
            figures["faults"] = faults
            with Load(serves, keys, args.fault_clients) as load:
                steps: list[tuple[str, Callable[[], dict[str, Any]]]] = [
                    ("write_killed_before_commit", lambda: write_killed(c, "F1", after_commit=False)),
                    ("write_killed_after_commit", lambda: write_killed(c, "F2", after_commit=True)),
                    ("approval_killed_before_commit", lambda: approval_killed(c, "F3", after_commit=False)),
                    ("approval_killed_after_commit", lambda: approval_killed(c, "HLV-2205", after_commit=True)),
                    ("audit_killed", lambda: audit_killed(c, load)),
                    ("postgres_restart", lambda: postgres_restart(c, load, args.outage_s)),
                    ("trace_disk_full", lambda: trace_disk_full(c, load, args.disk_full_s)),
                ]
                skipped = set(filter(None, args.skip.split(",")))
                for name, step in steps:
                    if name in skipped:
                        continue
                    print(f"{name} ...", flush=True)
                    t0 = time.monotonic()
                    out = step()
                    if serves[0].proc is not None and serves[0].proc.poll() is not None:  # killed: back again
                        out["restarted_A_s"] = serves[0].start()
                    out["clients_saw"] = saw(load.between(t0, time.monotonic()))  # the fault, to A's restart
                    out.update(c.verify())
                    out["fault_s"] = time.monotonic() - t0
                    faults[name] = out
                    print("  " + json.dumps(shown(out)), flush=True)
            acknowledged = {s.trace_id for s in load.seen if s.status == "200" and s.trace_id}
            audited = {t for (t,) in c.sql("SELECT DISTINCT trace_id FROM toolcrib_audit WHERE tool = 'lookup_part'")}
            figures["fault_load"] = {**saw(load.seen), "answered": len(acknowledged),
                                     "acknowledged_reads_missing_from_audit": len(acknowledged - audited)}
            print(f"background load during the faults: {figures['fault_load']}")
            print(f"soak: {args.clients} clients for {args.soak_seconds:g}s over both processes ...", flush=True)
            figures["soak"] = soak(c, args.clients, args.soak_seconds)
            figures["soak"].update(c.verify(cli=True))
            print("  " + json.dumps(shown(figures["soak"])))
        finally:
            for s in serves:
                s.stop()
    figures["totals"] = {
        "lost_approvals": sum(f.get("lost_approvals", 0) for f in faults.values()),
        "double_executions": sum(f.get("double_executions", 0) for f in faults.values()),
        "audit_chain_breaks": sum(not f["audit_verify_ok"] for f in faults.values())
        + (not figures["soak"]["audit_verify_ok"]),
        "acknowledged_reads_missing_from_audit": figures["fault_load"]["acknowledged_reads_missing_from_audit"],
        "responses_500": figures["fault_load"]["errors_500"],
    }
    figures["total_s"] = time.monotonic() - begun
    print(f"totals: {figures['totals']}; {figures['total_s']:.0f}s")
    print(json.dumps(shown(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

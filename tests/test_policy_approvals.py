"""Approvals bound to the exact call: single use, expiring, no self-approval, atomic claims
across threads and processes, on a real SQLite file and a real PostgreSQL."""

from __future__ import annotations

import multiprocessing as mp
import secrets
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcrib.errors import InvalidArguments
from toolcrib.policy.approvals import ApprovalStore, PostgresApprovalStore, SQLiteApprovalStore
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import ApprovalRefused, Review, proposal_hash

DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3"
ALICE = Principal("alice", "acme", frozenset({"staff"}))
BOB = Principal("bob", "acme", frozenset({"managers"}))
MALLORY = Principal("mallory", "other-co", frozenset({"managers"}))
ARGS = {"part": "R-100", "qty": 3}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _pg_schema() -> Iterator[str]:
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(DSN, autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    schema = "tc_test_" + secrets.token_hex(6)
    try:
        yield schema
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


StoreFactory = Callable[..., ApprovalStore]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, str, str | None]]:
    """(kind, target, schema): where a store of this kind lives, so tests can open several."""
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "data" / "approvals.db"), None
    else:
        yield from (("postgres", DSN, s) for s in _pg_schema())


def _open(kind: str, target: str, schema: str | None, **kw: Any) -> ApprovalStore:
    if kind == "sqlite":
        return SQLiteApprovalStore(target, **kw)
    return PostgresApprovalStore(target, schema=schema, **kw)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(backend: tuple[str, str, str | None], clock: Clock) -> Iterator[ApprovalStore]:
    with _open(*backend, clock=clock) as s:
        yield s


def _hash(args: dict[str, Any] = ARGS, rv: str = "v1", who: Principal = ALICE) -> str:
    return proposal_hash("reserve_stock", args, who.user_id, who.tenant, "1", rv)


def _refused(fn: Callable[[], object]) -> str:
    with pytest.raises(ApprovalRefused) as info:
        fn()
    return info.value.reason


def test_approved_call_runs_once_and_its_outcome_is_kept(store: ApprovalStore) -> None:
    p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1", run_id="r1", trace_id="t1")
    assert p.status == "pending" and p.hash == _hash() and p.requester == "alice"
    assert [x.id for x in store.pending("acme")] == [p.id]
    assert store.pending("other-co") == []

    approval = store.approve(p.id, BOB, ttl_s=60)
    assert approval.approver == "bob" and approval.proposal_hash == p.hash
    assert store.pending() == []

    used = store.claim(p.id, _hash(), tool="reserve_stock", arguments=ARGS, current_resource_version="v1")
    assert used.used_at is not None
    assert _refused(lambda: store.claim(p.id, _hash())) == "used"

    store.finish(p.id, "executed", {"reservation": "RS-1", "qty": 3.0})
    assert store.outcome(p.id) == ("executed", {"reservation": "RS-1", "qty": 3})
    got = store.get(p.id)
    assert got is not None and got.status == "executed" and got.decided_by == "bob"
    assert _refused(lambda: store.finish(p.id, "failed", {})) == "used"


def test_the_same_call_proposed_again_is_the_same_proposal(store: ApprovalStore) -> None:
    p1 = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
    p2 = store.propose("reserve_stock", {"qty": 3.0, "part": "R-100"}, ALICE, "1", "v1")
    p3 = store.propose("reserve_stock", {"part": "R-100", "qty": 4}, ALICE, "1", "v1")
    assert p1.id == p2.id != p3.id
    store.approve(p1.id, BOB)
    assert store.propose("reserve_stock", ARGS, ALICE, "1", "v1").id == p1.id  # approved, unused
    store.claim(p1.id, p1.hash)
    assert store.propose("reserve_stock", ARGS, ALICE, "1", "v1").id != p1.id  # used: a new one


def test_nobody_approves_their_own_call_or_another_tenants(store: ApprovalStore) -> None:
    p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
    assert _refused(lambda: store.approve(p.id, ALICE)) == "self_approval"
    assert _refused(lambda: store.approve(p.id, MALLORY)) == "not_an_approver"
    assert _refused(lambda: store.claim(p.id, p.hash)) == "not_approved"
    assert store.approve(p.id, ALICE, allow_self=True).approver == "alice"
    assert _refused(lambda: store.approve(p.id, BOB)) == "used"


def test_an_edited_argument_or_a_changed_resource_refuses_the_claim(store: ApprovalStore) -> None:
    p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
    store.approve(p.id, BOB)
    edited = {"part": "R-100", "qty": 300}
    assert _refused(lambda: store.claim(p.id, _hash(edited), tool="reserve_stock", arguments=edited,
                                        current_resource_version="v1")) == "edited"
    assert _refused(lambda: store.claim(p.id, _hash(rv="v2"), tool="reserve_stock", arguments=ARGS,
                                        current_resource_version="v2")) == "stale"
    assert _refused(lambda: store.claim(p.id, _hash(rv="v2"), current_resource_version="v2")) == "stale"
    assert _refused(lambda: store.claim(p.id, _hash(edited))) == "edited"
    # refusals did not consume the approval: the exact approved call still runs, once
    store.claim(p.id, _hash(), tool="reserve_stock", arguments=ARGS, current_resource_version="v1")


def test_approvals_and_proposals_expire(backend: tuple[str, str, str | None], clock: Clock) -> None:
    with _open(*backend, clock=clock, pending_ttl_s=3600) as store:
        p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
        store.approve(p.id, BOB, ttl_s=60)
        clock.now += 61
        assert _refused(lambda: store.claim(p.id, p.hash)) == "expired"
        assert store.get(p.id).status == "expired"  # type: ignore[union-attr]

        old = store.propose("reserve_stock", {"part": "C-1", "qty": 1}, ALICE, "1", "v1")
        clock.now += 3601
        assert store.pending() == []
        assert _refused(lambda: store.approve(old.id, BOB)) == "expired"
        assert store.propose("reserve_stock", {"part": "C-1", "qty": 1}, ALICE, "1", "v1").id != old.id


def test_an_approval_without_a_recorded_expiry_is_refused_as_expired(tmp_path: Path, clock: Clock) -> None:
    """``approve`` always records an expiry; a row altered to lack one fails closed instead of crashing."""
    import sqlite3

    path = tmp_path / "approvals.db"
    with SQLiteApprovalStore(path, clock=clock) as store:
        p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
        granted = store.approve(p.id, BOB, ttl_s=60)
        assert store.approval(p.id) == granted
        assert store.propose("reserve_stock", ARGS, ALICE, "1", "v1").id == p.id
        conn = sqlite3.connect(path)
        with conn:  # commits
            conn.execute("UPDATE toolcrib_proposals SET expires_at = NULL WHERE id = ?", (p.id,))
        conn.close()
        assert store.approval(p.id) is None
        assert _refused(lambda: store.claim(p.id, p.hash)) == "expired"
        assert store.get(p.id).status == "expired"  # type: ignore[union-attr]

def test_rejected_and_unknown_proposals_cannot_run(store: ApprovalStore) -> None:
    p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
    store.reject(p.id, BOB, "not this week")
    got = store.get(p.id)
    assert got is not None and got.status == "rejected" and got.reason == "not this week"
    assert _refused(lambda: store.approve(p.id, BOB)) == "rejected"
    assert _refused(lambda: store.claim(p.id, p.hash)) == "rejected"
    # an approval not yet used can be revoked
    q = store.propose("reserve_stock", {"part": "Q", "qty": 1}, ALICE, "1", "v1")
    store.approve(q.id, BOB)
    store.reject(q.id, BOB, "revoked")
    assert _refused(lambda: store.claim(q.id, q.hash)) == "rejected"
    assert _refused(lambda: store.claim("prop_nope", "0" * 64)) == "not_found"
    assert store.get("prop_nope") is None and store.outcome("prop_nope") is None


def test_outcome_unknown_can_be_reconciled(store: ApprovalStore) -> None:
    p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
    store.approve(p.id, BOB)
    assert _refused(lambda: store.finish(p.id, "executed", {})) == "not_approved"
    store.claim(p.id, p.hash)
    store.finish(p.id, "outcome_unknown", {"error": "timeout"})
    assert store.outcome(p.id) == ("outcome_unknown", {"error": "timeout"})
    store.finish(p.id, "executed", {"reservation": "RS-9"})
    assert store.outcome(p.id) == ("executed", {"reservation": "RS-9"})
    with pytest.raises(ValueError):
        store.finish(p.id, "done", {})


def test_non_finite_arguments_are_refused(store: ApprovalStore) -> None:
    with pytest.raises(InvalidArguments):
        store.propose("set_supply_voltage", {"volts": float("nan")}, ALICE, "1", "v1")


def test_decisions_survive_reopening(backend: tuple[str, str, str | None]) -> None:
    with _open(*backend) as first:
        p = first.propose("reserve_stock", ARGS, ALICE, "1", "v1")
        first.approve(p.id, BOB)
    with _open(*backend) as second:
        approval = second.approval(p.id)
        assert approval is not None and approval.approver == "bob" and approval.used_at is None
        second.claim(p.id, p.hash)
        assert second.approval(p.id).used_at is not None  # type: ignore[union-attr]


def _ready_proposal(backend: tuple[str, str, str | None]) -> tuple[str, str]:
    with _open(*backend) as store:
        p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1")
        store.approve(p.id, BOB)
    return p.id, p.hash


@pytest.mark.parametrize("shared", [True, False], ids=["one-store", "store-per-thread"])
def test_eight_threads_claiming_at_once_exactly_one_wins(
    backend: tuple[str, str, str | None], shared: bool
) -> None:
    pid, h = _ready_proposal(backend)
    stores = [_open(*backend)] * 8 if shared else [_open(*backend) for _ in range(8)]
    barrier = threading.Barrier(8)
    results: list[str] = []
    lock = threading.Lock()

    def worker(store: ApprovalStore) -> None:
        barrier.wait()
        try:
            store.claim(pid, h)
            outcome = "ok"
        except ApprovalRefused as exc:
            outcome = exc.reason
        with lock:
            results.append(outcome)

    threads = [threading.Thread(target=worker, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in set(stores):
        s.close()
    assert sorted(results) == ["ok"] + ["used"] * 7


def _claim_in_process(backend: tuple[str, str, str | None], pid: str, h: str,
                      barrier: Any, results: Any) -> None:
    store = _open(*backend)
    barrier.wait()
    try:
        store.claim(pid, h)
        results.put("ok")
    except ApprovalRefused as exc:
        results.put(exc.reason)
    finally:
        store.close()


def test_four_processes_claiming_at_once_exactly_one_wins(backend: tuple[str, str, str | None]) -> None:
    pid, h = _ready_proposal(backend)
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_claim_in_process, args=(backend, pid, h, barrier, results))
             for _ in range(4)]
    for p in procs:
        p.start()
    outcomes = sorted(results.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert outcomes == ["ok", "used", "used", "used"]


def test_an_edit_supersedes_the_original_and_approves_a_new_single_use_proposal(store: ApprovalStore) -> None:
    p = store.propose("reserve_stock", ARGS, ALICE, "1", "v1", run_id="r1")
    edited_args = {"part": "R-100", "qty": 1}
    review = Review("", {"qty": ["approver bob"]}, [])
    assert _refused(lambda: store.edit(p.id, ALICE, edited_args, "v1", review)) == "self_approval"
    assert _refused(lambda: store.edit(p.id, MALLORY, edited_args, "v1", review)) == "not_an_approver"
    edited, approval = store.edit(p.id, BOB, edited_args, "v1", review, reason="one is enough", ttl_s=60)
    assert (edited.supersedes, edited.requester, edited.run_id, edited.status) == (p.id, "alice", "r1", "approved")
    assert edited.hash == proposal_hash("reserve_stock", edited_args, "alice", "acme", "1", "v1", review) != p.hash
    assert approval.proposal_hash == edited.hash and approval.approver == "bob"
    original = store.get(p.id)
    assert original is not None and (original.status, original.superseded_by) == ("superseded", edited.id)
    assert (original.decided_by, original.reason) == ("bob", "one is enough")
    assert store.pending() == []
    assert _refused(lambda: store.approve(p.id, BOB)) == "superseded"
    assert _refused(lambda: store.edit(p.id, BOB, {"part": "R-100", "qty": 2}, "v1", review)) == "superseded"
    assert _refused(lambda: store.claim(p.id, p.hash)) == "superseded"
    store.claim(edited.id, edited.hash)
    assert _refused(lambda: store.claim(edited.id, edited.hash)) == "used"


def test_expire_due_records_each_expiry_once_with_a_per_proposal_time_to_live(
        backend: tuple[str, str, str | None], clock: Clock) -> None:
    with _open(*backend, clock=clock, pending_ttl_s=3600) as store, _open(*backend, clock=clock) as other:
        short = store.propose("reserve_stock", ARGS, ALICE, "1", "v1", pending_ttl_s=10)
        long = store.propose("reserve_stock", {"part": "C-1", "qty": 1}, ALICE, "1", "v1")
        assert short.pending_until == clock.now + 10
        clock.now += 11
        assert [p.id for p in store.pending()] == [long.id]
        assert _refused(lambda: store.approve(short.id, BOB)) == "expired"  # refused; the sweep records it
        assert [(p.id, p.status) for p in store.expire_due()] == [(short.id, "expired")]
        assert other.expire_due() == [] and store.expire_due() == []
        clock.now += 3600
        assert [p.id for p in other.expire_due()] == [long.id]

"""The audit record: append-only, hash-chained, tamper-evident, intact after a SIGKILL,
in order across processes; on a real SQLite file and a real PostgreSQL."""

from __future__ import annotations

import itertools
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from toolcrib.policy.audit import (
    GENESIS_HASH,
    AuditStore,
    PostgresAuditStore,
    SQLiteAuditStore,
    redact_arguments,
    redact_changes,
)

DSN = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3"
SRC = str(Path(__file__).resolve().parents[1] / "src")

Backend = tuple[str, str, "str | None"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    if request.param == "sqlite":
        yield "sqlite", str(tmp_path / "audit.db"), None
        return
    yield from _postgres()


@pytest.fixture
def pg_backend() -> Iterator[Backend]:
    yield from _postgres()


def _postgres() -> Iterator[Backend]:
    """A PostgreSQL schema of its own for one test, dropped after it."""
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(DSN, autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    schema = "tc_test_" + secrets.token_hex(6)
    try:
        yield "postgres", DSN, schema
    finally:
        admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        admin.close()


def _open(kind: str, target: str, schema: str | None) -> AuditStore:
    return SQLiteAuditStore(target) if kind == "sqlite" else PostgresAuditStore(target, schema=schema)


def _raw(backend: Backend, sql: str) -> None:
    """Run SQL behind the store's back, as an attacker with file or superuser access would."""
    kind, target, schema = backend
    if kind == "sqlite":
        conn = sqlite3.connect(target, isolation_level=None)
        conn.execute(sql)
        conn.close()
    else:
        import psycopg

        with psycopg.connect(target, autocommit=True) as pg:
            pg.execute(f'SET search_path TO "{schema}"')
            pg.execute(sql)


def _fill(store: AuditStore, n: int = 5) -> None:
    for i in range(n):
        store.append("proposed" if i % 2 else "executed", actor="alice", decided_by="model",
                     tool="reserve_stock", proposal_id=f"prop_{i}", trace_id="t1",
                     detail={"i": i, "qty": 3.0, "note": "Grüße"})


def test_records_form_a_chain_that_verifies(backend: Backend) -> None:
    with _open(*backend) as store:
        assert store.verify().ok and store.head() == (0, GENESIS_HASH)
        _fill(store)
        records = list(store.records())
        assert [r.seq for r in records] == [1, 2, 3, 4, 5]
        assert records[0].prev_hash == GENESIS_HASH
        assert all(b.prev_hash == a.hash for a, b in itertools.pairwise(records))
        assert records[2].detail == {"i": 2, "qty": 3, "note": "Grüße"}
        assert store.verify().ok and store.verify().count == 5
        assert store.head() == (5, records[-1].hash)
        assert [r.seq for r in store.records(after_seq=3)] == [4, 5]
        with pytest.raises(ValueError):
            store.append("hacked", actor="x", decided_by="model")
    with _open(*backend) as again:  # the same chain, read back by a new process-like store
        assert again.verify().ok and list(again.records()) == records


def test_the_database_refuses_updates_and_deletes(backend: Backend) -> None:
    with _open(*backend) as store:
        _fill(store, 2)
    for sql in ("UPDATE toolcrib_audit SET actor = 'mallory'", "DELETE FROM toolcrib_audit"):
        with pytest.raises(Exception, match="append-only"):
            _raw(backend, sql)
    if backend[0] == "postgres":
        with pytest.raises(Exception, match="append-only"):
            _raw(backend, "TRUNCATE toolcrib_audit")
    with _open(*backend) as store:
        assert store.verify().count == 2


def _disable_guards(backend: Backend) -> None:
    if backend[0] == "sqlite":
        _raw(backend, "DROP TRIGGER toolcrib_audit_no_update")
        _raw(backend, "DROP TRIGGER toolcrib_audit_no_delete")
    else:
        _raw(backend, "ALTER TABLE toolcrib_audit DISABLE TRIGGER USER")


def test_tampering_is_detected(backend: Backend) -> None:
    with _open(*backend) as store:
        _fill(store)
        anchor = store.head()
    # opening a store re-creates the guards, so an attacker removes them before each edit
    _disable_guards(backend)
    _raw(backend, "UPDATE toolcrib_audit SET detail = '{\"i\":2,\"qty\":300}' WHERE seq = 3")
    with _open(*backend) as store:
        v = store.verify()
        assert not v.ok and v.first_bad_seq == 3 and v.count == 2 and "hash" in v.problem

    _disable_guards(backend)
    _raw(backend, "DELETE FROM toolcrib_audit WHERE seq = 3")
    with _open(*backend) as store:
        v = store.verify()
        assert not v.ok and v.first_bad_seq == 3 and "missing" in v.problem

    _disable_guards(backend)
    _raw(backend, "DELETE FROM toolcrib_audit WHERE seq >= 3")
    with _open(*backend) as store:
        assert store.verify().ok  # a truncated tail is a valid shorter chain ...
        v = store.verify(anchor=anchor)  # ... which the published head catches
        assert not v.ok and v.first_bad_seq == 5


_APPEND_FOREVER = """
import sys
sys.path.insert(0, sys.argv[1])
from toolcrib.policy.audit import PostgresAuditStore, SQLiteAuditStore
kind, target, schema = sys.argv[2], sys.argv[3], sys.argv[4] or None
store = SQLiteAuditStore(target) if kind == "sqlite" else PostgresAuditStore(target, schema=schema)
store.append("proposed", actor="child", decided_by="model")
print("ready", flush=True)
i = 0
while True:
    store.append("executed", actor="child", decided_by="code", detail={"i": i, "pad": "x" * 200})
    i += 1
"""


def _spawn_appender(backend: Backend) -> subprocess.Popen[str]:
    kind, target, schema = backend
    return subprocess.Popen([sys.executable, "-c", _APPEND_FOREVER, SRC, kind, target, schema or ""],
                            stdout=subprocess.PIPE, text=True)


def test_a_process_killed_while_appending_leaves_a_valid_chain(backend: Backend) -> None:
    with _open(*backend) as store:
        _fill(store, 1)
    child = _spawn_appender(backend)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    with _open(*backend) as store:
        v = store.verify()
        assert v.ok, v
        assert v.count > 2
        store.append("refused", actor="alice", decided_by="code")  # the chain goes on
        assert store.verify().ok and store.verify().count == v.count + 1


def _append_many(backend: Backend, n: int) -> None:
    with _open(*backend) as store:
        for i in range(n):
            store.append("allowed", actor=f"p{os.getpid()}", decided_by="policy", detail={"i": i})


def test_appends_from_several_processes_keep_one_chain(backend: Backend) -> None:
    import multiprocessing as mp

    with _open(*backend) as store:
        _fill(store, 1)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_append_many, args=(backend, 25)) for _ in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    with _open(*backend) as store:
        v = store.verify()
        assert v.ok and v.count == 101
        assert len({r.actor for r in store.records()}) == 5


def test_redaction_hides_declared_fields_but_keeps_them_comparable() -> None:
    args: dict[str, Any] = {"customer": "C-7", "card": {"number": "4111111111111111", "cvc": "123"},
                            "email": "a@example.com", "qty": 2.0}
    out = redact_arguments(args, ("email", "card.number", "missing", "qty.nope"))
    assert out["customer"] == "C-7" and out["qty"] == 2 and out["card"]["cvc"] == "123"
    assert out["email"].startswith("[redacted:sha256:") and len(out["email"]) == len("[redacted:sha256:]") + 12
    assert "4111" not in str(out) and "a@example.com" not in str(out)
    assert redact_arguments({"email": "a@example.com"}, ["email"])["email"] == out["email"]
    assert args["email"] == "a@example.com"  # the caller's arguments are untouched


def test_an_edits_changes_are_redacted_on_both_sides() -> None:
    changes = {"email": {"from": "a@example.com", "to": "b@example.com"}, "qty": {"from": 300, "to": 3},
               "card": {"from": {"number": "4111111111111111"}, "to": {"number": "5500000000000004"}}}
    out = redact_changes(changes, ("email", "card.number"))
    assert out["qty"] == {"from": 300, "to": 3}
    assert "a@example.com" not in str(out) and "b@example.com" not in str(out) and "4111" not in str(out)
    assert out["email"]["from"] != out["email"]["to"]  # still comparable: two different values
    assert out["card"]["to"]["number"] == redact_arguments({"n": "5500000000000004"}, ["n"])["n"]


def test_deferred_records_are_chained_in_order_before_the_next_append(backend: Backend) -> None:
    with _open(*backend) as store:
        for i in range(3):  # a run's READ calls: queued, not waited for
            store.append_deferred("executed", actor="alice", decided_by="code", tool="lookup", detail={"i": i})
        store.append("proposed", actor="alice", decided_by="model", tool="reserve_stock", proposal_id="p1")
        with _open(*backend) as other:  # what another process reads
            records = list(other.records())
            assert other.verify().ok
    assert [(r.event, r.detail.get("i")) for r in records] == [
        ("executed", 0), ("executed", 1), ("executed", 2), ("proposed", None)]


@pytest.mark.postgres
def test_a_postgres_store_commits_deferred_records_when_flushed_or_closed(pg_backend: Backend) -> None:
    with _open(*pg_backend) as store, _open(*pg_backend) as other:
        store.append_deferred("executed", actor="alice", decided_by="code", tool="lookup")
        assert other.head()[0] == 0  # queued in its process: nothing waited on the table
        store.flush()
        assert other.head()[0] == 1
        store.append_deferred("executed", actor="alice", decided_by="cache", tool="lookup")
    with _open(*pg_backend) as again:  # closing committed the last one
        assert [r.decided_by for r in again.records()] == ["code", "cache"] and again.verify().ok

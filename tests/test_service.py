"""The HTTP service in process (FastAPI's test client, the real app, a private demo workspace, the
deterministic desk model): credentials, the Answer as JSON and as an AG-UI stream, tenancy, approvals
bound to the hash shown, bounds (slots, queue, rate, size) and error shapes."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from toolcrib.auth.credentials import service_store
from toolcrib.cli import main
from toolcrib.service.app import create_app
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import DEMO_SOURCE

DESK = f"function:{Path(__file__).parent / 'fakes' / 'desk_model.py'}:desk"
PRICE = "What does part HLV-2205 cost?"
RESERVE = "Please reserve 3 F2 filters"


def demo_copy(tmp_path: Path, extra_toml: str = "") -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = target / "toolcrib.toml"
    service = "index_on_start = false\n"  # these tests never search the documents
    extra = extra_toml.replace("[service]\n", "[service]\n" + service) if "[service]\n" in extra_toml else (
        f"[service]\n{service}{extra_toml}")
    config.write_text(config.read_text(encoding="utf-8") + "\n" + extra, encoding="utf-8")
    return target


class Service:
    """A running app with a key per demo user."""

    def __init__(self, root: Path, model: str = DESK) -> None:
        self.root = root
        self.ws = Workspace.open(root)
        store = service_store(self.ws)
        self.keys = {u: store.create_key(u)[1] for u in ("alice", "ada", "omar", "hana")}
        store.close()
        self.client = TestClient(create_app(self.ws, model_spec=model), raise_server_exceptions=False)

    def as_(self, user: str, **headers: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.keys[user]}", **headers}

    def ask(self, user: str, question: str, **body: Any) -> Any:
        return self.client.post("/v1/ask", json={"question": question, **body}, headers=self.as_(user))

    def stream(self, user: str, path: str, body: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        with self.client.stream("POST", path, json=body, headers=self.as_(user, Accept="text/event-stream")) as r:
            assert r.status_code == 200, r.read()
            assert r.headers["content-type"].startswith("text/event-stream")
            return [json.loads(line[6:]) for line in r.iter_lines() if line.startswith("data: ")]

    def stock(self, part: str) -> int:
        with sqlite3.connect(self.root / "data" / "demo.sqlite") as conn:
            return int(conn.execute("SELECT available FROM stock WHERE part_number = ?", (part,)).fetchone()[0])


@pytest.fixture()
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(demo_copy(tmp_path))
    with service.client:
        yield service


def paused_reservation(svc: Service) -> tuple[dict[str, Any], dict[str, Any]]:
    answer = svc.ask("alice", RESERVE).json()
    assert answer["outcome"] == "paused"
    [proposal] = svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()
    return answer, proposal


# -- credentials ------------------------------------------------------------------------------------------


def test_health_needs_no_credential_and_everything_else_does(svc: Service) -> None:
    assert svc.client.get("/healthz").json() == {"status": "ok"}
    assert svc.client.get("/readyz").json()["ready"] is True
    for method, path in (("get", "/v1/me"), ("get", "/v1/proposals"), ("get", "/v1/runs/x"), ("get", "/metrics"),
                         ("post", "/v1/ask"), ("get", "/v1/audit"), ("get", "/v1/ingest")):
        forged = {"Authorization": "Bearer tck_0123456789abcdef_" + "x" * 43}
        response = getattr(svc.client, method)(path, headers=forged)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"
        assert response.json()["error"]["code"] == "unauthenticated"
    assert svc.client.post("/v1/ask", json={"question": PRICE}).status_code == 401
    basic = {"Authorization": "Basic abc"}
    assert svc.client.post("/v1/ask", json={"question": PRICE}, headers=basic).status_code == 401


def test_the_principal_comes_from_the_key_never_from_the_body(svc: Service) -> None:
    assert svc.client.get("/v1/me", headers=svc.as_("omar")).json()["tenant"] == "harrier"
    answer = svc.client.post("/v1/ask", json={"question": PRICE, "user": "ada", "tenant": "kestrel"},
                             headers=svc.as_("omar"))
    assert answer.status_code == 422  # unknown body fields are not silently accepted either
    answer = svc.ask("omar", PRICE).json()
    run = svc.client.get(f"/v1/runs/{answer['run_id']}", headers=svc.as_("omar")).json()
    assert (run["user"], run["tenant"]) == ("omar", "harrier")


def test_token_cli_prints_a_key_once_lists_without_it_and_revokes(tmp_path: Path) -> None:
    root = demo_copy(tmp_path)
    created = CliRunner().invoke(main, ["token", "create", "alice", "--label", "laptop", "--workspace", str(root)])
    assert created.exit_code == 0, created.output
    key = created.stdout.strip()
    assert key.startswith("tck_")
    listed = CliRunner().invoke(main, ["token", "list", "--json", "--workspace", str(root)])
    [info] = json.loads(listed.stdout)
    assert info["user"] == "alice" and info["label"] == "laptop" and key not in listed.stdout
    stored = (root / ".toolcrib" / "service.sqlite").read_bytes()
    assert key.encode() not in stored and key.split("_", 2)[2].encode() not in stored  # only a hash is kept
    unknown = CliRunner().invoke(main, ["token", "create", "mallory", "--workspace", str(root)])
    assert unknown.exit_code == 2 and "unknown user 'mallory'" in unknown.output
    ws = Workspace.open(root)
    with TestClient(create_app(ws, model_spec=DESK)) as client:
        assert client.get("/v1/me", headers={"Authorization": f"Bearer {key}"}).json()["user"] == "alice"
        revoked = CliRunner().invoke(main, ["token", "revoke", info["id"], "--workspace", str(root)])
        assert revoked.exit_code == 0, revoked.output
        assert client.get("/v1/me", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    again = CliRunner().invoke(main, ["token", "revoke", info["id"], "--workspace", str(root)])
    assert again.exit_code == 2 and "no active key" in again.output


def test_a_key_revoked_by_another_process_is_refused_on_the_very_next_request(svc: Service) -> None:
    me = {"Authorization": f"Bearer {svc.keys['alice']}"}
    for _ in range(3):  # checked once against the store, then remembered by the serving process
        assert svc.client.get("/v1/me", headers=me).status_code == 200
    [info] = service_store(svc.ws).keys("alice")
    exe = Path(sys.executable).with_name("toolcrib")
    done = subprocess.run([str(exe), "token", "revoke", info.id, "--workspace", str(svc.root)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert svc.client.get("/v1/me", headers=me).status_code == 401
    assert svc.ask("alice", PRICE).status_code == 401
    assert svc.client.get("/v1/me", headers=svc.as_("ada")).status_code == 200  # other keys stay valid


def test_a_key_with_a_wrong_secret_is_refused(svc: Service) -> None:
    key = svc.keys["alice"]
    forged = key[:-4] + ("aaaa" if not key.endswith("aaaa") else "bbbb")
    assert svc.client.get("/v1/me", headers={"Authorization": f"Bearer {forged}"}).status_code == 401


# -- asking -------------------------------------------------------------------------------------------------


def test_ask_as_json_is_the_answer_the_cli_prints(svc: Service) -> None:
    answer = svc.ask("alice", PRICE).json()
    assert "$52.00" in answer["text"] and [c["id"] for c in answer["citations"]] == ["lookup_part#1"]
    cli = CliRunner().invoke(main, ["ask", PRICE, "--model", DESK, "--workspace", str(svc.root), "--json"])
    assert cli.exit_code == 0, cli.output
    printed = json.loads(cli.stdout.strip().splitlines()[-1])
    assert set(printed) == set(answer)
    assert (printed["text"], printed["citations"]) == (answer["text"], answer["citations"])
    assert answer["run_id"] and answer["trace_id"]


def test_the_stream_is_ag_ui_events_then_the_answer_then_run_finished(svc: Service) -> None:
    core = pytest.importorskip("ag_ui.core")
    from pydantic import TypeAdapter

    frames = svc.stream("alice", "/v1/ask", {"question": PRICE})
    adapter: TypeAdapter[Any] = TypeAdapter(core.Event)
    for frame in frames:
        adapter.validate_python(frame)  # every frame is an AG-UI 1.0 event
    types = [f["type"] for f in frames]
    assert types[0] == "RUN_STARTED" and types[-1] == "RUN_FINISHED"
    assert types.index("TOOL_CALL_START") < types.index("TOOL_CALL_RESULT") < types.index("TEXT_MESSAGE_START")
    [answer] = [f["value"] for f in frames if f["type"] == "CUSTOM" and f["name"] == "toolcrib.answer"]
    assert "$52.00" in answer["text"]
    assert frames[-1]["outcome"] == {"type": "success"}
    decided = [(f["rawEvent"]["kind"], f["rawEvent"]["decided_by"]) for f in frames if "rawEvent" in f]
    assert ("model_decision", "model") in decided and ("call_executed", "code") in decided
    assert ("model_decision", "code") in decided  # the final ask: the desk model is native (no small-model aids)
    run = svc.client.get(f"/v1/runs/{answer['run_id']}", headers=svc.as_("alice")).json()
    assert run["events"][0]["kind"] == "run_started" and run["answer"]["text"] == answer["text"]


def test_a_paused_run_streams_an_interrupt_naming_the_proposal(svc: Service) -> None:
    frames = svc.stream("alice", "/v1/ask", {"question": RESERVE})
    outcome = frames[-1]["outcome"]
    assert outcome["type"] == "interrupt"
    [proposal] = svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()
    assert [i["id"] for i in outcome["interrupts"]] == [proposal["id"]]


def test_approve_then_resume_runs_the_exact_call_once(svc: Service) -> None:
    answer, proposal = paused_reservation(svc)
    assert proposal["tool"] == "reserve_stock" and proposal["effect"] == "write"
    assert proposal["arguments"] == {"part_number": "F2", "quantity": 3}
    assert proposal["question"] == RESERVE and proposal["requester_name"] == "Alice Moreno"
    assert proposal["expires_at"] > time.time()
    assert svc.stock("F2") == 5
    decided = svc.client.post(f"/v1/proposals/{proposal['id']}/approve", json={"hash": proposal["hash"]},
                              headers=svc.as_("ada"))
    assert decided.json()["status"] == "approved" and svc.stock("F2") == 5
    frames = svc.stream("alice", f"/v1/runs/{answer['run_id']}/resume")
    assert frames[-1]["outcome"] == {"type": "success"} and svc.stock("F2") == 2
    replay = svc.client.post(f"/v1/runs/{answer['run_id']}/resume", headers=svc.as_("alice")).json()
    assert replay["executed"][0]["status"] == "ok" and svc.stock("F2") == 2  # the recorded outcome, not a rerun
    run = svc.client.get(f"/v1/runs/{answer['run_id']}", headers=svc.as_("alice")).json()
    assert run["outcome"] == "answered" and len(run["traces"]) == 3
    assert run["proposals"][0]["status"] == "executed"
    kinds = [e["kind"] for e in run["events"]]
    assert kinds.count("run_started") == 1 and kinds.count("run_resumed") == 2


@pytest.mark.parametrize(("who", "body", "status", "reason"), [
    ("ada", {"hash": "0" * 64}, 409, "stale"),
    ("alice", None, 403, "not_an_approver"),
    ("omar", None, 404, "not_found"),
])
def test_refused_decisions_say_why(svc: Service, who: str, body: dict[str, str] | None, status: int,
                                   reason: str) -> None:
    _, proposal = paused_reservation(svc)
    response = svc.client.post(f"/v1/proposals/{proposal['id']}/approve", json=body or {"hash": proposal["hash"]},
                               headers=svc.as_(who))
    assert response.status_code == status
    assert response.json()["error"]["reason"] == reason
    assert svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()[0]["status"] == "pending"
    refused = [r for r in svc.client.get("/v1/audit", headers=svc.as_("ada")).json() if r["event"] == "refused"]
    assert (refused and refused[-1]["detail"]["reason"] == reason) or who == "omar"


def test_self_approval_and_a_second_decision_are_refused(svc: Service) -> None:
    answer = svc.ask("ada", RESERVE).json()
    [mine] = svc.client.get("/v1/runs/" + answer["run_id"], headers=svc.as_("ada")).json()["proposals"]
    assert svc.client.get("/v1/proposals", headers=svc.as_("ada")).json() == []  # not offered to decide on
    own = svc.client.post(f"/v1/proposals/{mine['id']}/approve", json={"hash": mine["hash"]}, headers=svc.as_("ada"))
    assert (own.status_code, own.json()["error"]["reason"]) == (403, "self_approval")
    _, proposal = paused_reservation(svc)
    path = f"/v1/proposals/{proposal['id']}"
    assert svc.client.post(path + "/reject", json={"hash": proposal["hash"], "reason": "no"},
                           headers=svc.as_("ada")).json()["status"] == "rejected"
    late = svc.client.post(path + "/approve", json={"hash": proposal["hash"]}, headers=svc.as_("ada"))
    assert (late.status_code, late.json()["error"]["reason"]) == (409, "rejected")


def test_another_tenant_sees_nothing_and_gets_404_not_403(svc: Service) -> None:
    answer, proposal = paused_reservation(svc)
    omar = svc.as_("omar")
    assert svc.client.get(f"/v1/runs/{answer['run_id']}", headers=omar).status_code == 404
    assert svc.client.get("/v1/runs/does-not-exist", headers=omar).status_code == 404
    assert svc.client.get(f"/v1/proposals/{proposal['id']}", headers=omar).status_code == 404
    assert svc.client.post(f"/v1/runs/{answer['run_id']}/resume", headers=omar).status_code == 404
    assert svc.client.get("/v1/proposals", headers=omar).json() == []
    assert svc.client.get("/v1/runs", headers=omar).json() == []
    assert all(r["actor"] == "omar" for r in svc.client.get("/v1/audit", headers=omar).json())
    # a colleague in the same tenant who is not an approver does not read alice's run either
    assert svc.client.get(f"/v1/runs/{answer['run_id']}", headers=svc.as_("hana")).status_code == 404
    assert svc.client.get(f"/v1/proposals/{proposal['id']}", headers=svc.as_("alice")).json()["id"] == proposal["id"]


# -- bounds and errors ------------------------------------------------------------------------------------


def test_bad_requests_get_one_error_shape(svc: Service) -> None:
    alice = svc.as_("alice")
    broken = svc.client.post("/v1/ask", content=b"{not json", headers={**alice, "Content-Type": "application/json"})
    assert broken.status_code == 422 and broken.json()["error"]["code"] == "invalid_request"
    empty = svc.client.post("/v1/ask", json={"question": ""}, headers=alice)
    assert empty.status_code == 422 and "question" in empty.json()["error"]["message"]
    huge = svc.client.post("/v1/ask", json={"question": "x" * 70_000}, headers=alice)
    assert huge.status_code == 413 and huge.json()["error"]["code"] == "too_large"
    long = svc.client.post("/v1/ask", json={"question": "x" * 5000}, headers=alice)
    assert long.status_code == 400 and long.json()["error"]["code"] == "too_long"
    blank = svc.client.post("/v1/ask", json={"question": "   \n "}, headers=alice)  # no model is asked
    assert blank.status_code == 422 and blank.json()["error"] == {"code": "invalid_request", "message": (
        "question: Value error, the question is empty: write what you want to know or have done")}
    assert svc.client.post("/v1/runs/nope/resume", headers=alice).status_code == 404
    # what `curl -d '{...}'` sends: JSON under a form content type
    curl = svc.client.post("/v1/ask", content=json.dumps({"question": PRICE}),
                           headers={**alice, "Content-Type": "application/x-www-form-urlencoded"})
    assert curl.status_code == 200 and "$52.00" in curl.json()["text"]


def crash(messages: Any, tools: Any) -> str:
    raise RuntimeError("the model backend fell over")


def test_a_crashed_model_is_a_500_or_a_run_error_event_and_the_service_lives_on(tmp_path: Path) -> None:
    service = Service(demo_copy(tmp_path), model=f"function:{__file__}:crash")
    with service.client:
        response = service.ask("alice", PRICE)
        assert response.status_code == 500 and response.json()["error"]["code"] == "internal_error"
        assert "fell over" not in response.text  # no internals leak
        frames = service.stream("alice", "/v1/ask", {"question": PRICE})
        assert frames[-1]["type"] == "RUN_ERROR"
        assert service.client.get("/healthz").status_code == 200


async def slow(messages: Any, tools: Any) -> str:
    await asyncio.sleep(1.0)  # a model that waits: the service answers others meanwhile
    return "slow answer"


def test_a_full_queue_answers_503_with_retry_after_and_health_does_not_wait(tmp_path: Path) -> None:
    root = demo_copy(tmp_path, "[service]\nmodel_slots = 1\nqueue = 0\nruns_per_user = 5\n")
    service = Service(root, model=f"function:{__file__}:slow")
    with service.client:
        results: list[int] = []
        first = threading.Thread(target=lambda: results.append(service.ask("alice", "one").status_code))
        first.start()
        deadline = time.time() + 5
        while service.client.app.state.service.slots.running == 0 and time.time() < deadline:  # type: ignore[attr-defined]
            time.sleep(0.01)
        started = time.perf_counter()
        assert service.client.get("/healthz").status_code == 200
        assert service.client.get("/v1/proposals", headers=service.as_("ada")).status_code == 200
        assert time.perf_counter() - started < 0.9  # answered while the model was busy
        busy = service.ask("ada", "two")
        assert busy.status_code == 503 and int(busy.headers["retry-after"]) >= 1
        first.join()
        assert results == [200]
        metrics = service.client.get("/metrics", headers=service.as_("ada")).text
        assert 'toolcrib_requests_total{route="/v1/ask",status="503"} 1' in metrics
        assert "toolcrib_run_slots 1" in metrics


def test_per_user_rate_limit_answers_429(tmp_path: Path) -> None:
    service = Service(demo_copy(tmp_path, "[service]\nruns_per_minute = 2\n"))
    with service.client:
        codes = [service.ask("alice", PRICE).status_code for _ in range(3)]
        assert codes[:2] == [200, 200] and codes[2] == 429
        assert service.ask("ada", PRICE).status_code == 200  # another user's budget is their own


def test_metrics_are_prometheus_text(svc: Service) -> None:
    svc.ask("alice", PRICE)
    text = svc.client.get("/metrics", headers=svc.as_("ada"))
    assert text.headers["content-type"].startswith("text/plain")
    body = text.text
    assert '# TYPE toolcrib_requests_total counter' in body
    assert 'toolcrib_runs_total{outcome="answered"} 1' in body
    assert 'toolcrib_request_seconds_bucket{route="/v1/ask",le="+Inf"} 1' in body


def test_openapi_describes_the_api(svc: Service) -> None:
    paths = svc.client.get("/openapi.json").json()["paths"]
    for path in ("/v1/ask", "/v1/runs/{run_id}", "/v1/proposals", "/v1/proposals/{proposal_id}/approve",
                 "/v1/runs/{run_id}/resume", "/v1/ingest", "/metrics"):
        assert path in paths


def test_the_document_declares_the_bearer_credential_where_it_is_needed(svc: Service) -> None:
    document = svc.client.get("/openapi.json").json()
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"  # Swagger UI's Authorize
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            public = path in ("/healthz", "/readyz")
            assert ("security" in operation) is not public, (method, path)
            assert public or operation["security"] == [{"bearer": []}], (method, path)
            assert all(p["in"] != "header" for p in operation.get("parameters", [])), (method, path)


def test_serve_refuses_several_workers_without_shared_state(tmp_path: Path) -> None:
    root = demo_copy(tmp_path)
    result = CliRunner().invoke(main, ["serve", "--workers", "2", "--workspace", str(root)])
    assert result.exit_code == 2 and "policy.dsn" in result.output


# -- JWT ----------------------------------------------------------------------------------------------------


def test_jwt_bearer_tokens_map_a_claim_to_the_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jwt = pytest.importorskip("jwt")
    monkeypatch.setenv("TEST_JWT_SECRET", "s" * 40)
    root = demo_copy(tmp_path, '[service.jwt]\nsecret_env = "TEST_JWT_SECRET"\naudience = "toolcrib"\n'
                               'claim = "preferred_username"\n')
    service = Service(root)

    def token(**claims: Any) -> dict[str, str]:
        body = {"preferred_username": "alice", "aud": "toolcrib", "exp": time.time() + 60, **claims}
        return {"Authorization": "Bearer " + jwt.encode(body, "s" * 40, algorithm="HS256")}

    with service.client as client:
        assert client.get("/v1/me", headers=token()).json()["user"] == "alice"
        assert client.get("/v1/me", headers=token(aud="other")).status_code == 401
        assert client.get("/v1/me", headers=token(exp=time.time() - 120)).status_code == 401
        assert client.get("/v1/me", headers=token(preferred_username="mallory")).status_code == 401
        forged = jwt.encode({"preferred_username": "ada", "aud": "toolcrib", "exp": time.time() + 60}, "x" * 40,
                            algorithm="HS256")
        assert client.get("/v1/me", headers={"Authorization": f"Bearer {forged}"}).status_code == 401


def test_jwt_verified_against_a_jwks_file(tmp_path: Path) -> None:
    jwt = pytest.importorskip("jwt")
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    root = demo_copy(tmp_path, '[service.jwt]\njwks_file = "jwks.json"\nissuer = "https://idp.example"\n')
    (root / "jwks.json").write_text(json.dumps({"keys": [{**jwk, "kid": "k1", "use": "sig", "alg": "RS256"}]}))
    service = Service(root)
    claims = {"sub": "ada", "iss": "https://idp.example", "exp": time.time() + 60}
    good = jwt.encode(claims, key, algorithm="RS256", headers={"kid": "k1"})
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    bad = jwt.encode(claims, other, algorithm="RS256", headers={"kid": "k1"})
    with service.client as client:
        assert client.get("/v1/me", headers={"Authorization": f"Bearer {good}"}).json()["user"] == "ada"
        assert client.get("/v1/me", headers={"Authorization": f"Bearer {bad}"}).status_code == 401


def test_every_refusal_is_in_the_error_shape_and_declared_in_the_openapi_document(svc: Service) -> None:
    alice = svc.as_("alice")
    refusals = {
        "unknown route": svc.client.get("/v1/nowhere", headers=alice),
        "method not allowed": svc.client.delete("/v1/me", headers=alice),
        "unparseable body": svc.client.post("/v1/ask", content=b"{not json", headers={
            **alice, "Content-Type": "application/json"}),
        "huge integer": svc.client.get("/v1/audit?after=-484803022829390397440&limit=-67846", headers=alice),
        "limit out of range": svc.client.get("/v1/runs?limit=100000", headers=alice),
    }
    for what, response in refusals.items():
        assert 400 <= response.status_code < 500, (what, response.status_code, response.text)
        body = response.json()
        assert set(body) == {"error"} and body["error"]["code"] and body["error"]["message"], (what, body)
    assert refusals["unknown route"].json()["error"]["code"] == "not_found"
    assert refusals["method not allowed"].json()["error"]["code"] == "method_not_allowed"
    document = svc.client.get("/openapi.json").json()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            declared = set(operation["responses"])
            assert {"400", "401", "403", "404", "409", "413", "422", "429", "503"} <= declared, (method, path)
    assert "ErrorBody" in document["components"]["schemas"]


def test_processes_on_one_sqlite_file_share_the_rate_count_once_flushed(tmp_path: Path) -> None:
    from toolcrib.auth.keys import ServiceStore
    from toolcrib.service.rates import RateWindows

    path = tmp_path / "service.sqlite"
    one, two = RateWindows(ServiceStore.sqlite(path)), RateWindows(ServiceStore.sqlite(path))
    assert [one.hit("alice") for _ in range(3)] == [1, 2, 3]  # one process counts its own runs exactly
    assert two.hit("alice") == 1  # the other has not heard of them yet
    one.flush()
    two.flush()
    assert two.hit("alice") == 5 and two.hit("ada") == 1
    two.flush()
    one.flush()
    assert one.hit("alice") == 6  # each process's own runs count once, wherever they were flushed from
    one.store.close()
    two.store.close()

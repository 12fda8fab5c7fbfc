"""Webhooks and expiry, end to end over HTTP (the real app in process, a private demo workspace, the desk
model) with a real receiver on loopback: signed created, decided and expired events, a refused first
delivery retried and logged, and a per-tool time-to-live that the requester sees and the audit records."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")

from fakes.serving import in_thread
from test_service import Service, demo_copy
from toolcrib.cli import main
from toolcrib.webhooks import SIGNATURE, TIMESTAMP, verify

SECRET = "s3cret-for-tests"
SECRET_ENV = "TOOLCRIB_TEST_WEBHOOK_SECRET"


@dataclass
class Receiver:
    """An HTTP server on loopback that refuses the first ``refuse`` deliveries (503) and records each one."""

    refuse: int = 1
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    url: str = ""

    def accepted(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.received[self.refuse:]]

    def wait_for(self, n: int, timeout_s: float = 15.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout_s
        while len(self.accepted()) < n and time.monotonic() < deadline:
            time.sleep(0.05)  # deliveries run on the notifier's thread
        return self.accepted()


@pytest.fixture()
def receiver() -> Iterator[Receiver]:
    got = Receiver()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with lock:
                got.received.append((dict(self.headers.items()), body))
                refused = len(got.received) <= got.refuse
            self.send_response(503 if refused else 200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    with in_thread(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as server:
        got.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
        yield got


def service(tmp_path: Path, receiver: Receiver, extra: str = "") -> Service:
    toml = (f'{extra}\n[[webhooks]]\nurl = "{receiver.url}"\nsecret_env = "{SECRET_ENV}"\nretries = 3\n'
            "backoff_s = 0.05\n")
    return Service(demo_copy(tmp_path, toml))


def _receiver_example() -> Any:
    path = Path(__file__).resolve().parent.parent / "docs" / "webhook_receiver.py"
    spec = importlib.util.spec_from_file_location("webhook_receiver", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def signed(headers: dict[str, str], body: bytes) -> bool:
    return verify(SECRET.encode(), headers[TIMESTAMP], body, headers[SIGNATURE])


def test_created_and_decided_events_are_signed_and_a_refused_delivery_is_retried(
        tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    svc = service(tmp_path, receiver)
    with svc.client:
        answer = svc.ask("alice", "Please reserve 3 F2 filters").json()
        [created] = receiver.wait_for(1)
        [proposal] = svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()
        svc.client.post(f"/v1/proposals/{proposal['id']}/approve", json={"hash": proposal["hash"]},
                        headers=svc.as_("ada"))
        created, decided = receiver.wait_for(2)
    assert created["event"] == "proposal.created" and created["proposal"]["id"] == proposal["id"]
    assert created["text"] == (f'alice asks to run reserve_stock(part_number="F2", quantity=3): proposal '
                               f'{proposal["id"]} is waiting for approval.')
    assert created["proposal"]["run_id"] == answer["run_id"]
    assert decided["event"] == "proposal.decided" and decided["proposal"]["status"] == "approved"
    assert decided["text"].startswith('ada approved reserve_stock(part_number="F2", quantity=3), asked by alice')
    # the first attempt was refused; the same delivery came again and was accepted
    (first_headers, first_body), (again_headers, _) = receiver.received[:2]
    assert first_headers["X-Toolcrib-Delivery"] == again_headers["X-Toolcrib-Delivery"]
    assert json.loads(first_body)["delivery_id"] == created["delivery_id"]
    assert all(signed(h, b) for h, b in receiver.received)
    example = _receiver_example()  # the documented receiver accepts them too, and refuses a wrong secret
    assert all(example.verified(SECRET.encode(), h, b) for h, b in receiver.received)
    assert not example.verified(b"wrong", first_headers, first_body)
    assert not verify(b"another secret", first_headers[TIMESTAMP], first_body, first_headers[SIGNATURE])
    assert not verify(SECRET.encode(), first_headers[TIMESTAMP], first_body + b" ", first_headers[SIGNATURE])
    log = list(svc.ws.webhook_log.entries())
    attempts = [(e["delivery_id"], e["attempt"], e["status"], e["ok"]) for e in log]
    assert attempts[:2] == [(created["delivery_id"], 1, 503, False), (created["delivery_id"], 2, 200, True)]
    assert (decided["delivery_id"], 1, 200, True) in attempts
    shown = CliRunner().invoke(main, ["webhooks", "log", "--workspace", str(svc.root)])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].startswith(f"{created['delivery_id']} proposal.created") and "attempt 1 refused 503" in lines[0]
    assert "attempt 2 ok      200" in lines[1] and receiver.url in lines[1]


def test_a_missing_signing_secret_is_a_configuration_error_naming_the_variable(
        tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SECRET_ENV, raising=False)
    from toolcrib.errors import ConfigError
    from toolcrib.workspace import Workspace

    root = demo_copy(tmp_path, f'[[webhooks]]\nurl = "{receiver.url}"\nsecret_env = "{SECRET_ENV}"\n')
    with pytest.raises(ConfigError, match=SECRET_ENV):
        Workspace.open(root).approvals()


def test_a_proposal_past_its_tools_time_to_live_expires_the_requester_sees_it_and_the_webhook_fires(
        tmp_path: Path, receiver: Receiver, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SECRET_ENV, SECRET)
    receiver.refuse = 0
    svc = service(tmp_path, receiver, "[policy.proposal_ttl]\nreserve_stock = 1\n")
    svc.ws.config.service.expiry_sweep_s = 0.2
    with svc.client:
        answer = svc.ask("alice", "Please reserve 3 F2 filters").json()
        [proposal] = svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()
        assert proposal["expires_at"] == pytest.approx(proposal["created_at"] + 1)
        _, expired = receiver.wait_for(2)
        assert expired["event"] == "proposal.expired" and expired["proposal"]["id"] == proposal["id"]
        assert expired["text"].endswith(f"expired with no decision (proposal {proposal['id']}).")
        [seen] = svc.client.get(f"/v1/runs/{answer['run_id']}", headers=svc.as_("alice")).json()["proposals"]
        assert seen["status"] == "expired"
        assert svc.client.get("/v1/proposals", headers=svc.as_("ada")).json() == []
        late = svc.client.post(f"/v1/proposals/{proposal['id']}/approve", json={"hash": proposal["hash"]},
                               headers=svc.as_("ada"))
        assert (late.status_code, late.json()["error"]["reason"]) == (409, "expired")
    records = [r for r in svc.ws.audit().records() if r.proposal_id == proposal["id"]]
    assert [(r.event, r.actor, r.decided_by) for r in records] == [
        ("proposed", "alice", "model"), ("expired", "system", "code"), ("refused", "ada", "policy")]
    assert svc.stock("F2") == 5


def test_a_tools_redacted_fields_never_leave_in_a_webhook(tmp_path: Path, receiver: Receiver) -> None:
    from toolcrib.config import WebhookSection
    from toolcrib.policy.proposals import Proposal
    from toolcrib.webhooks import DeliveryLog, Notifier

    receiver.refuse = 0
    notifier = Notifier([WebhookSection(url=receiver.url, events=["created"])], "ws", DeliveryLog(tmp_path / "log"),
                        redact=lambda tool: ("card",) if tool == "charge" else ())
    proposal = Proposal("prop_1", "charge", {"card": "4111111111111111", "amount": 5}, "alice", "t", "1", "", "h",
                        time.time())
    notifier.notify("created", proposal)
    notifier.notify("decided", proposal)  # not an event this webhook takes
    notifier.close()
    [sent] = receiver.accepted()
    assert "4111" not in json.dumps(sent) and sent["proposal"]["arguments"]["amount"] == 5
    assert sent["proposal"]["arguments"]["card"].startswith("[redacted:sha256:")
    assert SIGNATURE not in receiver.received[0][0]  # no secret_env: sent unsigned

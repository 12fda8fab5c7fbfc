"""The page at ``/`` in a real browser (Debian's Chromium, driven by Playwright) against a real ``toolcrib serve``
process on loopback, over a private copy of the demo workspace and the deterministic desk model: a support agent's
reservation waits for an administrator's approval, the administrator approves the exact call on the approvals
view, the agent's page resumes the run by itself, the stock changes once, and a user of another tenant sees none
of it. ``TOOLCRIB_SCREENSHOT=1`` also writes the approvals view to ``docs/approvals.png``."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from fakes.chromium import chromium
from fakes.serving import create_keys, serving, toolcrib_command
from toolcrib.workspace.locate import DEMO_SOURCE

ROOT = Path(__file__).resolve().parent.parent
PRICE = "What does part HLV-2205 cost?"
RESERVE = "Please reserve 3 F2 filters"
RESERVE_REJECTED = "Please reserve 2 F1 filters"
WAIT_MS = 20_000  # a run, a poll (1.5 s) and a resume; generous for a loaded CI machine


@dataclass
class Server:
    """A ``toolcrib serve`` process and a key for each demo user."""

    url: str
    workspace: Path
    keys: dict[str, str] = field(default_factory=dict)

    def get(self, path: str, user: str) -> httpx.Response:
        return httpx.get(self.url + path, headers={"Authorization": f"Bearer {self.keys[user]}"}, timeout=10)

    def stock(self, part: str) -> int:
        with sqlite3.connect(self.workspace / "data" / "demo.sqlite") as db:
            (available,) = db.execute("SELECT available FROM stock WHERE part_number = ?", (part,)).fetchone()
        return int(available)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    workspace = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, workspace, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    keys = create_keys(workspace, ("alice", "ada", "omar"))
    with serving(workspace, tmp_path / "serve.log") as url:
        yield Server(url, workspace, keys)


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


class Session:
    """One person's page in their own browser context (their own sessionStorage), watched for script errors and
    for requests that leave the server."""

    def __init__(self, browser: Browser, server: Server, user: str, name: str) -> None:
        self.context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-GB")
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("console", lambda msg: self.errors.append(msg.text) if msg.type == "error" else None)
        self.page.on("request", lambda req: None if req.url.startswith((server.url + "/", "data:"))
                     else self.errors.append(f"request outside the server: {req.url}"))  # the page works offline
        self.page.goto(server.url + "/")
        self.page.get_by_label("API key").fill(server.keys[user])
        self.page.get_by_role("button", name="Sign in").click()
        expect(self.page.get_by_test_id("who-name")).to_have_text(name)

    def ask(self, question: str) -> None:
        box = self.page.get_by_label("Your question")
        box.fill(question)
        box.press("Enter")

    def tab(self, name: str) -> None:
        self.page.get_by_role("tab", name=name).click()

    def by(self, testid: str) -> Locator:
        return self.page.get_by_test_id(testid)


@pytest.mark.timeout(180)
def test_a_reservation_waits_for_an_approver_and_the_page_resumes_it(browser: Browser, server: Server,
                                                                      tmp_path: Path) -> None:
    expect.set_options(timeout=WAIT_MS)
    alice = Session(browser, server, "alice", "Alice Moreno")

    # A read answers at once; its citation opens the tool result it rests on.
    alice.ask(PRICE)
    expect(alice.by("answer-text")).to_contain_text("$52.00")
    lookup = alice.page.locator("[data-testid=step][data-kind=call_executed]")
    expect(lookup).to_contain_text("lookup_part")
    expect(lookup.get_by_test_id("decided-by")).to_have_text("code")
    decisions = alice.page.locator("[data-testid=step][data-kind=model_decision] [data-testid=decided-by]")
    # the model chose the call; code asked the (native) desk model for its answer from the tool result
    expect(decisions).to_have_text(["model", "code"])
    alice.by("citation").filter(has_text="lookup_part#1").click()
    panel = alice.by("citation-panel")
    expect(panel).to_be_visible()
    expect(panel).to_be_focused()
    expect(alice.by("citation-source")).to_contain_text("lookup_part")
    expect(alice.by("citation-snippet")).to_contain_text('"price": "$52.00"')
    expect(alice.by("citation-snippet")).to_contain_text("HLV-2205")
    alice.page.keyboard.press("Escape")
    expect(panel).to_be_hidden()

    # A write is held: the page waits for approval and offers its requester no way to approve it.
    alice.ask(RESERVE)
    expect(alice.by("waiting")).to_be_visible()
    expect(alice.page.get_by_role("heading", name="Waiting for approval")).to_be_visible()
    expect(alice.by("waiting-note")).to_contain_text("continues the run by itself")
    expect(alice.by("held-call")).to_contain_text('reserve_stock(part_number="F2", quantity=3)')
    expect(alice.by("held-status")).to_have_text("waiting for approval")
    held = alice.page.locator("[data-testid=step][data-kind=call_held]")
    expect(held.get_by_test_id("decided-by")).to_have_text("policy")
    expect(alice.by("answer")).to_be_hidden()
    run_id = alice.page.evaluate("sessionStorage.getItem('toolcrib.run')")
    assert run_id
    alice.tab("Approvals")
    expect(alice.by("approvals-empty")).to_be_visible()
    expect(alice.by("approve")).to_have_count(0)
    alice.page.reload()  # the key and the paused run are kept for the tab: the page picks the wait up again
    expect(alice.by("who-name")).to_have_text("Alice Moreno")
    expect(alice.by("held-call")).to_contain_text('reserve_stock(part_number="F2", quantity=3)')
    expect(alice.by("held-status")).to_have_text("waiting for approval")
    assert server.stock("F2") == 5

    # The administrator sees the exact call, where each value came from, and approves that call.
    ada = Session(browser, server, "ada", "Ada Fitzgerald")
    ada.tab("Approvals")
    card = ada.by("proposal").filter(has_text="reserve_stock")
    expect(card).to_have_count(1)
    expect(card.get_by_test_id("proposal-tool")).to_have_text("reserve_stock")
    expect(card.get_by_test_id("effect")).to_have_text("write")
    part = card.locator("[data-testid=arg-row][data-argument=part_number]")
    expect(part.get_by_test_id("arg-value")).to_have_text('"F2"')
    expect(part.get_by_test_id("arg-source")).to_have_text("user request")
    expect(card.locator("[data-testid=arg-row][data-argument=quantity] [data-testid=arg-value]")).to_have_text("3")
    expect(card.get_by_test_id("proposal-question")).to_have_text(RESERVE)
    expect(card.get_by_test_id("requester")).to_have_text("Alice Moreno")
    expect(card.get_by_test_id("resource-version")).to_contain_text("version 5")
    expect(card.get_by_test_id("expires")).to_contain_text("expires in")
    [pending] = server.get("/v1/proposals", "ada").json()
    expect(card.get_by_test_id("hash")).to_have_text(pending["hash"])
    shot = (ROOT / "docs" if os.environ.get("TOOLCRIB_SCREENSHOT") == "1" else tmp_path) / "approvals.png"
    ada.page.screenshot(path=str(shot))
    assert server.stock("F2") == 5  # nothing ran before a person approved it
    card.get_by_role("button", name="Approve").click()
    expect(ada.by("decision").first).to_contain_text('reserve_stock(part_number="F2", quantity=3)')
    expect(ada.by("proposal")).to_have_count(0)
    expect(ada.by("approvals-empty")).to_be_visible()

    # Alice's page notices the approval, resumes the run by itself and shows what ran as the answer.
    expect(alice.by("answer-text")).to_contain_text(
        "I ran reserve_stock (part_number F2, quantity 3): ada approved it.")
    expect(alice.by("answer-outcome")).to_have_text("Answered")
    expect(alice.by("answer-calls")).to_contain_text('reserve_stock(part_number="F2", quantity=3)')
    approved = alice.page.locator("[data-testid=step][data-kind=call_approved]")
    expect(approved.get_by_test_id("decided-by")).to_have_text("person")
    expect(alice.by("waiting")).to_be_hidden()
    assert server.stock("F2") == 2
    run = server.get(f"/v1/runs/{run_id}", "alice").json()
    assert [p["status"] for p in run["proposals"]] == ["executed"]
    assert run["outcome"] == "answered"

    # A rejection: the requester's page says so, and nothing runs.
    alice.ask(RESERVE_REJECTED)
    expect(alice.by("waiting")).to_be_visible()
    f1 = ada.by("proposal").filter(has_text="reserve_stock")
    expect(f1.locator("[data-testid=arg-row][data-argument=part_number] [data-testid=arg-value]")).to_have_text('"F1"')
    f1.get_by_role("button", name="Reject…").click()
    f1.get_by_label("Reason for rejecting").fill("Not needed this week")
    f1.get_by_role("button", name="Reject call").click()
    expect(ada.by("decision").first).to_contain_text("rejected")
    expect(alice.by("held-status")).to_have_text("rejected by ada")
    expect(alice.by("waiting-note")).to_contain_text("reserve_stock was rejected by ada: “Not needed this week”")
    expect(alice.by("held-edit")).to_have_text("“Not needed this week”")
    alice.by("finish-run").click()
    # nothing found, so code searches the documents: the first search builds this workspace copy's index
    expect(alice.by("answer-calls")).to_contain_text('the proposal was rejected by ada: "Not needed this week"',
                                                     timeout=60_000)
    assert server.stock("F1") == 22

    # Another tenant's user sees none of it.
    omar = Session(browser, server, "omar", "Omar Haddad")
    omar.tab("Approvals")
    expect(omar.by("approvals-empty")).to_be_visible()
    expect(omar.by("proposal")).to_have_count(0)
    expect(omar.by("approve")).to_have_count(0)
    assert server.get(f"/v1/runs/{run_id}", "omar").status_code == 404
    assert server.get(f"/v1/proposals/{pending['id']}", "omar").status_code == 404
    assert server.get("/v1/proposals", "omar").json() == []
    assert all(r["run_id"] != run_id for r in server.get("/v1/runs", "omar").json())

    # Signing out forgets the key.
    alice.page.get_by_role("button", name="Sign out").click()
    expect(alice.by("signin-view")).to_be_visible()
    assert alice.page.evaluate("sessionStorage.getItem('toolcrib.key')") is None

    for session in (alice, ada, omar):
        assert session.errors == []
        session.context.close()


@pytest.mark.timeout(180)
def test_an_approver_edits_the_quantity_and_the_requesters_page_shows_the_edit(browser: Browser,
                                                                               server: Server) -> None:
    expect.set_options(timeout=WAIT_MS)
    alice = Session(browser, server, "alice", "Alice Moreno")
    alice.ask("Please reserve 300 F2 filters")
    expect(alice.by("held-call")).to_contain_text('reserve_stock(part_number="F2", quantity=300)')
    run_id = alice.page.evaluate("sessionStorage.getItem('toolcrib.run')")
    [original] = server.get("/v1/proposals", "ada").json()

    # Ada changes 300 to 3 and approves the changed call in the same act.
    ada = Session(browser, server, "ada", "Ada Fitzgerald")
    ada.tab("Approvals")
    card = ada.by("proposal").filter(has_text="reserve_stock")
    card.get_by_role("button", name="Edit…").click()
    card.get_by_label("New value of quantity").fill("3")
    card.get_by_label("Reason for the change").fill("The customer wants 3")
    card.get_by_role("button", name="Approve edited call").click()
    expect(ada.by("decision").first).to_contain_text("edited and approved")
    expect(ada.by("decision").first).to_contain_text('reserve_stock(part_number="F2", quantity=3)')
    expect(ada.by("proposal")).to_have_count(0)

    # Alice's page resumes by itself and says what was changed, and by whom, in the answer too.
    expect(alice.by("answer-text")).to_contain_text("ada approved it after changing quantity from")
    expect(alice.by("answer-text")).to_contain_text('(reason: "The customer wants 3")')
    expect(alice.by("answer-calls")).to_contain_text('reserve_stock(part_number="F2", quantity=3)')
    approved = alice.page.locator("[data-testid=step][data-kind=call_approved]")
    expect(approved.get_by_test_id("step-edit")).to_have_text(
        "edited by ada: quantity 300 → 3 (“The customer wants 3”)")
    expect(approved.get_by_test_id("decided-by")).to_have_text("person")
    if os.environ.get("TOOLCRIB_SCREENSHOT") == "1":  # the picture docs/concepts/approvals.md shows
        alice.page.screenshot(path=str(ROOT / "docs" / "assets" / "screens" / "answer-after-edit.png"))
    assert server.stock("F2") == 2  # 5 - 3, once

    run = server.get(f"/v1/runs/{run_id}", "alice").json()
    assert [p["status"] for p in run["proposals"]] == ["superseded", "executed"]
    replacement = run["proposals"][1]["id"]
    assert run["proposals"][0]["edit"]["by"] == "ada"
    # the trace and the audit record show both proposals and the edit
    ws = ["--workspace", str(server.workspace)]
    trace = subprocess.run([toolcrib_command(), "trace", run["traces"][-1], "--json", *ws],
                           capture_output=True, text=True, timeout=60)
    assert trace.returncode == 0, trace.stderr
    steps = [json.loads(line) for line in trace.stdout.splitlines()]
    edited = next(s for s in steps if s["kind"] == "call_approved")
    assert edited["proposal_id"] == replacement
    assert edited["detail"]["edited"]["supersedes"] == original["id"]
    assert edited["detail"]["edited"]["changes"] == {"quantity": {"from": 300, "to": 3}}
    first = subprocess.run([toolcrib_command(), "trace", run["traces"][0], "--json", *ws],
                           capture_output=True, text=True, timeout=60)
    assert original["id"] in first.stdout
    audit = subprocess.run([toolcrib_command(), "audit", "show", "--limit", "50", *ws],
                           capture_output=True, text=True, timeout=60)
    assert audit.returncode == 0, audit.stderr
    lines = audit.stdout.splitlines()
    assert any("edited" in line and original["id"] in line and f"superseded by {replacement}: quantity 300 -> 3" in line
               for line in lines)
    assert any(line.split()[1] == "proposed" and line.endswith(replacement) for line in lines)
    assert any(line.split()[1] == "executed" and line.endswith(replacement) for line in lines)

    # Decisions in bulk: two proposals selected and approved in one action, each recorded on its own.
    for n in (1, 2):
        asked = httpx.post(server.url + "/v1/ask", json={"question": f"Please reserve {n} F1 filters"},
                           headers={"Authorization": f"Bearer {server.keys['alice']}"}, timeout=30)
        assert asked.json()["outcome"] == "paused"
    ada.by("approvals-refresh").click()
    expect(ada.by("proposal")).to_have_count(2)
    for checkbox in ada.by("select").all():
        checkbox.check()
    expect(ada.by("bulk-count")).to_have_text("2 selected")
    ada.by("bulk-approve").click()
    expect(ada.by("proposal")).to_have_count(0)
    expect(ada.page.locator("[data-testid=decision][data-status=approved]")).to_have_count(2)
    expect(ada.by("bulk")).to_be_hidden()

    for session in (alice, ada):
        assert session.errors == []
        session.context.close()


@pytest.mark.timeout(120)
def test_a_proposal_past_its_tools_time_to_live_shows_as_expired_on_the_requesters_page(
        browser: Browser, tmp_path: Path) -> None:
    workspace = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, workspace, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = workspace / "toolcrib.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[policy.proposal_ttl]\nreserve_stock = 2\n"
                      "\n[service]\nexpiry_sweep_s = 0.5\n", encoding="utf-8")
    keys = create_keys(workspace, ("alice", "ada"))
    with serving(workspace, tmp_path / "serve.log") as url:
        server = Server(url, workspace, keys)
        expect.set_options(timeout=WAIT_MS)
        alice = Session(browser, server, "alice", "Alice Moreno")
        alice.ask(RESERVE)
        expect(alice.by("held-status")).to_have_text("waiting for approval")
        expect(alice.by("held-status")).to_have_text("expired")
        expect(alice.by("waiting-note")).to_contain_text("reserve_stock expired with no decision")
        assert server.get("/v1/proposals", "ada").json() == []
        assert server.stock("F2") == 5
        assert alice.errors == []
        alice.context.close()

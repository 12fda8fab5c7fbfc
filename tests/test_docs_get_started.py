"""Get started, followed as a new user would, from an empty folder: the files *Your first tool* and *Your first
approval* ask the reader to save, exactly as the pages show them; the page's own commands to make keys and
start ``toolcrib serve``; then, in a real browser (Debian's Chromium, driven by Playwright), the question the
page suggests, the call held, an approval on the approvals page, and the run resumed to its answer, with the
order written once and only after the approval. ``TOOLCRIB_SCREENSHOT=1`` also writes the approver's view of the
held call to ``docs/assets/screens/first-approval.png``, the picture *Your first approval* shows."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

import test_service_page
from fakes.serving import serving
from test_docs_examples import blocks, blocks_in, write_files

ROOT = Path(__file__).resolve().parent.parent
PAGES = ROOT / "docs" / "get-started"
chromium = test_service_page.browser  # the fixture: Debian's Chromium under Playwright


def the_page_commands(page: Path, heading: str) -> list[list[str]]:
    """The shell commands under ``heading`` of a page, one argument list each."""
    section = page.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    body = next(b.body for b in blocks_in(section) if b.language == "bash")
    return [shlex.split(line) for line in body.splitlines() if line.strip()]


def sign_in(browser: Browser, url: str, key: str, name: str, errors: list[str]) -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda req: None if req.url.startswith((url + "/", "data:"))
            else errors.append(f"request outside the server: {req.url}"))
    page.goto(url + "/")
    page.get_by_label("API key").fill(key)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("who-name")).to_have_text(name)
    return page


@pytest.mark.timeout(240)
def test_following_get_started_reaches_an_approved_call_of_ones_own_tool(
        chromium: Browser, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expect.set_options(timeout=30_000)
    tool_page, approval_page = PAGES / "first-tool.md", PAGES / "first-approval.md"
    for page in (tool_page, approval_page):
        write_files(page, tmp_path)
    assert (tmp_path / "my-shop" / "tools.py").is_file() and (tmp_path / "my-shop" / "replies.yaml").is_file()
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
               TOOLCRIB_HOME=str(tmp_path / ".home"))
    env.pop("TOOLCRIB_WORKSPACE", None)

    # "Start the service": the page's commands, as written (the test picks a free port for the server)
    *token_commands, serve = the_page_commands(approval_page, "Start the service")
    keys = {}
    for command in token_commands:
        assert command[:3] == ["toolcrib", "token", "create"]
        made = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        keys[command[3]] = made.stdout.strip()
    assert set(keys) == {"me", "sam"}
    assert serve[:2] == ["toolcrib", "serve"] and serve[2::2] == ["--workspace", "--model"], serve
    monkeypatch.chdir(tmp_path)  # the server starts in the reader's folder, where the page's paths lead
    monkeypatch.setenv("TOOLCRIB_HOME", env["TOOLCRIB_HOME"])
    with serving(tmp_path / serve[3], tmp_path / "serve.log", model=serve[5]) as url:
        text = approval_page.read_text(encoding="utf-8")
        question = re.search(r"^> (.+)$", text, re.MULTILINE)
        held_call = re.search(r"the held call\n?\s*`([^`]+)`", text)
        assert question and held_call
        errors: list[str] = []

        # Ask, and see the call held: nothing has run
        me = sign_in(chromium, url, keys["me"], "Me", errors)
        box = me.get_by_label("Your question")
        box.fill(question.group(1))
        box.press("Enter")
        expect(me.get_by_test_id("waiting")).to_be_visible()
        expect(me.get_by_test_id("held-call")).to_contain_text(held_call.group(1))
        held = me.locator("[data-testid=step][data-kind=call_held]")
        expect(held.get_by_test_id("decided-by")).to_have_text("policy")
        assert not (tmp_path / "my-shop" / "orders.txt").exists()

        # Approve it on the page, as the approver
        sam = sign_in(chromium, url, keys["sam"], "Sam", errors)
        sam.get_by_role("tab", name="Approvals").click()
        card = sam.get_by_test_id("proposal").filter(has_text="order_stock")
        expect(card.get_by_test_id("effect")).to_have_text("write")
        expect(card.locator("[data-testid=arg-row][data-argument=sku] [data-testid=arg-source]")).to_have_text(
            "user request")
        shots = ROOT / "docs" / "assets" / "screens" if os.environ.get("TOOLCRIB_SCREENSHOT") == "1" else tmp_path
        sam.screenshot(path=str(shots / "first-approval.png"))
        card.get_by_role("button", name="Approve").click()
        expect(sam.get_by_test_id("approvals-empty")).to_be_visible()

        # Resume: the requester's page continues by itself to the answer the page promises
        expect(me.get_by_test_id("answer-text")).to_contain_text(
            "I ran order_stock (sku MUG-01, quantity 20): sam approved it.")
        expect(me.get_by_test_id("answer-outcome")).to_have_text("Answered")
        assert (tmp_path / "my-shop" / "orders.txt").read_text() == "MUG-01 20\n"
        assert errors == []

        audit = next(b.body for b in blocks(approval_page) if "audit verify" in b.body)
        verified = subprocess.run(shlex.split(audit.strip()), cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=60)
        assert verified.returncode == 0, verified.stdout + verified.stderr

"""The interactive API docs at ``/docs`` in a real browser (Debian's Chromium, driven by Playwright) against a
real ``toolcrib serve`` process on loopback: a newcomer clicks Authorize, pastes an API key from the key
store, tries ``POST /v1/ask`` and gets an answer, over a private copy of the demo and the deterministic desk
model. ``TOOLCRIB_SCREENSHOT=1`` also writes that view to ``docs/assets/screens/api-docs-authorized.png``."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect

from fakes.chromium import chromium
from fakes.serving import serving
from toolcrib.auth.credentials import service_store
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import DEMO_SOURCE, NOT_COPIED

pytest.importorskip("fastapi_offline")

WAIT_MS = 20_000


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A ``toolcrib serve`` URL and an API key for alice, made with the workspace's key store."""
    workspace = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, workspace, ignore=shutil.ignore_patterns(*NOT_COPIED))
    store = service_store(Workspace.open(workspace))
    key = store.create_key("alice")[1]
    store.close()
    with serving(workspace, tmp_path / "serve.log") as url:
        yield url, key


@pytest.fixture
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


@pytest.mark.timeout(120)
def test_swagger_ui_authorizes_with_an_api_key_and_asks(browser: Browser, served: tuple[str, str],
                                                        tmp_path: Path) -> None:
    url, key = served
    expect.set_options(timeout=WAIT_MS)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    outside: list[str] = []
    page.on("request", lambda req: None if req.url.startswith((url + "/", "data:")) else outside.append(req.url))
    page.goto(url + "/docs")

    page.locator(".auth-wrapper .authorize").click()  # the Authorize button, there because a scheme is declared
    dialog = page.locator(".modal-ux")
    dialog.locator("#auth-bearer-value").fill(key)  # the bearer scheme's Value
    dialog.get_by_role("button", name="Apply credentials").click()
    dialog.get_by_role("button", name="Close").click()

    ask = page.locator("#operations-runs-ask_v1_ask_post")
    ask.locator(".opblock-summary").first.click()
    ask.get_by_role("button", name="Try it out").click()
    ask.locator("textarea.body-param__text").fill(json.dumps({"question": "What does part HLV-2205 cost?"}))
    ask.get_by_role("button", name="Execute").click()

    live = ask.locator(".live-responses-table")
    expect(live.locator("tbody .response-col_status")).to_have_text("200")
    expect(live.locator("tbody .response-col_description")).to_contain_text("$52.00")
    expect(ask.locator(".curl")).to_contain_text("Authorization: Bearer")
    assert not outside, outside  # the docs work offline
    root = Path(__file__).resolve().parents[1]  # TOOLCRIB_SCREENSHOT=1: the picture the HTTP reference shows
    shots = root / "docs" / "assets" / "screens" if os.environ.get("TOOLCRIB_SCREENSHOT") == "1" else tmp_path
    live.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "api-docs-authorized.png"), mask=[ask.locator(".curl")])  # the key: hidden
    context.close()

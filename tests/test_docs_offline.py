"""The built documentation site is whole offline: every page, opened in a real browser (Debian's Chromium, driven
by Playwright) from a loopback server with every other address blocked, asks for nothing outside, logs no error,
gets a working search, draws its Mermaid diagrams (the vendored copy, not a CDN's) and shows a long command whole
at 1280 px. ``TOOLCRIB_SCREENSHOT=1`` also writes the pipeline page, its diagram drawn, to
``docs/assets/screens/pipeline.png``."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, expect

from fakes.chromium import chromium

ROOT = Path(__file__).resolve().parent.parent
WAIT_MS = 15_000  # the search worker builds its index per page; generous for a loaded CI machine
DIAGRAMS = {"concepts/pipeline/": 1, "concepts/modes/": 2, "concepts/approvals/": 1, "operations/scale-out/": 1}
# Material puts each drawn diagram in a closed shadow root; opened here so the test can see the <svg> inside.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, { ...init, mode: "open" }); };
"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The site built strictly into a temporary folder and served on a loopback port."""
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(out)],
                           cwd=ROOT, capture_output=True, text=True, timeout=240,
                           env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert built.returncode == 0, built.stdout + built.stderr
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(out)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", out
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with chromium() as launched:
        yield launched


class Offline:
    """A browser context that may reach only the site's server: any other request is aborted and recorded, as
    is every console error and uncaught script error."""

    def __init__(self, browser: Browser, origin: str) -> None:
        self.origin = origin
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.context: BrowserContext = browser.new_context(viewport={"width": 1280, "height": 800},
                                                           locale="en-GB", service_workers="block")
        self.context.add_init_script(OPEN_SHADOW_ROOTS)
        self.context.route("**/*", self._route)

    def _route(self, route: Route) -> None:
        url = route.request.url
        if url.startswith((self.origin, "data:", "blob:")):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort("internetdisconnected")

    def open(self, url: str) -> Page:
        page = self.context.new_page()
        page.on("pageerror", lambda exc: self.errors.append(f"{url}: {exc}"))
        page.on("console", lambda msg: self.errors.append(f"{url}: {msg.text}") if msg.type == "error" else None)
        page.goto(url, wait_until="load")
        return page


def pages(out: Path) -> list[str]:
    """Every HTML page of the built site, as a path below its root."""
    found = [str(p.relative_to(out)).removesuffix("index.html") for p in out.rglob("*.html")]
    return sorted(path for path in found if not path.startswith("assets/"))


def search_works(page: Page) -> None:
    """Material's search is ready when a query typed in the header box lists matching pages (until its worker has
    built the index, it says "Initializing search" and lists nothing)."""
    box = page.locator("input.md-search__input")
    box.click()
    box.press_sequentially("approval")
    expect(page.locator(".md-search-result__item").first).to_be_visible(timeout=WAIT_MS)
    expect(page.locator(".md-search-result__meta")).to_contain_text("matching", timeout=WAIT_MS)


@pytest.mark.timeout(600)
def test_every_page_is_whole_offline(browser: Browser, site: tuple[str, Path]) -> None:
    origin, out = site
    paths = pages(out)
    assert len(paths) > 30 and "404.html" in paths and set(DIAGRAMS) <= set(paths)
    offline = Offline(browser, origin)
    try:
        for path in paths:
            page = offline.open(origin + path)
            search_works(page)
            drawn = page.locator("div.mermaid svg")
            expect(drawn).to_have_count(DIAGRAMS.get(path, 0), timeout=WAIT_MS)
            expect(page.locator("pre.mermaid")).to_have_count(0)  # no diagram left as its source text
            page.close()
        assert offline.outside == [], "requests outside the site"
        assert offline.errors == [], "errors in the browser console"
    finally:
        offline.context.close()


@pytest.mark.timeout(180)
def test_a_diagram_draws_and_a_long_command_shows_whole(browser: Browser, site: tuple[str, Path],
                                                        tmp_path: Path) -> None:
    origin, _ = site
    offline = Offline(browser, origin)
    try:
        page = offline.open(origin + "concepts/pipeline/")
        diagram = page.locator("div.mermaid svg").first
        expect(diagram).to_be_visible(timeout=WAIT_MS)
        expect(diagram).to_contain_text("propose tool calls")  # a node's label, drawn as SVG text
        box = diagram.bounding_box()
        assert box and box["width"] > 200 and box["height"] > 200, box
        shots = ROOT / "docs" / "assets" / "screens" if os.environ.get("TOOLCRIB_SCREENSHOT") == "1" else tmp_path
        page.screenshot(path=str(shots / "pipeline.png"))

        install = offline.open(origin + "get-started/install/")
        first = install.locator(".md-typeset pre > code").first
        expect(first).to_contain_text("./scripts/setup.sh && .venv/bin/toolcrib ask")
        widths = first.evaluate("code => [code.scrollWidth, code.clientWidth]")
        assert widths[0] <= widths[1], f"the first command is cut: {widths}"
        assert offline.outside == [] and offline.errors == []
    finally:
        offline.context.close()

"""Debian's Chromium, driven by Playwright, for the tests that open a page: one launch, skipped with the
reason when the browser is not installed (``scripts/setup.sh`` installs it as root; nothing is downloaded)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]


@contextmanager
def chromium() -> Iterator[Browser]:
    if not Path(CHROMIUM).exists():
        pytest.skip("Chromium is not installed (scripts/setup.sh installs Debian's chromium package as root)")
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield launched
        finally:
            launched.close()

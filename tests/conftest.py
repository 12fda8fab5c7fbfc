"""Test-wide settings: no real network, and toolcrib's writable data in a temporary folder."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_configure(config: pytest.Config) -> None:
    from toolcrib.models import openai

    openai.ALLOW_NETWORK = False  # only loopback servers may be contacted from tests


@pytest.fixture(scope="session", autouse=True)
def toolcrib_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Point TOOLCRIB_HOME at a fresh folder so the demo copy and its state never touch the user's."""
    home = tmp_path_factory.mktemp("toolcrib-home")
    old = os.environ.get("TOOLCRIB_HOME")
    os.environ["TOOLCRIB_HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("TOOLCRIB_HOME", None)
    else:
        os.environ["TOOLCRIB_HOME"] = old

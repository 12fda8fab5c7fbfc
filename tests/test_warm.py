"""``toolcrib warm`` does a workspace's one-time work ahead, so its first question does not wait for it."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner

from fakes.workspaces import demo_workspace
from toolcrib.cli import main
from toolcrib.models import registry
from toolcrib.models.base import Message, ToolSpec
from toolcrib.models.scripted import ScriptedModel
from toolcrib.tools.grounding import Grounding
from toolcrib.workspace import Workspace


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo workspace, its model's prompt cache in a folder of its own (never the user's)."""
    root = demo_workspace(tmp_path_factory.mktemp("warm") / "ws", None, {})
    config = root / "toolcrib.toml"
    prompts = root.parent / "prompts"
    config.write_text(config.read_text(encoding="utf-8").replace(
        "[model.settings]", f'[model.settings]\nprompt_cache = "{prompts.as_posix()}"', 1), encoding="utf-8")
    return root


def test_the_usual_offers_start_with_the_tools_no_identifier_gates_and_cover_one_named_identifier(demo: Path) -> None:
    ws = Workspace.open(demo)
    gate = ws.gate()
    principal = ws.principal("alice")
    offers = [[t.name for t in o] for o in gate.registry.usual_offers(principal, gate.policy)]
    unnamed = gate.offer(principal, Grounding("What does the returns policy say about opened items?")).names
    assert offers[0] == unnamed  # a question naming no identifier gets the first
    assert all(o[: len(unnamed)] == unnamed and len(o) > len(unnamed) for o in offers[1:])  # the rest extend it
    for question in ("What's the status of order ORD-1001?", "Is part HLV-2205 in stock?"):
        assert gate.offer(principal, Grounding(question)).names in offers
    assert len({tuple(o) for o in offers}) == len(offers)


def test_after_warm_the_first_question_starts_from_the_saved_prompt(demo: Path) -> None:
    pytest.importorskip("llama_cpp")
    prompts = demo.parent / "prompts"
    warmed = CliRunner().invoke(main, ["warm", "--user", "omar", "--json", "--workspace", str(demo)])
    assert warmed.exit_code == 0, warmed.output
    report = json.loads(warmed.stdout)
    assert report["users"] == ["omar"] and report["modes"] == ["single"] and report["prompt_cache_s"] > 0
    saved = sorted(prompts.iterdir())
    assert saved  # the blocks are on disk, for the next process

    asked = CliRunner().invoke(main, ["ask", "What's the status of order ORD-1001?", "--user", "omar",
                                      "--workspace", str(demo)])
    assert asked.exit_code == 0, asked.output
    assert "get_order_status" in asked.stdout  # the model chose the lookup (omar's rights decide the rest)
    assert "Reading the workspace's instructions" not in asked.stderr  # nothing left to evaluate first
    assert sorted(prompts.iterdir()) == saved

    again = CliRunner().invoke(main, ["warm", "--user", "omar", "--json", "--workspace", str(demo)])
    assert again.exit_code == 0 and json.loads(again.stdout)["prompt_cache_s"] < report["prompt_cache_s"]


class Warming(ScriptedModel):
    """A model with weights to load and a prompt cache: records each prompt start it is asked to prefill."""

    prefilled: ClassVar[list[tuple[str, ...]]] = []

    def __init__(self) -> None:
        super().__init__([])
        self.progress = None

    def load(self) -> float:
        return 0.0

    def prefill(self, messages: list[Message], tools: list[ToolSpec]) -> float:
        Warming.prefilled.append(tuple(t.name for t in tools))
        return 1.0


def test_serve_prepares_every_users_usual_offers_after_it_is_ready(demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("fastapi")
    from fastapi.testclient import TestClient

    from toolcrib.service.app import create_app

    registry.model_prefixes()
    monkeypatch.setitem(registry._FACTORIES, "warming", lambda rest, settings: Warming())
    Warming.prefilled = []
    ws = Workspace.open(demo)
    gate = ws.gate()
    expected = [tuple(t.name for t in offer) for user in ws.config.users
                for offer in gate.registry.usual_offers(ws.principal(user), gate.policy)]
    with TestClient(create_app(ws, model_spec="warming")) as client:
        deadline = time.monotonic() + 30
        while len(Warming.prefilled) < len(expected) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/readyz").status_code == 200
    assert Warming.prefilled == expected

"""The CLI loads a model up front only when the backend declares the Loadable capability."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.cli.init import create_starter
from toolcrib.models import registry
from toolcrib.models.base import Loadable, Message, ToolSpec
from toolcrib.models.local import LocalModel
from toolcrib.models.scripted import FunctionModel, ScriptedModel
from toolcrib.models.weights import ProgressCallback


class SlowToLoad(FunctionModel):
    """A model with weights to load: records each load and reports two progress stages."""

    loads: ClassVar[list[bool]] = []

    def __init__(self) -> None:
        super().__init__(self._reply)
        self.progress: ProgressCallback | None = None

    def _reply(self, messages: list[Message], tools: list[ToolSpec] | None) -> str:
        if self.progress is not None:  # as the local model does while it builds its prompt cache
            self.progress("prompt", 0, 1)
            self.progress("prompt", 1, 1)
        return "No tool was needed."

    def load(self) -> float:
        SlowToLoad.loads.append(self.progress is not None)
        if self.progress is not None:
            self.progress("verify", 1, 2)
            self.progress("verify", 2, 2)
        return 1.0


def _slow(rest: str, settings: Mapping[str, Any]) -> SlowToLoad:
    return SlowToLoad()


@pytest.fixture()
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A starter workspace (no documents to index) with the ``slow-to-load`` backend registered."""
    target = tmp_path / "ws"
    create_starter(target)
    registry.model_prefixes()  # the built-ins first, so the test backend is added beside them
    monkeypatch.setitem(registry._FACTORIES, "slow-to-load", _slow)
    SlowToLoad.loads = []
    return target


def test_the_local_model_declares_loadable_and_others_do_not() -> None:
    assert isinstance(LocalModel(), Loadable)  # constructing it loads nothing
    assert isinstance(SlowToLoad(), Loadable)
    assert not isinstance(ScriptedModel([]), Loadable)
    assert not isinstance(FunctionModel(lambda messages, tools: "hi"), Loadable)


def test_ask_loads_a_loadable_model_first_with_progress(ws: Path) -> None:
    result = CliRunner().invoke(main, ["ask", "what is new?", "--model", "slow-to-load", "--workspace", str(ws)])
    assert result.exit_code == 0, result.output
    assert SlowToLoad.loads == [True]  # loaded once, with a progress callback attached
    assert "Loading the local model…" in result.stderr
    assert "Verifying the model file…" in result.stderr  # not a terminal: one line per stage
    assert "Reading the workspace's instructions and tools into the model" in result.stderr  # the first question


def test_ask_json_loads_quietly_and_scripted_models_are_not_loaded(ws: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["ask", "hello", "--model", "slow-to-load", "--workspace", str(ws), "--json"])
    assert result.exit_code == 0, result.output
    assert SlowToLoad.loads == [True]
    assert result.stderr == "" and json.loads(result.stdout)["text"]

    script = tmp_path / "replies.yaml"
    script.write_text("- No tool was needed.\n" * 4, encoding="utf-8")
    result = CliRunner().invoke(main, ["ask", "hello", "--model", f"scripted:{script}", "--workspace", str(ws)])
    assert result.exit_code == 0, result.output
    assert "Loading" not in result.stderr and SlowToLoad.loads == [True]

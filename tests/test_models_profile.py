"""A model's profile (from its backend, its name and the workspace) and the typed settings of a request."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from fakes.complete import complete
from toolcrib.agent.state import RunnerSettings
from toolcrib.agent.strategy import AidedAnswer, NativeAnswer, strategy_for
from toolcrib.config import load_config
from toolcrib.errors import ConfigError
from toolcrib.models.base import Completion, Message, ModelSettings, SyncModel, ToolSpec
from toolcrib.models.profile import ModelProfile, profile_for
from toolcrib.models.registry import get_model
from toolcrib.models.settings import RetrySettings

NATIVE = ModelProfile()


@pytest.mark.parametrize("name", ["qwen2.5-coder-1.5b", "Qwen/Qwen2.5-Coder-1.5B-Instruct", "qwen2.5-coder:1.5b",
                                  "/models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"])
def test_the_embedded_model_is_aided_by_its_name_wherever_it_is_served(name: str) -> None:
    assert profile_for(name, NATIVE).aided


@pytest.mark.parametrize("name", ["gpt-4o-mini", "claude-sonnet-4-5", "qwen2.5-coder-7b", "Qwen2.5-Coder-14B"])
def test_other_models_keep_the_native_answer(name: str) -> None:
    assert profile_for(name, NATIVE) == NATIVE


def test_an_openai_compatible_server_of_the_embedded_model_needs_no_flag() -> None:
    served = get_model("openai:qwen2.5-coder-1.5b", {"base_url": "http://127.0.0.1:9/v1"})
    assert served.profile.aided and served.profile.prompt_format == "text_calls"
    assert isinstance(strategy_for(served, RunnerSettings()), AidedAnswer)
    hosted = get_model("openai:gpt-4o-mini", {"base_url": "http://127.0.0.1:9/v1"})
    assert isinstance(strategy_for(hosted, RunnerSettings()), NativeAnswer)


def test_the_workspace_overrides_the_profile_and_its_answer_caps(tmp_path: Path) -> None:
    config = tmp_path / "toolcrib.toml"
    config.write_text('[model]\nspec = "openai:my-model"\n[model.settings]\nbase_url = "http://127.0.0.1:9/v1"\n'
                      '[model.profile]\nanswer = "aided"\nanswer_max_tokens = 90\n', encoding="utf-8")
    cfg = load_config(config).model
    model = get_model(cfg.spec, cfg.settings, cfg.profile.overrides())
    assert model.profile.aided and model.profile.parallel_calls  # the backend's own fields are kept
    strategy = strategy_for(model, RunnerSettings())
    assert isinstance(strategy, AidedAnswer) and strategy.settings.answer_max_tokens == 90
    assert strategy.settings.answer_tokens_per_ask == RunnerSettings().answer_tokens_per_ask


def test_a_bad_profile_value_names_its_key(tmp_path: Path) -> None:
    config = tmp_path / "toolcrib.toml"
    config.write_text('[model.profile]\nanswer = "small"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"model\.profile\.answer"):
        load_config(config)
    with pytest.raises(ConfigError, match="unknown profile field"):
        get_model("dry:gpt-4o-mini", {}, {"small": True})


def test_the_old_small_model_setting_says_what_replaces_it() -> None:
    with pytest.raises(ConfigError, match=r"\[model.profile\] answer"):
        get_model("openai:m", {"base_url": "http://127.0.0.1:9/v1", "small_model": True})


def test_settings_resolve_later_layers_over_earlier_ones() -> None:
    model_defaults = ModelSettings(max_tokens=4096, temperature=0.0)
    run = ModelSettings(max_tokens=400)
    call = ModelSettings(tool_choice="required", max_tokens=None)
    merged = model_defaults.resolve(run, None, call)
    assert merged == ModelSettings(max_tokens=400, temperature=0.0, tool_choice="required")
    assert ModelSettings().choice == "auto" and not ModelSettings(tool_choice="none").offered([object()])
    assert RetrySettings.from_settings({"timeout_s": 5}).timeout_s == 5.0
    with pytest.raises(ConfigError, match="max_retries"):
        RetrySettings.from_settings({"max_retries": -1})


class _Where(SyncModel):
    """Says which thread its reply was computed on."""

    def complete_sync(self, messages: list[Message], tools: list[ToolSpec] | None,
                      settings: ModelSettings) -> Completion:
        return Completion(text=threading.current_thread().name, tokens_out=settings.max_tokens or 0)


class _Blocking(_Where):
    blocking = True


def test_a_blocking_backend_runs_off_the_event_loop_and_a_cheap_one_inline() -> None:
    here = threading.current_thread().name
    assert complete(_Where(), [Message("user", "hi")]).text == here
    assert complete(_Blocking(), [Message("user", "hi")]).text != here
    # the model's own settings are under the call's
    model = _Where()
    model.settings = ModelSettings(max_tokens=7)
    assert complete(model, [Message("user", "hi")]).tokens_out == 7
    assert complete(model, [Message("user", "hi")], max_tokens=3).tokens_out == 3


def test_a_blocking_reply_leaves_the_loop_free_for_other_runs() -> None:
    class Slow(SyncModel):
        blocking = True

        def complete_sync(self, messages: list[Message], tools: list[ToolSpec] | None,
                          settings: ModelSettings) -> Completion:
            threading.Event().wait(0.2)
            return Completion(text="done")

    async def both() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await asyncio.gather(Slow().complete([Message("user", "a")]), Slow().complete([Message("user", "b")]))
        return loop.time() - started

    assert asyncio.run(both()) < 0.35  # the two replies overlapped

"""Fakes that ship as a feature: a scripted model (queued replies) and a function model.

Scripted file format (JSON or YAML): a list of replies, each either a string (a text answer) or
an object ``{"tool_calls": [{"name": ..., "arguments": {...}}, ...]}`` (optionally with ``text``).
``arguments`` may also be a string, which is parsed like a real backend would (bad JSON becomes a
controlled error downstream, not a crash).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from toolcrib.errors import ConfigError
from toolcrib.models.base import Completion, Message, Model, ModelProfile, ModelSettings, SyncModel, ToolCall, ToolSpec


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None, str | None]:
    """(arguments, raw text, parse error) from a dict or a JSON string, as every backend needs."""
    if isinstance(raw, dict):
        return raw, None, None
    if not isinstance(raw, str):
        return {}, json.dumps(raw), "arguments must be a JSON object"
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        return {}, raw, f"arguments are not valid JSON ({exc.msg} at position {exc.pos})"
    if not isinstance(parsed, dict):
        return {}, raw, "arguments must be a JSON object"
    return parsed, raw, None


def _reply_to_completion(reply: Any, index: int, source: str) -> Completion:
    if isinstance(reply, str):
        return Completion(text=reply, model="scripted")
    if isinstance(reply, dict) and ("tool_calls" in reply or "text" in reply):
        calls = []
        for n, call in enumerate(reply.get("tool_calls") or []):
            if not isinstance(call, dict) or "name" not in call:
                raise ConfigError(f"reply {index + 1}, call {n + 1}: expected an object with 'name' and "
                                  "'arguments'", file=source)
            arguments, raw, error = parse_arguments(call.get("arguments", {}))
            calls.append(ToolCall(id=str(call.get("id") or f"call_{index + 1}_{n + 1}"), name=str(call["name"]),
                                  arguments=arguments, raw_arguments=raw, parse_error=error))
        return Completion(text=str(reply.get("text", "")), tool_calls=tuple(calls), model="scripted")
    raise ConfigError(f"reply {index + 1}: expected a string or an object with 'tool_calls' or 'text'",
                      file=source)


def _same_turn(message: Message, reply: Completion) -> bool:
    """Whether an assistant turn is this reply: the same calls (by id and name), or the same text."""
    if reply.tool_calls:
        return [(c.id, c.name) for c in message.tool_calls] == [(c.id, c.name) for c in reply.tool_calls]
    return not message.tool_calls and bool(reply.text) and message.content == reply.text


def _profile(profile: ModelProfile | Mapping[str, Any] | None, base: ModelProfile, source: str) -> ModelProfile:
    """A fake's profile: given, or a script's ``profile`` table over its class's."""
    if isinstance(profile, ModelProfile):
        return profile
    if profile is not None and not isinstance(profile, Mapping):
        raise ConfigError("profile must be a table, e.g. {answer: aided}", file=source)
    return base.updated(profile or {}, key="profile")


class ScriptedModel(SyncModel):
    """Returns queued replies in order and records every request it was given.

    The next reply is the one after those already in the conversation it is given (its replies found among
    the assistant turns) or after those it gave itself, whichever is further: a run resumed in a new process
    (a ``scripted:FILE`` model is made afresh there) goes on where the script stopped, not from its start.

    A reply is a string (a text answer) or ``{"tool_calls": [{"name", "arguments"}], "text"?}``; the
    same list, in a JSON or YAML file, is the ``scripted:FILE`` model spec.

    ```py
    from toolcrib import Gate, GroupPolicy, Principal, Registry, Runner, ScriptedModel, tool


    @tool(description="Return the time of day.")
    def get_time() -> dict:
        return {"time": "10:00"}


    model = ScriptedModel([{"tool_calls": [{"name": "get_time", "arguments": {}}]}, "It is 10:00 [get_time#1]."])
    gate = Gate(Registry([get_time]), GroupPolicy({"staff": ["*"]}))
    answer = Runner(model, gate).ask("What time is it?", Principal("me", groups=frozenset({"staff"})))
    model.assert_complete()  # every scripted reply was asked for
    print(answer.text, len(model.requests))
    #> It is 10:00 [get_time#1]. 2
    ```
    """

    profile = ModelProfile(parallel_calls=True, strict_schemas=True)
    name = "scripted"

    def __init__(self, replies: Iterable[Any], *, source: str = "<script>",
                 profile: ModelProfile | Mapping[str, Any] | None = None) -> None:
        """``profile``: as a real model's (``{"answer": "aided"}`` scripts the embedded model's path)."""
        self.profile = _profile(profile, self.profile, source)
        self.replies = [_reply_to_completion(r, i, source) for i, r in enumerate(replies)]
        self.requests: list[tuple[list[Message], list[ToolSpec] | None]] = []
        self.source = source
        self._next = 0  # the reply the next request gets, unless its conversation is further on

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedModel:
        """Load replies from a JSON or YAML file (``--model scripted:FILE``): a list of replies, or a mapping
        with ``replies`` and ``profile`` (``{answer: aided}`` scripts the embedded model's aided path)."""
        if not str(path):
            raise ConfigError("the scripted model needs a file: use 'scripted:PATH' (JSON or YAML list of replies)",
                              key="model")
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read scripted replies ({exc.strerror})", file=str(p)) from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"not valid JSON/YAML: {exc}", file=str(p)) from None
        profile = None
        if isinstance(data, dict) and "replies" in data:
            if "small_model" in data:
                raise ConfigError("small_model is replaced by the model profile: profile: {answer: aided}",
                                  file=str(p))
            profile = data.get("profile")
            data = data["replies"]
        if not isinstance(data, list):
            raise ConfigError("expected a list of replies", file=str(p))
        return cls(data, source=str(p), profile=profile)

    @property
    def remaining(self) -> int:
        return len(self.replies) - self._next

    def complete_sync(self, messages: list[Message], tools: list[ToolSpec] | None,
                      settings: ModelSettings) -> Completion:
        index = max(self._next, self._reached(messages))
        self._next = index + 1
        # recorded as the model may use them: with tool_choice "none", no tool
        self.requests.append((list(messages), list(tools) if tools is not None and settings.choice != "none" else None))
        if index >= len(self.replies):
            raise ConfigError(f"scripted model ran out of replies after {len(self.replies)}", file=self.source)
        reply = self.replies[index]
        if not tools and reply.tool_calls:
            # a model offered no tools cannot call one: the script's call becomes text, as a real API would
            return Completion(text=reply.text, model=self.name)
        return reply

    def _reached(self, messages: list[Message]) -> int:
        """How far the script is in ``messages``: one past the last of its replies found there, in order
        (the runner adds assistant turns of its own, so turns are matched, not counted)."""
        reached = 0
        for m in messages:
            if m.role != "assistant":
                continue
            found = next((i for i in range(reached, len(self.replies)) if _same_turn(m, self.replies[i])), None)
            if found is not None:
                reached = found + 1
        return reached

    def assert_complete(self) -> None:
        """Fail if any scripted reply was never asked for."""
        if self.remaining:
            raise AssertionError(f"{self.remaining} scripted replies were never used")


_MODULES: dict[tuple[str, str], ModuleType] = {}  # a function model's module, by target (and working folder)


def _function_module(target: str) -> ModuleType:
    """The module of a ``function:`` spec: a Python file (imported once per path) or an importable module."""
    try:
        if not target.endswith(".py"):
            return importlib.import_module(target)
        path = Path(target).resolve()
        module_name = "toolcrib_model_" + hashlib.sha256(str(path).encode()).hexdigest()[:10]
        module = sys.modules.get(module_name)
        if module is None:
            loader_spec = importlib.util.spec_from_file_location(module_name, path)
            if loader_spec is None or loader_spec.loader is None:
                raise ImportError(f"cannot import {path}")
            module = importlib.util.module_from_spec(loader_spec)
            loader_spec.loader.exec_module(module)
            sys.modules[module_name] = module
        return module
    except (ImportError, OSError, SyntaxError) as exc:
        raise ConfigError(f"cannot import the model function's module: {exc}", key="model") from None


class FunctionModel(Model):
    """Wraps a plain function ``(messages, tools) -> Completion | str`` (or an ``async def`` one) as a model.

    ```py
    from toolcrib import Completion, FunctionModel, Gate, GroupPolicy, Principal, Registry, Runner, ToolCall, tool


    @tool(description="Return the time of day.")
    def get_time() -> dict:
        return {"time": "10:00"}


    def decide(messages, tools):
        if messages[-1].role == "tool":  # the call's result is in: answer from it
            return "It is 10:00 [get_time#1]."
        return Completion(tool_calls=(ToolCall(id="c1", name="get_time", arguments={}),))


    gate = Gate(Registry([get_time]), GroupPolicy({"staff": ["*"]}))
    answer = Runner(FunctionModel(decide), gate).ask("What time is it?", Principal("me", groups=frozenset({"staff"})))
    print(answer.text)
    #> It is 10:00 [get_time#1].
    ```
    """

    profile = ModelProfile(parallel_calls=True)
    name = "function"

    def __init__(self, fn: Callable[[list[Message], list[ToolSpec] | None],
                                    Completion | str | Awaitable[Completion | str]], *,
                 profile: ModelProfile | Mapping[str, Any] | None = None) -> None:
        self.fn = fn
        self.profile = _profile(profile, self.profile, "<function>")

    @classmethod
    def from_spec(cls, spec: str) -> FunctionModel:
        """``function:FILE.py:NAME`` or ``function:package.module:NAME``: a deterministic model written as a
        Python function, for tests, demos and load benchmarks."""
        target, _, name = spec.rpartition(":")
        if not target or not name:
            raise ConfigError("the function model needs 'function:FILE.py:NAME' or 'function:MODULE:NAME'",
                              key="model")
        key = (target, os.getcwd() if target.endswith(".py") and not os.path.isabs(target) else "")
        module = _MODULES.get(key)  # the service makes a model per run: finding the file cost it ~60 us a run
        if module is None:
            module = _MODULES[key] = _function_module(target)
        fn = getattr(module, name, None)
        if not callable(fn):
            raise ConfigError(f"'{name}' in {target} is not a function", key="model")
        return cls(fn)

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                       settings: ModelSettings | None = None) -> Completion:
        """The function's reply: a plain function called inline (a fake's reply takes microseconds, a thread
        hop hundreds: ``benchmarks/peers.py``), an ``async def`` one awaited. A function that waits (a
        sleep, a request) is written ``async def``, so that a service's other requests go on meanwhile."""
        start = time.perf_counter()
        shown = tools if self.settings.resolve(settings).choice != "none" else None  # none may be called: none shown
        out = self.fn(messages, shown)
        if inspect.isawaitable(out):
            out = await out
        if isinstance(out, str):
            return Completion(text=out, ms=(time.perf_counter() - start) * 1000, model=self.name)
        return out

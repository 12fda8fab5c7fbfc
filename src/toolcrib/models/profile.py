"""What a model is and can do, as the runner needs to know it: ``ModelProfile``.

A backend declares what its wire protocol can carry (tools, parallel calls, strict schemas); the model's
family, matched on its name as a server reports it, adds what the model itself needs (the embedded
Qwen2.5-Coder-1.5B gets the aided answer path wherever it is served: in-process, llama.cpp's server,
vLLM, Ollama); a workspace may override any of it (``[model.profile]`` in toolcrib.toml). The runner
reads only the profile, never the backend's class (pydantic-ai's ``profiles/`` is the model).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from toolcrib.errors import ConfigError

__all__ = ["AnswerPath", "ModelProfile", "PromptFormat", "profile_for"]

# aided: code plans lookups, states record facts and quotes passages, and the final answer is asked from an
# evidence brief with answer caps (agent.strategy.AidedAnswer); native: the model gets its conversation,
# tool results as tool messages, and writes its own answer (agent.strategy.NativeAnswer)
AnswerPath = Literal["aided", "native"]
# api: calls come back in the provider's tool-call fields; text_calls: there, or written in the text
# (Hermes, Mistral, Llama tags) by an open model behind a server without a tool parser; json_list: the
# tools are listed in the system block and the reply is a grammar-constrained JSON list (the embedded model)
PromptFormat = Literal["api", "text_calls", "json_list"]


@dataclass(frozen=True, kw_only=True)
class ModelProfile:
    """How the runner treats a model: its answer path, what its calls can be, its answer caps."""

    answer: AnswerPath = "native"
    tools: bool = True  # it may be offered tools
    parallel_calls: bool = False  # several calls in one reply
    strict_schemas: bool = False  # its provider constrains arguments to the tool's JSON Schema
    prompt_format: PromptFormat = "api"
    # the aided final answer's caps, per thing the question asks and in all (None: the runner's settings)
    answer_tokens_per_ask: int | None = None
    answer_max_tokens: int | None = None
    hosted_tools: tuple[str, ...] = ()  # tools the provider runs itself, by workspace configuration
    # the aided answer is asked as a selection of the evidence's lines under a JSON Schema's grammar
    # (``ModelSettings.reply_schema``, which the embedded backend honours) and written out by code
    # (``agent.selection``); off by default (measured in docs/concepts/evidence.md)
    structured_reply: bool = False

    @property
    def aided(self) -> bool:
        return self.answer == "aided"

    def updated(self, overrides: Mapping[str, Any], *, key: str = "model.profile") -> ModelProfile:
        """This profile with ``overrides`` (a workspace's ``[model.profile]``); an unknown name is a
        ConfigError listing the known ones (the values' types are checked where the table is read)."""
        known = {f.name for f in fields(self)}
        if unknown := sorted(set(overrides) - known):
            raise ConfigError(f"unknown profile field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}",
                              key=key)
        changes: dict[str, Any] = {name: tuple(value) if name == "hosted_tools" else value
                                   for name, value in overrides.items()}
        return replace(self, **changes) if changes else self


# Families by name: (pattern over the lower-cased name, what the family changes). A name as a server
# reports it may be a path, a Hugging Face id or a GGUF file name: "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
# "Qwen/Qwen2.5-Coder-1.5B-Instruct", Ollama's "qwen2.5-coder:1.5b".
_FAMILIES: tuple[tuple[re.Pattern[str], Mapping[str, Any]], ...] = (
    # the embedded model: demo multi-hop in loop mode, 6 of 10 from its own answers, 8 of 10 from the brief
    (re.compile(r"qwen2\.5-coder[-_:]1\.5b"), {"answer": "aided"}),
)


def profile_for(name: str, base: ModelProfile) -> ModelProfile:
    """``base`` (what the backend's protocol can carry) with what the family ``name`` belongs to needs."""
    lowered = name.lower()
    for pattern, changes in _FAMILIES:
        if pattern.search(lowered):
            return base.updated(changes)
    return base

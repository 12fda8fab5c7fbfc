"""The built-in model backends' factories. Each imports its module lazily; a backend whose SDK is an extra
(openai, openai-responses, anthropic) raises MissingDependency naming it when it is missing. The registry
reads ``BUILTINS``; nothing here imports the registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolcrib.models.base import Model

# A factory takes the part of the spec after the first ":" (may be "") and backend settings.
ModelFactory = Callable[[str, Mapping[str, Any]], Model]


def _local(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.local import LocalModel

    return LocalModel.from_spec(rest, settings)


def _openai(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.openai import OpenAIChatModel

    return OpenAIChatModel.from_spec(rest, settings)


def _openai_responses(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.responses import OpenAIResponsesModel

    return OpenAIResponsesModel.from_spec(rest, settings)


def _anthropic(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.anthropic import AnthropicModel

    return AnthropicModel.from_spec(rest, settings)


def _scripted(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.scripted import ScriptedModel

    return ScriptedModel.from_file(rest)


def _function(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.scripted import FunctionModel

    return FunctionModel.from_spec(rest)


def _dry(rest: str, settings: Mapping[str, Any]) -> Model:
    from toolcrib.models.dry import DryModel

    return DryModel.from_spec(rest, settings)


BUILTINS: dict[str, ModelFactory] = {
    "local": _local,
    "openai": _openai,
    "openai-responses": _openai_responses,
    "anthropic": _anthropic,
    "scripted": _scripted,
    "dry": _dry,
    "function": _function,
}

"""Registers the built-in model backends. Each factory imports its module lazily; a backend whose SDK
is an extra (openai, openai-responses, anthropic) raises MissingDependency naming it when it is missing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolcrib.models.base import Model
from toolcrib.models.registry import register_model


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


register_model("local", _local)
register_model("openai", _openai)
register_model("openai-responses", _openai_responses)
register_model("anthropic", _anthropic)
register_model("scripted", _scripted)
register_model("dry", _dry)
register_model("function", _function)

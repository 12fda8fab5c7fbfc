"""One registry of model backends, chosen by spec string ("local", "openai:gpt-4o-mini", "scripted:FILE").

Built-ins and plugins register the same way; optional backends import lazily inside their factory. The
model's profile comes from its backend and its name (``models/profile.py``); a workspace's
``[model.profile]`` overrides it here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolcrib.errors import ConfigError
from toolcrib.models.base import Model
from toolcrib.models.builtins import BUILTINS, ModelFactory

__all__ = ["ModelFactory", "get_model", "model_prefixes", "register_model"]

_FACTORIES: dict[str, ModelFactory] = dict(BUILTINS)

# what a backend setting that is gone became, for the error that says so
_REPLACED = {"small_model": "the model profile: [model.profile] answer = \"aided\" (the embedded model's name, "
                            "qwen2.5-coder-1.5b, selects it by itself wherever it is served)"}


def register_model(prefix: str, factory: ModelFactory) -> None:
    """Make ``prefix[:rest]`` specs resolve to ``factory(rest, settings)``."""
    _FACTORIES[prefix] = factory


def model_prefixes() -> list[str]:
    return sorted(_FACTORIES)


def get_model(spec: str, settings: Mapping[str, Any] | None = None,
              profile: Mapping[str, Any] | None = None) -> Model:
    """Build the model a spec string names, with ``profile`` (``[model.profile]``) over the profile its
    backend and name give; an unknown prefix is a ConfigError listing the known ones."""
    prefix, _, rest = spec.partition(":")
    factory = _FACTORIES.get(prefix)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise ConfigError(f"unknown model spec '{spec}'; expected one of: {known} (e.g. 'local', 'openai:MODEL')",
                          key="model")
    settings = settings or {}
    for old, new in _REPLACED.items():
        if old in settings:
            raise ConfigError(f"{old} is replaced by {new}", key=f"model.settings.{old}")
    model = factory(rest, settings)
    if profile:
        model.profile = model.profile.updated(profile)
    return model

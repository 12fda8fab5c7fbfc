"""One registry of model backends, chosen by spec string ("local", "openai:gpt-4o-mini", "scripted:FILE").

Built-ins and plugins register the same way; optional backends import lazily inside their factory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from toolcrib.errors import ConfigError
from toolcrib.models.base import Model

# A factory takes the part of the spec after the first ":" (may be "") and backend settings.
ModelFactory = Callable[[str, Mapping[str, Any]], Model]

_FACTORIES: dict[str, ModelFactory] = {}


def register_model(prefix: str, factory: ModelFactory) -> None:
    """Make ``prefix[:rest]`` specs resolve to ``factory(rest, settings)``."""
    _FACTORIES[prefix] = factory


def model_prefixes() -> list[str]:
    _load_builtins()
    return sorted(_FACTORIES)


def get_model(spec: str, settings: Mapping[str, Any] | None = None) -> Model:
    """Build the model a spec string names; an unknown prefix is a ConfigError listing the known ones."""
    _load_builtins()
    prefix, _, rest = spec.partition(":")
    factory = _FACTORIES.get(prefix)
    if factory is None:
        known = ", ".join(sorted(_FACTORIES))
        raise ConfigError(f"unknown model spec '{spec}'; expected one of: {known} (e.g. 'local', 'openai:MODEL')",
                          key="model")
    settings = settings or {}
    model = factory(rest, {k: v for k, v in settings.items() if k != "small_model"})
    if "small_model" in settings:  # any backend may declare it: an OpenAI-compatible server of a small model
        if not isinstance(settings["small_model"], bool):
            raise ConfigError("small_model must be true or false", key="model.settings.small_model")
        model.small_model = settings["small_model"]
    return model


_loaded = False


def _load_builtins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    from toolcrib.models import builtins  # noqa: F401  (registers the built-in backends)

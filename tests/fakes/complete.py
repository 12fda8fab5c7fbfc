"""Ask a model for one reply from synchronous test code, settings as keywords."""

from __future__ import annotations

from typing import Any

from toolcrib.agent.sync import run_sync
from toolcrib.models.base import Completion, Message, Model, ModelSettings, ToolSpec


def complete(model: Model, messages: list[Message], tools: list[ToolSpec] | None = None,
             **settings: Any) -> Completion:
    """``model.complete`` awaited on this thread's loop, with ``ModelSettings(**settings)``."""
    return run_sync(model.complete(messages, tools, ModelSettings(**settings) if settings else None))

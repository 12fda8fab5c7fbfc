"""Typed settings of a model request: what one reply may be (``ModelSettings``) and how a remote call is
retried (``RetrySettings``). Both frozen; a request's settings are the model's own defaults, then the
workspace's, the run's and the call's, each later one winning where it sets a value (``resolve``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Literal

from toolcrib.errors import ConfigError

__all__ = ["ModelSettings", "RetrySettings", "ToolChoice", "number_setting"]

ToolChoice = Literal["auto", "none", "required"]


@dataclass(frozen=True, kw_only=True)
class ModelSettings:
    """What one reply may be. ``None`` is "not set here": an earlier layer's value, else the backend's.

    ``decision_only`` asks for calls alone, or for a reply with no text that calls nothing more: the
    runner asks so where code writes the answer anyway; a backend that cannot write a decision without
    its text ignores it (the embedded model honours it, its calls bounded by its own ``max_tokens``: a small
    model on a CPU writes ~15 tokens a second, so an answer nobody reads costs seconds).
    """

    max_tokens: int | None = None
    temperature: float | None = None
    tool_choice: ToolChoice | None = None
    decision_only: bool | None = None
    # a reply with no tools offered, written under this JSON Schema (a backend whose profile has
    # ``structured_reply``; any other ignores it and the caller reads its text as it comes)
    reply_schema: str | None = None

    def resolve(self, *later: ModelSettings | None) -> ModelSettings:
        """These settings with each of ``later``'s set values over them, in order (workspace -> run -> call)."""
        merged = self
        for layer in later:
            if layer is not None:
                changes = {f.name: v for f in fields(layer) if (v := getattr(layer, f.name)) is not None}
                merged = replace(merged, **changes) if changes else merged
        return merged

    @property
    def choice(self) -> ToolChoice:
        """The tool choice, ``auto`` when none is set."""
        return self.tool_choice or "auto"

    def offered(self, tools: list[Any] | None) -> bool:
        """Whether ``tools`` are offered for this reply (there are some, and the choice is not ``none``)."""
        return bool(tools) and self.choice != "none"


@dataclass(frozen=True, kw_only=True)
class RetrySettings:
    """How a remote backend's calls are bounded and retried: the timeout of one request, retries on 429,
    5xx and connection failures only, with exponential backoff (jittered) or the server's Retry-After up
    to ``max_retry_after_s``."""

    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 60.0

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> RetrySettings:
        """From a backend's ``[model.settings]``; a value that is not a number in range names its key."""
        default = cls()
        return cls(
            timeout_s=number_setting(settings, "timeout_s", default.timeout_s, minimum=0.001),
            max_retries=int(number_setting(settings, "max_retries", default.max_retries, minimum=0)),
            backoff_s=number_setting(settings, "backoff_s", default.backoff_s, minimum=0.0),
            max_backoff_s=number_setting(settings, "max_backoff_s", default.max_backoff_s, minimum=0.0),
            max_retry_after_s=number_setting(settings, "max_retry_after_s", default.max_retry_after_s, minimum=0.0),
        )


def number_setting(settings: Mapping[str, Any], key: str, default: float, *, minimum: float) -> float:
    """``settings[key]`` (else ``default``) as a number of at least ``minimum``; a ConfigError naming ``key``."""
    value = settings.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected a number, got {value!r}", key=key) from None
    if number < minimum:
        raise ConfigError(f"expected a number >= {minimum:g}, got {value!r}", key=key)
    return number

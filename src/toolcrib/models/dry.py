"""``dry:MODEL``: calls nothing, counts tokens and projects what a run would cost on MODEL.

Tokens are approximated deterministically (about 4 characters a token, plus a few tokens of
framing per message), so projections are reproducible offline. When tools are offered the dry
model proposes a call to the first one with minimal schema-valid arguments, so a projection follows
the more expensive branch (a tool round and a second model turn) rather than a direct answer. The
output length is assumed to be ``max_tokens`` when given, else the configured estimate.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from typing import Any

from toolcrib.errors import ConfigError
from toolcrib.models.base import Completion, Message, ModelProfile, ModelSettings, SyncModel, ToolCall, ToolSpec
from toolcrib.models.pricing import Price, price_for
from toolcrib.models.settings import number_setting

__all__ = ["DryModel", "estimate_tokens", "placeholder_arguments"]

_MESSAGE_FRAMING = 4  # role and separators around each message (OpenAI's chat format uses 3-4)
_REPLY_PRIMING = 3  # the tokens that open the assistant's reply
DRY_TEXT = "[dry run: no model was called]"


def estimate_tokens(text: str, chars_per_token: float = 4.0) -> int:
    """A deterministic token estimate for ``text``."""
    return math.ceil(len(text) / chars_per_token) if text else 0


class DryModel(SyncModel):
    """A model that answers instantly, for nothing, and keeps the projected bill."""

    profile = ModelProfile(strict_schemas=True)

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        price: Price | None = None,
        output_tokens: int = 256,
        chars_per_token: float = 4.0,
    ) -> None:
        self.model = model
        self.name = f"dry:{model}"
        self.price = price if price is not None else price_for(model)
        self.output_tokens = output_tokens
        self.chars_per_token = chars_per_token
        self.calls = 0
        self.tokens_in = 0
        self.tokens_out = 0
        self.projected_cost_usd = 0.0
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> DryModel:
        """``dry:MODEL``; settings: ``output_tokens``, ``chars_per_token``, and optionally explicit
        ``input_usd_per_mtok`` + ``output_usd_per_mtok`` for a model the price table lacks."""
        model = rest or str(settings.get("model") or "gpt-4o-mini")
        price: Price | None = None
        if "input_usd_per_mtok" in settings or "output_usd_per_mtok" in settings:
            price = Price(number_setting(settings, "input_usd_per_mtok", 0.0, minimum=0.0),
                          number_setting(settings, "output_usd_per_mtok", 0.0, minimum=0.0))
        output_tokens = int(number_setting(settings, "output_tokens", 256, minimum=0.0))
        chars_per_token = number_setting(settings, "chars_per_token", 4.0, minimum=0.0)
        if chars_per_token <= 0:
            raise ConfigError("expected a number > 0", key="chars_per_token")
        return cls(model, price=price, output_tokens=output_tokens, chars_per_token=chars_per_token)

    def complete_sync(self, messages: list[Message], tools: list[ToolSpec] | None,
                      settings: ModelSettings) -> Completion:
        tokens_in = self.count_input_tokens(messages, tools)
        tokens_out = settings.max_tokens if settings.max_tokens is not None else self.output_tokens
        calls: tuple[ToolCall, ...] = ()
        text = DRY_TEXT
        if tools and settings.offered(tools):
            first = tools[0]
            arguments = placeholder_arguments(first.parameters)
            calls = (ToolCall(id=f"dry_{self.calls + 1}", name=first.name, arguments=arguments,
                              raw_arguments=json.dumps(arguments)),)
            text = ""
        with self._lock:
            self.calls += 1
            self.tokens_in += tokens_in
            self.tokens_out += tokens_out
            self.projected_cost_usd += self.price.cost(tokens_in, tokens_out)
        return Completion(text=text, tool_calls=calls, tokens_in=tokens_in, tokens_out=tokens_out,
                          ms=0.0, model=self.name)

    def count_input_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        """Estimated prompt tokens: message contents and calls, framing, and the tool schemas."""
        total = _REPLY_PRIMING
        for message in messages:
            total += _MESSAGE_FRAMING + estimate_tokens(message.content, self.chars_per_token)
            for call in message.tool_calls:
                total += estimate_tokens(call.name + json.dumps(call.arguments), self.chars_per_token)
        for spec in tools or ():
            schema = json.dumps({"name": spec.name, "description": spec.description,
                                 "parameters": spec.parameters}, separators=(",", ":"))
            total += estimate_tokens(schema, self.chars_per_token)
        return total


def placeholder_arguments(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Minimal arguments that satisfy ``schema`` (required properties only, smallest values)."""
    value = _placeholder(schema, schema, depth=0)
    return value if isinstance(value, dict) else {}


def _placeholder(schema: Any, root: Mapping[str, Any], *, depth: int) -> Any:
    if not isinstance(schema, Mapping) or depth > 12:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return _placeholder(target, root, depth=depth + 1)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if "default" in schema:
        return schema["default"]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            non_null = [b for b in branches if not (isinstance(b, Mapping) and b.get("type") == "null")]
            return _placeholder((non_null or branches)[0], root, depth=depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and "properties" in schema):
        properties = schema.get("properties") or {}
        return {name: _placeholder(properties.get(name, {}), root, depth=depth + 1)
                for name in schema.get("required") or () if isinstance(name, str)}
    if kind == "array":
        count = int(schema.get("minItems") or 0)
        return [_placeholder(schema.get("items") or {}, root, depth=depth + 1) for _ in range(count)]
    if kind == "string":
        return "x" * int(schema.get("minLength") or 0)
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        if low is None:
            high = schema.get("maximum")
            return high if isinstance(high, (int, float)) and high < 0 else 0
        bump = 1 if "minimum" not in schema else 0
        return math.ceil(low) + bump if kind == "integer" else low + bump
    if kind == "boolean":
        return False
    return None


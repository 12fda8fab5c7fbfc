"""Anthropic's Messages API (``anthropic:MODEL``), on the official ``anthropic`` SDK (the ``anthropic`` extra).

toolcrib's system messages become the ``system`` parameter; an assistant's tool calls become
``tool_use`` blocks and tool results ``tool_result`` blocks (all results of one turn in the one user
message that follows it, as the API requires). Several ``tool_use`` blocks in one reply are parallel
calls. Stop reasons: ``end_turn`` and ``tool_use`` are replies; ``max_tokens`` (and a full context
window) end the run as a limit. tool_choice auto / none / required is sent as auto / none / any.

================= ======================== ============================================
setting           environment              default
================= ======================== ============================================
base_url          ``ANTHROPIC_BASE_URL``   ``https://api.anthropic.com``
api_key           ``ANTHROPIC_API_KEY``    required for api.anthropic.com
max_tokens                                 4096 (the API needs one; a run's own wins)
timeout_s, max_retries, backoff_s, max_retry_after_s   as for ``openai:MODEL``
================= ======================== ============================================
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolcrib.errors import ConfigError, LimitExceeded, MissingDependency
from toolcrib.models._remote import (
    LoopClients,
    RemoteModel,
    SDKErrors,
    count,
    guarded_async_http_client,
    model_setting,
    url_setting,
)
from toolcrib.models.base import Completion, Message, ModelProfile, ModelSettings, ToolCall, ToolSpec
from toolcrib.models.openai import resolve_api_key
from toolcrib.models.settings import RetrySettings, number_setting
from toolcrib.models.wire import tool_call_from_json

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message as AnthropicMessage

__all__ = ["DEFAULT_BASE_URL", "AnthropicModel", "request_messages"]

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.anthropic.com"
_ANTHROPIC_HOST = "api.anthropic.com"
_TOOL_CHOICE: dict[str, dict[str, str]] = {"auto": {"type": "auto"}, "none": {"type": "none"},
                                           "required": {"type": "any"}}
_LIMIT_STOPS = {"max_tokens": "its output token limit", "model_context_window_exceeded": "the context window"}


class AnthropicModel(RemoteModel["AsyncAnthropic"]):
    """A Claude model over the Messages API, with parallel tool use and bounded retries."""

    profile = ModelProfile(parallel_calls=True, strict_schemas=True)
    env_api_key = "ANTHROPIC_API_KEY"
    env_base_url = "ANTHROPIC_BASE_URL"

    def __init__(self, model: str, *, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 max_tokens: int = 4096, retry: RetrySettings | None = None) -> None:
        if not model:
            raise ConfigError("the model name is empty; use a spec like 'anthropic:claude-sonnet-4-5'", key="model")
        super().__init__(model, base_url=base_url, api_key=api_key, retry=retry)
        self.name = f"anthropic:{model}"
        self.settings = ModelSettings(max_tokens=max_tokens)  # the API needs one; a run's own wins
        try:
            import anthropic as sdk
        except ImportError:
            raise MissingDependency("the Anthropic backend (anthropic:MODEL)", "anthropic") from None
        timeout_s = self.retry.timeout_s
        # Credentials are passed explicitly, so the SDK reads no key or profile of its own.
        self._clients = LoopClients(lambda: sdk.AsyncAnthropic(
            api_key=api_key or "unused", base_url=self.base_url, timeout=timeout_s, max_retries=0,
            http_client=guarded_async_http_client(self.base_url, timeout_s)))
        self._headers: dict[str, Any] = {} if api_key else {"Authorization": sdk.omit}
        self.sdk_errors = SDKErrors(base=sdk.AnthropicError, status=sdk.APIStatusError, timeout=sdk.APITimeoutError,
                                    connection=sdk.APIConnectionError)

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> AnthropicModel:
        """Build from ``anthropic:MODEL`` and settings; the environment is read here, never at import."""
        model = model_setting(rest, settings, "anthropic", "claude-sonnet-4-5")
        base_url = url_setting(settings, os.environ, "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL)
        api_key = resolve_api_key(settings, base_url, env_names=("ANTHROPIC_API_KEY",), required_host=_ANTHROPIC_HOST)
        max_tokens = int(number_setting(settings, "max_tokens", 4096, minimum=1))
        return cls(model, base_url=base_url, api_key=api_key, max_tokens=max_tokens,
                   retry=RetrySettings.from_settings(settings))

    # --- the call ---------------------------------------------------------------------------

    def request_body(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                     settings: ModelSettings | None = None) -> dict[str, Any]:
        """The fields sent to ``/v1/messages`` (a temperature goes as an extra field), to log or inspect."""
        resolved = self.settings.resolve(settings)
        system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
        body: dict[str, Any] = {"model": self.model, "max_tokens": resolved.max_tokens,
                                "messages": request_messages(messages)}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [_wire_tool(t) for t in tools]
            body["tool_choice"] = _TOOL_CHOICE[resolved.choice]
        if resolved.temperature is not None:
            body["temperature"] = resolved.temperature
        return body

    async def _send(self, client: AsyncAnthropic, body: dict[str, Any]) -> AnthropicMessage:
        fields = {k: v for k, v in body.items() if k != "temperature"}
        extra = {"temperature": body["temperature"]} if "temperature" in body else None
        reply: AnthropicMessage = await client.messages.create(**fields, extra_body=extra, extra_headers=self._headers)
        return reply

    # --- the response -------------------------------------------------------------------------

    def _completion(self, reply: AnthropicMessage, ms: float, messages: list[Message], tools: list[ToolSpec] | None,
                    settings: ModelSettings) -> Completion:
        stop = str(getattr(reply, "stop_reason", "") or "")
        if stop in _LIMIT_STOPS:
            raise LimitExceeded(f"the model's reply was cut off at {_LIMIT_STOPS[stop]} "
                                f"(stop reason '{stop}', max_tokens {settings.max_tokens})")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in getattr(reply, "content", None) or []:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(str(block.text))
            elif kind == "tool_use":
                calls.append(tool_call_from_json(getattr(block, "id", None), str(getattr(block, "name", "")),
                                                 getattr(block, "input", None)))
            else:  # thinking, server tools' blocks: not toolcrib's to read yet
                log.debug("Anthropic content block of type %r not read", kind)
        usage = getattr(reply, "usage", None)
        # input_tokens excludes what was read from or written to the prompt cache: the sum is what was sent.
        tokens_in = sum(count(getattr(usage, name, 0)) for name in
                        ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
        return Completion(
            text="".join(texts),
            tool_calls=tuple(calls),
            tokens_in=tokens_in,
            tokens_out=count(getattr(usage, "output_tokens", 0)),
            ms=ms,
            model=str(getattr(reply, "model", None) or self.model),
        )


# --- wire format ---------------------------------------------------------------------------------


def request_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """toolcrib messages (less system ones) as Messages API turns: consecutive messages of one role are
    one turn, tool results are ``tool_result`` blocks of a user turn, placed before any text in it."""
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        if message.role == "tool":
            # No is_error: a tool message carries its outcome inside its text (toolcrib's error shape),
            # and the model reads it there.
            blocks.append({"type": "tool_result", "tool_use_id": message.tool_call_id or "",
                           "content": message.content})
        else:
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            for call in message.tool_calls if role == "assistant" else ():
                # A call whose arguments did not parse goes back empty: tool_use input must be an object;
                # the tool_result that answers it says what was wrong.
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:  # the API wants a user turn's tool results first
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
    return turns


def _wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"name": spec.name, "description": spec.description, "input_schema": spec.parameters,
            "strict": spec.strict}

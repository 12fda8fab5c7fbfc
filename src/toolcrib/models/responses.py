"""The OpenAI Responses API: OpenAI, Azure OpenAI and Foundry (``openai-responses:MODEL``).

Built on the official ``openai`` SDK (the ``openai`` extra). toolcrib's messages become Responses
input items: system/user/assistant text as messages, an assistant's tool calls as ``function_call``
items and tool results as ``function_call_output`` items with the matching ``call_id``. Function
tools are sent with ``strict: true`` (toolcrib's schemas are strict). Calls in one reply may be
several (``parallel_tool_calls``).

Continuing a conversation: by default statelessly (``store = false``; every request resends the
whole conversation as input items, nothing is kept by the provider). With ``store = true`` the
provider keeps responses and a request that continues a tool call this model proposed sends
``previous_response_id`` with only the new items; anything else falls back to resending everything.

================= ======================================= ==========================================
setting           environment                             default
================= ======================================= ==========================================
base_url          ``OPENAI_BASE_URL``                     ``https://api.openai.com/v1``; Azure v1 or
                                                          Foundry: ``https://RES.openai.azure.com/openai/v1``
api_key           ``OPENAI_API_KEY`` (with api_version    required for api.openai.com
                  also ``AZURE_OPENAI_API_KEY``)
api_version       ``OPENAI_API_VERSION``                  none; set it for Azure's dated API versions
                                                          (base_url ``https://RES.openai.azure.com/openai``)
store                                                     false
timeout_s, max_retries, backoff_s, max_retry_after_s      as for ``openai:MODEL``
================= ======================================= ==========================================

Hosted tools (file_search, web_search, code_interpreter) are not sent yet; their output items are
read in one place (``_hosted_item``) when they are.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from toolcrib.errors import ConfigError, LimitExceeded, ModelUnavailable
from toolcrib.models._remote import (
    RemoteModel,
    bool_setting,
    common_settings,
    count,
    tool_call_from_json,
    url_setting,
    wire_arguments,
)
from toolcrib.models.base import Completion, Message, ToolCall, ToolChoice, ToolSpec
from toolcrib.models.openai import DEFAULT_BASE_URL, openai_client, resolve_api_key

if TYPE_CHECKING:
    from openai.types.responses import Response

__all__ = ["OpenAIResponsesModel", "input_items"]

log = logging.getLogger(__name__)

_REMEMBERED = 256  # responses whose tool calls a stored conversation may continue from


class OpenAIResponsesModel(RemoteModel):
    """A model behind the Responses API, with function tools, parallel calls and bounded retries."""

    supports_tools = True
    supports_parallel_calls = True
    supports_strict = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        api_version: str | None = None,
        store: bool = False,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_retry_after_s: float = 60.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("the model name is empty; use a spec like 'openai-responses:gpt-4.1-mini'", key="model")
        super().__init__(model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries,
                         backoff_s=backoff_s, max_backoff_s=max_backoff_s, max_retry_after_s=max_retry_after_s)
        self.name = f"openai-responses:{model}"
        self.store = store
        self.extra_body = dict(extra_body or {})
        if api_version:
            self.env_api_key = "AZURE_OPENAI_API_KEY"
        self._client, self.sdk_errors, self._headers = openai_client(
            base_url=self.base_url, api_key=api_key, timeout_s=timeout_s, api_version=api_version)
        # (conversation before the assistant turn, that turn's call ids) -> the response that proposed them
        self._continuable: OrderedDict[tuple[str, tuple[str, ...]], str] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> OpenAIResponsesModel:
        """Build from ``openai-responses:MODEL`` and settings; the environment is read here."""
        model = rest or str(settings.get("model") or "")
        if not model:
            raise ConfigError("no model name: use 'openai-responses:MODEL' (e.g. 'openai-responses:gpt-4.1-mini')",
                              key="model")
        base_url = url_setting(settings, os.environ, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        api_version = str(settings.get("api_version") or os.environ.get("OPENAI_API_VERSION") or "") or None
        env_keys = ("AZURE_OPENAI_API_KEY", "OPENAI_API_KEY") if api_version else ("OPENAI_API_KEY",)
        api_key = resolve_api_key(settings, base_url, env_names=env_keys)
        extra = settings.get("extra_body") or {}
        if not isinstance(extra, Mapping):
            raise ConfigError("extra_body must be a mapping of extra request fields", key="extra_body")
        return cls(model, base_url=base_url, api_key=api_key, api_version=api_version,
                   store=bool_setting(settings, "store", False), extra_body=extra, **common_settings(settings))

    # --- the call ---------------------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        body = self.request_body(messages, tools, tool_choice=tool_choice, max_tokens=max_tokens,
                                 temperature=temperature)
        started = time.perf_counter()
        response = self._call(lambda: self._client.responses.create(
            **body, extra_body=self.extra_body or None, extra_headers=self._headers))
        ms = (time.perf_counter() - started) * 1000.0
        completion = self._completion(response, ms, max_tokens)
        if self.store and completion.tool_calls:
            self._remember(messages, completion.tool_calls, str(response.id))
        return completion

    def request_body(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        """The fields sent to ``/responses`` (``extra_body`` aside), for a caller to log or inspect."""
        previous, new = self._continuation(messages)
        body: dict[str, Any] = {"model": self.model, "input": input_items(new), "store": self.store}
        if previous:
            body["previous_response_id"] = previous
        if tools:
            body["tools"] = [_wire_tool(t) for t in tools]
            body["tool_choice"] = tool_choice
            body["parallel_tool_calls"] = True
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def close(self) -> None:
        self._client.close()

    # --- continuing with previous_response_id ---------------------------------------------------

    def _remember(self, messages: list[Message], calls: tuple[ToolCall, ...], response_id: str) -> None:
        with self._lock:
            self._continuable[(_fingerprint(messages), tuple(c.id for c in calls))] = response_id
            while len(self._continuable) > _REMEMBERED:
                self._continuable.popitem(last=False)

    def _continuation(self, messages: list[Message]) -> tuple[str | None, list[Message]]:
        """(previous_response_id, the messages after that response's turn), or (None, all of them).

        Only a conversation that continues, unchanged, from an assistant turn whose tool calls a stored
        response of this model proposed (matched by their call ids) is continued on the server."""
        if not self.store:
            return None, messages
        with self._lock:
            known = dict(self._continuable)
        for i in range(len(messages) - 1, 0, -1):
            turn = messages[i]
            if turn.role == "assistant" and turn.tool_calls:
                response_id = known.get((_fingerprint(messages[:i]), tuple(c.id for c in turn.tool_calls)))
                if response_id and messages[i + 1:]:
                    return response_id, messages[i + 1:]
        return None, messages

    # --- the response -------------------------------------------------------------------------

    def _completion(self, response: Response, ms: float, max_tokens: int | None) -> Completion:
        status = getattr(response, "status", None)
        if status == "failed":
            error = getattr(response, "error", None)
            detail = self._scrub(str(getattr(error, "message", "") or ""))
            raise ModelUnavailable(f"the model server at {self._where} reported the response as failed"
                                   + (f" ({detail})" if detail else ""))
        if status == "incomplete":
            reason = str(getattr(getattr(response, "incomplete_details", None), "reason", "") or "unknown")
            if reason == "max_output_tokens":
                limit = f" ({max_tokens} tokens)" if max_tokens is not None else ""
                raise LimitExceeded(f"the model's reply was cut off at its output token limit{limit}")
            raise ModelUnavailable(f"the model server at {self._where} left the response incomplete ({reason})")
        texts: list[str] = []
        calls: list[ToolCall] = []
        for item in getattr(response, "output", None) or []:
            kind = getattr(item, "type", None)
            if kind == "message":
                for part in getattr(item, "content", None) or []:
                    if getattr(part, "type", None) == "output_text":
                        texts.append(str(part.text))
                    elif getattr(part, "type", None) == "refusal":
                        texts.append(str(part.refusal))
            elif kind == "function_call":
                calls.append(tool_call_from_json(getattr(item, "call_id", None), str(getattr(item, "name", "")),
                                                 getattr(item, "arguments", None)))
            else:
                self._hosted_item(item)
        usage = getattr(response, "usage", None)
        return Completion(
            text="".join(texts),
            tool_calls=tuple(calls),
            tokens_in=count(getattr(usage, "input_tokens", 0)),
            tokens_out=count(getattr(usage, "output_tokens", 0)),
            ms=ms,
            model=str(getattr(response, "model", None) or self.model),
        )

    def _hosted_item(self, item: object) -> None:
        """An output item that is not a message or a function call: reasoning, or a hosted tool's call
        (file_search_call, web_search_call, code_interpreter_call). Hosted tools are not offered yet, so
        these are only logged; when they are, this is where their calls and citations are read."""
        log.debug("Responses output item of type %r not read", getattr(item, "type", None))


# --- wire format ---------------------------------------------------------------------------------


def input_items(messages: list[Message]) -> list[dict[str, Any]]:
    """toolcrib messages as Responses input items."""
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            items.append({"type": "function_call_output", "call_id": message.tool_call_id or "",
                          "output": message.content})
            continue
        if message.content or not message.tool_calls:
            items.append({"type": "message", "role": message.role, "content": message.content})
        for call in message.tool_calls if message.role == "assistant" else ():
            items.append({"type": "function_call", "call_id": call.id, "name": call.name,
                          "arguments": wire_arguments(call)})
    return items


def _wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "name": spec.name, "description": spec.description,
            "parameters": spec.parameters, "strict": spec.strict}


def _fingerprint(messages: list[Message]) -> str:
    return hashlib.sha256(repr(messages).encode()).hexdigest()

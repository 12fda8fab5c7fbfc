"""The OpenAI Chat Completions wire protocol: OpenAI itself, vLLM, Ollama, llama.cpp's server.

``openai:MODEL`` builds an ``OpenAIChatModel`` on the official ``openai`` SDK (the ``openai`` extra).
Settings (explicit value, else environment variable):

================= ==================== ===========================================================
setting           environment          default
================= ==================== ===========================================================
base_url          ``OPENAI_BASE_URL``  ``https://api.openai.com/v1``
api_key           ``OPENAI_API_KEY``   required only for the OpenAI host; local servers may have none
timeout_s                              60
max_retries                            3 (429, 5xx and connection errors only; Retry-After honoured
                                       up to ``max_retry_after_s``, 60)
extra_body                             extra request fields (e.g. vLLM's ``guided_json``)
================= ==================== ===========================================================

Tests block real network: while ``ALLOW_NETWORK`` is False, only loopback hosts are contacted (the
check runs before every request any toolcrib backend sends; see ``_remote.py``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import httpx

from toolcrib.errors import ConfigError, MissingDependency, ModelUnavailable
from toolcrib.models._remote import (
    RemoteModel,
    SDKErrors,
    common_settings,
    count,
    drop_optional_nulls,
    ensure_network_allowed,
    guarded_http_client,
    mapping_setting,
    model_setting,
    openai_strict,
    tool_call_from_json,
    url_setting,
    wire_arguments,
)
from toolcrib.models.base import Completion, Message, ToolChoice, ToolSpec
from toolcrib.models.textcalls import parse_text_tool_calls

if TYPE_CHECKING:
    from openai import OpenAI
    from openai.types.chat import ChatCompletion

__all__ = ["ALLOW_NETWORK", "DEFAULT_BASE_URL", "OpenAIChatModel", "ensure_network_allowed", "openai_client"]

# Tests set this to False (in conftest); every remote backend checks it before each request.
ALLOW_NETWORK: bool = True

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"


def openai_client(*, base_url: str, api_key: str | None, timeout_s: float,
                  api_version: str | None = None) -> tuple[OpenAI, SDKErrors, dict[str, Any]]:
    """The SDK client (its own retries off: toolcrib's wrap it), its error classes, and the headers
    each request adds (a server without a key gets no Authorization header at all).

    With ``api_version`` the client is Azure OpenAI's (``api-key`` header, ``api-version`` query);
    Azure's v1 API and Foundry's OpenAI-compatible endpoints need no api_version, only ``base_url``.
    """
    try:
        import openai as sdk
    except ImportError:
        raise MissingDependency("the OpenAI backends (openai:MODEL, openai-responses:MODEL)", "openai") from None
    http_client = guarded_http_client(base_url, timeout_s)
    client: OpenAI
    if api_version:
        client = sdk.AzureOpenAI(base_url=base_url, api_version=api_version, api_key=api_key or "unused",
                                 timeout=timeout_s, max_retries=0, http_client=http_client)
        auth_header = "api-key"
    else:
        client = sdk.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0,
                            http_client=http_client)
        auth_header = "Authorization"
    errors = SDKErrors(base=sdk.OpenAIError, status=sdk.APIStatusError, timeout=sdk.APITimeoutError,
                       connection=sdk.APIConnectionError)
    headers: dict[str, Any] = {} if api_key else {auth_header: sdk.omit}
    return client, errors, headers


def resolve_api_key(settings: Mapping[str, Any], base_url: str, *, env_names: tuple[str, ...] = ("OPENAI_API_KEY",),
                    required_host: str = OPENAI_HOST) -> str | None:
    """The key from the setting, else the first environment variable set; required for ``required_host``."""
    api_key = settings.get("api_key") or next((os.environ[n] for n in env_names if os.environ.get(n)), None)
    if api_key is None and httpx.URL(base_url).host == required_host:
        raise ConfigError(f"an API key is required for {required_host}: set the setting 'api_key' "
                          f"or the environment variable {env_names[0]}", key="api_key")
    return str(api_key) if api_key else None


class OpenAIChatModel(RemoteModel):
    """A model served over the Chat Completions protocol, with bounded retries and no key leaks."""

    supports_tools = True
    supports_parallel_calls = True
    supports_strict = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        max_retry_after_s: float = 60.0,
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("the model name is empty; use a spec like 'openai:gpt-4o-mini'", key="model")
        super().__init__(model, base_url=base_url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries,
                         backoff_s=backoff_s, max_backoff_s=max_backoff_s, max_retry_after_s=max_retry_after_s)
        self.name = f"openai:{model}"
        self.extra_body = dict(extra_body or {})
        self._openai_host = httpx.URL(self.base_url).host == OPENAI_HOST
        self._client, self.sdk_errors, self._headers = openai_client(base_url=self.base_url, api_key=api_key,
                                                                     timeout_s=timeout_s)

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> OpenAIChatModel:
        """Build from ``openai:MODEL`` and settings; the environment is read here, never at import."""
        model = model_setting(rest, settings, "openai", "gpt-4o-mini")
        base_url = url_setting(settings, os.environ, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        api_key = resolve_api_key(settings, base_url)
        extra = mapping_setting(settings, "extra_body", "a mapping of extra request fields")
        return cls(model, base_url=base_url, api_key=api_key, extra_body=extra, **common_settings(settings))

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
        fields = self._fields(messages, tools, tool_choice=tool_choice, max_tokens=max_tokens, temperature=temperature)
        started = time.perf_counter()
        reply = self._call(lambda: self._client.chat.completions.create(
            **fields, extra_body=self.extra_body or None, extra_headers=self._headers))
        ms = (time.perf_counter() - started) * 1000.0
        completion = self._completion(reply, ms, tools_offered=bool(tools) and tool_choice != "none")
        return replace(completion, tool_calls=drop_optional_nulls(completion.tool_calls, tools))

    def request_body(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions`` (public so callers can log or inspect it)."""
        body = self._fields(messages, tools, tool_choice=tool_choice, max_tokens=max_tokens, temperature=temperature)
        body.update(self.extra_body)
        return body

    def _fields(self, messages: list[Message], tools: list[ToolSpec] | None, *, tool_choice: ToolChoice,
                max_tokens: int | None, temperature: float | None) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [_wire_message(m) for m in messages]}
        if tools:
            body["tools"] = [_wire_tool(t) for t in tools]
            body["tool_choice"] = tool_choice
        if max_tokens is not None:
            # OpenAI's newer models reject max_tokens; other servers only know max_tokens.
            body["max_completion_tokens" if self._openai_host else "max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        return body

    def close(self) -> None:
        self._client.close()

    # --- the response -------------------------------------------------------------------------

    def _completion(self, reply: ChatCompletion, ms: float, *, tools_offered: bool) -> Completion:
        # The SDK builds its types without validating them, so a server's oddities arrive as they were sent.
        choices = getattr(reply, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise ModelUnavailable("the model server returned no choices")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise ModelUnavailable("the model server returned a choice without a message")
        content: Any = message.content or getattr(message, "refusal", None) or ""
        if isinstance(content, list):  # some servers send content parts
            content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        text = content if isinstance(content, str) else ""
        calls = []
        for raw in message.tool_calls or []:
            function = getattr(raw, "function", None)  # custom (non-function) tool calls are not toolcrib's
            if function is not None:
                calls.append(tool_call_from_json(getattr(raw, "id", None), str(function.name or ""),
                                                 function.arguments))
        if not calls and tools_offered and text:
            text, calls = parse_text_tool_calls(text)
        usage = getattr(reply, "usage", None)
        return Completion(
            text=text,
            tool_calls=tuple(calls),
            tokens_in=count(getattr(usage, "prompt_tokens", 0)),
            tokens_out=count(getattr(usage, "completion_tokens", 0)),
            ms=ms,
            model=str(getattr(reply, "model", None) or self.model),
        )


# --- wire format ---------------------------------------------------------------------------------


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.name:
        out["name"] = message.name
    if message.role == "assistant" and message.tool_calls:  # content "", not null (llama.cpp refuses null)
        out["tool_calls"] = [
            {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": wire_arguments(call)}}
            for call in message.tool_calls
        ]
    return out


def _wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": openai_strict(spec.parameters) if spec.strict
                                             else spec.parameters, "strict": spec.strict}}

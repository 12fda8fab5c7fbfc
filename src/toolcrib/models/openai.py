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

Tests block real network: while ``toolcrib.models.network.ALLOW_NETWORK`` is False, only loopback hosts
are contacted (the check runs before every request any toolcrib backend sends).

The name picks the profile (``models/profile.py``): ``openai:qwen2.5-coder-1.5b`` on llama.cpp's server is
the embedded model served, and gets its aided answer path. Calls an open model writes in its text (no
tool parser on the server) are read back too (``textcalls.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

import httpx

from toolcrib.errors import ConfigError, MissingDependency, ModelUnavailable
from toolcrib.models._remote import (
    LoopClients,
    RemoteModel,
    SDKErrors,
    count,
    guarded_async_http_client,
    guarded_http_client,
    mapping_setting,
    model_setting,
    url_setting,
)
from toolcrib.models.base import Completion, Message, ModelProfile, ModelSettings, ToolSpec
from toolcrib.models.settings import RetrySettings
from toolcrib.models.textcalls import parse_text_tool_calls
from toolcrib.models.wire import drop_optional_nulls, openai_strict, tool_call_from_json, wire_arguments

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI
    from openai.types.chat import ChatCompletion

__all__ = ["DEFAULT_BASE_URL", "OpenAIChatModel", "async_openai_client", "openai_client"]

DEFAULT_BASE_URL = "https://api.openai.com/v1"
OPENAI_HOST = "api.openai.com"


def openai_client(*, base_url: str, api_key: str | None, timeout_s: float, api_version: str | None = None,
                  ) -> tuple[OpenAI, SDKErrors, dict[str, Any]]:
    """The SDK's blocking client (for a command's requests, such as a vector store's upload; its own
    retries off: the caller's wrap it), its error classes, and the headers each request adds.

    With ``api_version`` the client is Azure OpenAI's (``api-key`` header, ``api-version`` query);
    Azure's v1 API and Foundry's OpenAI-compatible endpoints need no api_version, only ``base_url``.
    """
    sdk, errors, headers = _sdk(api_key, api_version)
    http_client = guarded_http_client(base_url, timeout_s)
    if api_version:
        return sdk.AzureOpenAI(base_url=base_url, api_version=api_version, api_key=api_key or "unused",
                               timeout=timeout_s, max_retries=0, http_client=http_client), errors, headers
    return sdk.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s, max_retries=0,
                      http_client=http_client), errors, headers


def async_openai_client(*, base_url: str, api_key: str | None, timeout_s: float, api_version: str | None = None,
                        ) -> tuple[Callable[[], AsyncOpenAI], SDKErrors, dict[str, Any]]:
    """As ``openai_client``, for the model backends: what makes the SDK's async client (one per event loop)."""
    sdk, errors, headers = _sdk(api_key, api_version)

    def make() -> AsyncOpenAI:
        http_client = guarded_async_http_client(base_url, timeout_s)
        client: AsyncOpenAI
        if api_version:
            client = sdk.AsyncAzureOpenAI(base_url=base_url, api_version=api_version, api_key=api_key or "unused",
                                          timeout=timeout_s, max_retries=0, http_client=http_client)
        else:
            client = sdk.AsyncOpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout_s,
                                     max_retries=0, http_client=http_client)
        return client

    return make, errors, headers


def _sdk(api_key: str | None, api_version: str | None) -> tuple[ModuleType, SDKErrors, dict[str, Any]]:
    """The SDK (or MissingDependency naming the extra), its errors, and the headers a request adds (a server
    without a key gets no Authorization header at all)."""
    try:
        import openai as sdk
    except ImportError:
        raise MissingDependency("the OpenAI backends (openai:MODEL, openai-responses:MODEL)", "openai") from None
    auth_header = "api-key" if api_version else "Authorization"
    errors = SDKErrors(base=sdk.OpenAIError, status=sdk.APIStatusError, timeout=sdk.APITimeoutError,
                       connection=sdk.APIConnectionError)
    headers: dict[str, Any] = {} if api_key else {auth_header: sdk.omit}
    return sdk, errors, headers


def resolve_api_key(settings: Mapping[str, Any], base_url: str, *, env_names: tuple[str, ...] = ("OPENAI_API_KEY",),
                    required_host: str = OPENAI_HOST) -> str | None:
    """The key from the setting, else the first environment variable set; required for ``required_host``."""
    api_key = settings.get("api_key") or next((os.environ[n] for n in env_names if os.environ.get(n)), None)
    if api_key is None and httpx.URL(base_url).host == required_host:
        raise ConfigError(f"an API key is required for {required_host}: set the setting 'api_key' "
                          f"or the environment variable {env_names[0]}", key="api_key")
    return str(api_key) if api_key else None


class OpenAIChatModel(RemoteModel["AsyncOpenAI"]):
    """A model served over the Chat Completions protocol, with bounded retries and no key leaks."""

    profile = ModelProfile(parallel_calls=True, strict_schemas=True, prompt_format="text_calls")

    def __init__(self, model: str, *, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 retry: RetrySettings | None = None, extra_body: Mapping[str, Any] | None = None) -> None:
        if not model:
            raise ConfigError("the model name is empty; use a spec like 'openai:gpt-4o-mini'", key="model")
        super().__init__(model, base_url=base_url, api_key=api_key, retry=retry)
        self.name = f"openai:{model}"
        self.extra_body = dict(extra_body or {})
        self._openai_host = httpx.URL(self.base_url).host == OPENAI_HOST
        make, self.sdk_errors, self._headers = async_openai_client(base_url=self.base_url, api_key=api_key,
                                                             timeout_s=self.retry.timeout_s)
        self._clients = LoopClients(make)

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> OpenAIChatModel:
        """Build from ``openai:MODEL`` and settings; the environment is read here, never at import."""
        model = model_setting(rest, settings, "openai", "gpt-4o-mini")
        base_url = url_setting(settings, os.environ, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        api_key = resolve_api_key(settings, base_url)
        extra = mapping_setting(settings, "extra_body", "a mapping of extra request fields")
        return cls(model, base_url=base_url, api_key=api_key, extra_body=extra,
                   retry=RetrySettings.from_settings(settings))

    # --- the call ---------------------------------------------------------------------------

    def request_body(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                     settings: ModelSettings | None = None) -> dict[str, Any]:
        """The JSON body sent to ``/chat/completions`` (``extra_body`` included), to log or inspect."""
        return {**self._fields(messages, tools, self.settings.resolve(settings)), **self.extra_body}

    def _fields(self, messages: list[Message], tools: list[ToolSpec] | None,
                settings: ModelSettings) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": [_wire_message(m) for m in messages]}
        if tools:
            body["tools"] = [_wire_tool(t) for t in tools]
            body["tool_choice"] = settings.choice
        if settings.max_tokens is not None:
            # OpenAI's newer models reject max_tokens; other servers only know max_tokens.
            body["max_completion_tokens" if self._openai_host else "max_tokens"] = settings.max_tokens
        if settings.temperature is not None:
            body["temperature"] = settings.temperature
        return body

    async def _send(self, client: AsyncOpenAI, body: dict[str, Any]) -> ChatCompletion:
        fields = {k: v for k, v in body.items() if k not in self.extra_body}  # the SDK sends extra_body apart
        reply: ChatCompletion = await client.chat.completions.create(**fields, extra_body=self.extra_body or None,
                                                                     extra_headers=self._headers)
        return reply

    # --- the response -------------------------------------------------------------------------

    def _completion(self, reply: ChatCompletion, ms: float, messages: list[Message], tools: list[ToolSpec] | None,
                    settings: ModelSettings) -> Completion:
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
        if not calls and settings.offered(tools) and text and self.profile.prompt_format == "text_calls":
            text, calls = parse_text_tool_calls(text)
        usage = getattr(reply, "usage", None)
        return Completion(
            text=text,
            tool_calls=drop_optional_nulls(tuple(calls), tools),
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

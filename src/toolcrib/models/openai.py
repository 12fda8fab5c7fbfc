"""The OpenAI Chat Completions wire protocol: OpenAI itself, vLLM, Ollama, llama.cpp's server.

``openai:MODEL`` builds an ``OpenAIChatModel``. Settings (explicit value, else environment variable):

========== ==================== ===========================================================
setting    environment          default
========== ==================== ===========================================================
base_url   ``OPENAI_BASE_URL``  ``https://api.openai.com/v1``
api_key    ``OPENAI_API_KEY``   required only for the OpenAI host; local servers may have none
timeout_s                       60
max_retries                     3 (429, 5xx and connection errors only; Retry-After honoured)
========== ==================== ===========================================================

Tests block real network: while ``ALLOW_NETWORK`` is False, only loopback hosts are contacted.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import logging
import os
import random
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import httpx

from toolcrib.errors import ConfigError, ModelUnavailable
from toolcrib.models.base import Completion, Message, Model, ToolCall, ToolChoice, ToolSpec
from toolcrib.models.textcalls import new_call_id, parse_text_tool_calls

__all__ = ["ALLOW_NETWORK", "DEFAULT_BASE_URL", "OpenAIChatModel", "ensure_network_allowed"]

log = logging.getLogger(__name__)

# Tests set this to False (in conftest); every real backend calls ensure_network_allowed() per request.
ALLOW_NETWORK: bool = True

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_OPENAI_HOST = "api.openai.com"
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))
# Timeouts are handled apart: a connect timeout is retried, a read timeout is not (the server may
# still be generating, and a retry would double the wait).
_RETRYABLE_TRANSPORT = (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)
_MAX_WAIT_S = 60.0
_SECRETISH = re.compile(r"(\bsk-[A-Za-z0-9_\-*]{4,}|Bearer\s+\S+)")


def ensure_network_allowed(url: str | httpx.URL) -> None:
    """Refuse a non-loopback host while ``ALLOW_NETWORK`` is False (read at call time, not import)."""
    if ALLOW_NETWORK:
        return
    host = httpx.URL(str(url)).host
    if not _is_loopback(host):
        raise ModelUnavailable(
            f"network access to '{host}' is blocked (toolcrib.models.openai.ALLOW_NETWORK is False, "
            "as in the test suite); only loopback servers may be contacted"
        )


class OpenAIChatModel(Model):
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
        extra_body: Mapping[str, Any] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not model:
            raise ConfigError("the model name is empty; use a spec like 'openai:gpt-4o-mini'", key="model")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.extra_body = dict(extra_body or {})
        self.retries = 0  # retried attempts over this instance's life (429, 5xx, connection errors)
        self._api_key = api_key
        host = httpx.URL(self.base_url).host
        self._openai_host = host == _OPENAI_HOST
        headers = {"Accept": "application/json", "User-Agent": "toolcrib"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=self.base_url,
            headers=headers,
            timeout=httpx.Timeout(timeout_s),
            transport=transport,
            trust_env=not _is_loopback(host),  # a proxy from the environment must not see loopback calls
        )

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> OpenAIChatModel:
        """Build from ``openai:MODEL`` and settings; the environment is read here, never at import."""
        model = rest or str(settings.get("model") or "")
        if not model:
            raise ConfigError("no model name: use 'openai:MODEL' (e.g. 'openai:gpt-4o-mini')", key="model")
        base_url = str(settings.get("base_url") or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must start with http:// or https://, got '{base_url}' "
                              "(setting 'base_url' or environment variable OPENAI_BASE_URL)", key="base_url")
        api_key = settings.get("api_key") or os.environ.get("OPENAI_API_KEY") or None
        if api_key is None and httpx.URL(base_url).host == _OPENAI_HOST:
            raise ConfigError("an API key is required for api.openai.com: set the setting 'api_key' "
                              "or the environment variable OPENAI_API_KEY", key="api_key")
        extra = settings.get("extra_body") or {}
        if not isinstance(extra, Mapping):
            raise ConfigError("extra_body must be a mapping of extra request fields", key="extra_body")
        return cls(
            model,
            base_url=base_url,
            api_key=str(api_key) if api_key else None,
            timeout_s=_number(settings, "timeout_s", 60.0, minimum=0.001),
            max_retries=int(_number(settings, "max_retries", 3, minimum=0)),
            backoff_s=_number(settings, "backoff_s", 0.5, minimum=0.0),
            extra_body=extra,
        )

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
        data = self._post("/chat/completions", body)
        ms = (time.perf_counter() - started) * 1000.0
        return self._completion(data, ms, tools_offered=bool(tools) and tool_choice != "none")

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
        body: dict[str, Any] = {"model": self.model, "messages": [_wire_message(m) for m in messages]}
        if tools:
            body["tools"] = [_wire_tool(t) for t in tools]
            body["tool_choice"] = tool_choice
        if max_tokens is not None:
            # OpenAI's newer models reject max_tokens; other servers only know max_tokens.
            body["max_completion_tokens" if self._openai_host else "max_tokens"] = max_tokens
        if temperature is not None:
            body["temperature"] = temperature
        body.update(self.extra_body)
        return body

    def close(self) -> None:
        self._client.close()

    # --- transport with retries ---------------------------------------------------------------

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        ensure_network_allowed(self.base_url)
        where = httpx.URL(self.base_url).host
        attempt = 0
        while True:
            try:
                response = self._client.post(path, json=body)
            except httpx.TimeoutException as exc:
                if isinstance(exc, (httpx.ConnectTimeout, httpx.PoolTimeout)) and attempt < self.max_retries:
                    attempt = self._wait(attempt, None, f"connect timeout to {where}")
                    continue
                raise ModelUnavailable(
                    f"the model server at {where} did not answer within {self.timeout_s:g} s "
                    "(setting 'timeout_s')") from None
            except _RETRYABLE_TRANSPORT as exc:
                if attempt < self.max_retries:
                    attempt = self._wait(attempt, None, f"{type(exc).__name__} from {where}")
                    continue
                raise ModelUnavailable(
                    f"cannot reach the model server at {self.base_url} after {attempt + 1} attempts "
                    f"({type(exc).__name__}); check 'base_url' / OPENAI_BASE_URL and that the server runs"
                ) from None
            except httpx.HTTPError as exc:
                raise ModelUnavailable(f"request to the model server at {where} failed "
                                       f"({type(exc).__name__})") from None
            status = response.status_code
            if status in _RETRY_STATUS and attempt < self.max_retries:
                attempt = self._wait(attempt, _retry_after(response.headers), f"HTTP {status} from {where}")
                continue
            if status >= 400:
                raise ModelUnavailable(self._http_error(response, attempt))
            try:
                data = response.json()
            except ValueError:
                raise ModelUnavailable(f"the model server at {where} returned a body that is not JSON "
                                       f"(HTTP {status})") from None
            if not isinstance(data, dict):
                raise ModelUnavailable(f"the model server at {where} returned an unexpected JSON body")
            return data

    def _wait(self, attempt: int, retry_after: float | None, why: str) -> int:
        if retry_after is not None:
            delay = min(max(retry_after, 0.0), _MAX_WAIT_S)
        else:
            delay = min(self.backoff_s * (2 ** attempt), self.max_backoff_s) * random.uniform(0.5, 1.0)
        log.warning("model request retry %d/%d in %.2f s: %s", attempt + 1, self.max_retries, delay, why)
        self.retries += 1
        if delay > 0:
            time.sleep(delay)
        return attempt + 1

    def _http_error(self, response: httpx.Response, attempt: int) -> str:
        status = response.status_code
        where = httpx.URL(self.base_url).host
        detail = self._scrub(_error_detail(response))
        tried = f" after {attempt + 1} attempts" if attempt else ""
        if status in (401, 403):
            hint = "authentication failed: check the setting 'api_key' or the environment variable OPENAI_API_KEY"
        elif status == 404:
            hint = f"not found: check the model name '{self.model}' and 'base_url' / OPENAI_BASE_URL"
        elif status == 429:
            hint = "rate limited or out of quota"
        elif status >= 500:
            hint = "server error"
        else:
            hint = "the server rejected the request"
        message = f"the model server at {where} answered HTTP {status}{tried}: {hint}"
        return f"{message} ({detail})" if detail else message

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return _SECRETISH.sub("***", text)[:300]

    # --- the response -------------------------------------------------------------------------

    def _completion(self, data: dict[str, Any], ms: float, *, tools_offered: bool) -> Completion:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelUnavailable("the model server returned no choices")
        message = choices[0].get("message")
        if not isinstance(message, dict):
            raise ModelUnavailable("the model server returned a choice without a message")
        text = message.get("content") or message.get("refusal") or ""
        if not isinstance(text, str):  # some servers send content parts
            text = "".join(part.get("text", "") for part in text if isinstance(part, dict))
        calls = [_parse_wire_call(raw) for raw in message.get("tool_calls") or [] if isinstance(raw, dict)]
        if not calls and tools_offered and text:
            text, calls = parse_text_tool_calls(text)
        raw_usage = data.get("usage")
        usage: dict[str, Any] = raw_usage if isinstance(raw_usage, dict) else {}
        return Completion(
            text=text,
            tool_calls=tuple(calls),
            tokens_in=_count(usage.get("prompt_tokens")),
            tokens_out=_count(usage.get("completion_tokens")),
            ms=ms,
            model=str(data.get("model") or self.model),
        )


# --- wire format ---------------------------------------------------------------------------------


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.name:
        out["name"] = message.name
    if message.role == "assistant" and message.tool_calls:
        out["content"] = message.content or None
        out["tool_calls"] = [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": _wire_arguments(call)}}
            for call in message.tool_calls
        ]
    return out


def _wire_arguments(call: ToolCall) -> str:
    # A call whose arguments did not parse goes back as the model wrote it, so it can see its mistake.
    if call.parse_error and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def _wire_tool(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "function", "function": {"name": spec.name, "description": spec.description,
                                             "parameters": spec.parameters, "strict": spec.strict}}


def _parse_wire_call(raw: dict[str, Any]) -> ToolCall:
    raw_function = raw.get("function")
    function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
    name = str(function.get("name") or "")
    call_id = str(raw.get("id") or new_call_id())
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # Ollama and some proxies send an object, not a string
        return ToolCall(id=call_id, name=name, arguments=arguments, raw_arguments=json.dumps(arguments))
    text = arguments if isinstance(arguments, str) else ""
    if not text.strip():
        return ToolCall(id=call_id, name=name, arguments={}, raw_arguments=text)
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        return ToolCall(id=call_id, name=name, arguments={}, raw_arguments=text,
                        parse_error=f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    if not isinstance(parsed, dict):
        return ToolCall(id=call_id, name=name, arguments={}, raw_arguments=text,
                        parse_error=f"arguments must be a JSON object, got {type(parsed).__name__}")
    return ToolCall(id=call_id, name=name, arguments=parsed, raw_arguments=text)


def _error_detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:200]
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        return str(error.get("message") or error.get("code") or "")
    if isinstance(error, str):
        return error
    return str(data.get("detail") or "") if isinstance(data, dict) else ""


def _retry_after(headers: httpx.Headers) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); None if absent."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return float(millis) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (when - datetime.now(UTC)).total_seconds()


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def _is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _number(settings: Mapping[str, Any], key: str, default: float, *, minimum: float) -> float:
    value = settings.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected a number, got {value!r}", key=key) from None
    if number < minimum:
        raise ConfigError(f"expected a number >= {minimum:g}, got {value!r}", key=key)
    return number

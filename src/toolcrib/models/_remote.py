"""What every backend that calls a provider's SDK over HTTP shares.

The network guard (tests allow only loopback), the async HTTP client handed to the SDK (one per event
loop: an async client's connections belong to the loop that opened them), toolcrib's own bounded retries
on top of an SDK told not to retry, and error messages that say what to do and never carry a key. Imports
no SDK: each backend supplies its SDK's error classes (both official SDKs are generated from one
template, so their errors share a shape: ``status_code``, ``response``, ``body``).

Why not the SDKs' own retries: they also retry read timeouts (a slow server would then take
``(max_retries + 1) * timeout_s``, not ``timeout_s``), 408 and 409, and they ignore ``Retry-After: 0``;
toolcrib documents retries on 429, 5xx and connection failures only, with Retry-After honoured up to
a bound. The SDKs' timeouts, typed requests and responses and typed errors are used as they are.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import re
import time
import weakref
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

import httpx

from toolcrib.errors import ConfigError, ModelUnavailable
from toolcrib.models.base import Completion, Message, Model, ToolSpec
from toolcrib.models.network import ensure_network_allowed, is_loopback
from toolcrib.models.profile import profile_for
from toolcrib.models.settings import ModelSettings, RetrySettings

if TYPE_CHECKING:
    import httpx2

log = logging.getLogger("toolcrib.models")

_SECRETISH = re.compile(r"(\bsk-[A-Za-z0-9_\-*]{4,}|Bearer\s+\S+)")


def guarded_http_client(base_url: str, timeout_s: float) -> httpx2.Client:
    """The HTTP client an SDK gets: the network guard runs before every request it sends (retries and
    any other endpoint included), redirects are not followed, and a proxy from the environment never
    sees loopback calls."""
    import httpx2

    def guard(request: httpx2.Request) -> None:
        ensure_network_allowed(request.url)

    return httpx2.Client(timeout=httpx2.Timeout(timeout_s), follow_redirects=False,
                         trust_env=not is_loopback(httpx.URL(base_url).host), event_hooks={"request": [guard]})


def guarded_async_http_client(base_url: str, timeout_s: float) -> httpx2.AsyncClient:
    """``guarded_http_client`` for an SDK's async client."""
    import httpx2

    async def guard(request: httpx2.Request) -> None:
        ensure_network_allowed(request.url)

    return httpx2.AsyncClient(timeout=httpx2.Timeout(timeout_s), follow_redirects=False,
                              trust_env=not is_loopback(httpx.URL(base_url).host), event_hooks={"request": [guard]})


class _Closeable(Protocol):
    async def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closeable)
_T = TypeVar("_T")


class LoopClients(Generic[_C]):
    """One SDK client per event loop, made on first use there: the sync API runs each thread's runs on
    that thread's own loop, and an async client's pooled connections cannot move between loops."""

    def __init__(self, make: Callable[[], _C]) -> None:
        self._make = make
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _C] = weakref.WeakKeyDictionary()

    def get(self) -> _C:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._make()
        return client

    def close(self) -> None:
        """Close each loop's client: now where its loop is idle, as a task where it runs; a closed loop's
        connections went with it."""
        clients, self._clients = list(self._clients.items()), weakref.WeakKeyDictionary()
        for loop, client in clients:
            if loop.is_closed():
                continue
            if loop.is_running():
                loop.call_soon_threadsafe(_close_on, loop, client)
            else:
                loop.run_until_complete(client.close())


_CLOSING: set[asyncio.Task[None]] = set()  # closing tasks, held until done


def _close_on(loop: asyncio.AbstractEventLoop, client: _Closeable) -> None:
    task = loop.create_task(client.close())
    _CLOSING.add(task)
    task.add_done_callback(_CLOSING.discard)


@dataclass(frozen=True)
class SDKErrors:
    """An SDK's error classes, as the retry loop needs them."""

    base: type[Exception]
    status: type[Exception]
    timeout: type[Exception]
    connection: type[Exception]


@dataclass(frozen=True)
class _Failure:
    kind: Literal["status", "timeout", "connect_timeout", "connection", "bad_body", "other"]
    status: int = 0
    retry_after: float | None = None
    detail: str = ""
    code: str = ""
    cause: str = ""

    @property
    def retryable(self) -> bool:
        if self.kind == "status":
            return (self.status == 429 and self.code != "insufficient_quota") or self.status >= 500
        return self.kind in ("connect_timeout", "connection")


class RemoteModel(Model, Generic[_C]):
    """Base of the SDK-backed backends: what every remote model has, and ``complete`` as one request
    body sent with retries and read back (each backend writes ``request_body``, ``_send``, ``_completion``)."""

    env_api_key: str = "OPENAI_API_KEY"
    env_base_url: str = "OPENAI_BASE_URL"
    sdk_errors: SDKErrors
    _clients: LoopClients[_C]

    def __init__(self, model: str, *, base_url: str, api_key: str | None, retry: RetrySettings | None) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetrySettings()
        self.retries = 0  # retried attempts over this instance's life (429, 5xx, connection errors)
        self._api_key = api_key
        self.profile = profile_for(model, type(self).profile)  # the family the name belongs to

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                       settings: ModelSettings | None = None) -> Completion:
        resolved = self.settings.resolve(settings)
        body = self.request_body(messages, tools, resolved)
        started = time.perf_counter()
        reply = await self._call(lambda: self._send(self._clients.get(), body))
        return self._completion(reply, (time.perf_counter() - started) * 1000.0, messages, tools, resolved)

    @abstractmethod
    def request_body(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                     settings: ModelSettings | None = None) -> dict[str, Any]:
        """The fields of the request (public, so callers can log or inspect it)."""

    @abstractmethod
    async def _send(self, client: _C, body: dict[str, Any]) -> Any:
        """One SDK request with ``body``."""

    @abstractmethod
    def _completion(self, reply: Any, ms: float, messages: list[Message], tools: list[ToolSpec] | None,
                    settings: ModelSettings) -> Completion:
        """The provider's reply as a ``Completion``."""

    def close(self) -> None:
        self._clients.close()

    # --- the call with retries --------------------------------------------------------------

    async def _call(self, send: Callable[[], Awaitable[_T]]) -> _T:
        """``send()`` (one SDK request, SDK retries off), retried on 429/5xx/connection failures."""
        ensure_network_allowed(self.base_url)
        attempt = 0
        while True:
            try:
                return await send()
            except ModelUnavailable:  # the network guard, from the HTTP client's request hook
                raise
            except self.sdk_errors.connection as exc:
                if isinstance(exc.__cause__, ModelUnavailable):
                    raise exc.__cause__ from None
                failure = self._transport_failure(exc)
            except self.sdk_errors.status as exc:
                failure = self._status_failure(exc)
            except self.sdk_errors.base as exc:
                failure = _Failure("other", cause=type(exc).__name__)
            except ValueError:  # a 200 whose body is not JSON
                failure = _Failure("bad_body")
            # Raised outside the except blocks: nothing is chained to the error a user sees.
            if failure.retryable and attempt < self.retry.max_retries:
                delay = self._delay(attempt, failure.retry_after)
                if delay is not None:
                    await self._wait(attempt, delay, failure)
                    attempt += 1
                    continue
            raise ModelUnavailable(self._message(failure, attempt))

    def _transport_failure(self, exc: Exception) -> _Failure:
        cause = exc.__cause__
        if isinstance(exc, self.sdk_errors.timeout):
            # A connect timeout is retried; a read timeout is not (the server may still be generating).
            connect = type(cause).__name__ in ("ConnectTimeout", "PoolTimeout")
            return _Failure("connect_timeout" if connect else "timeout", cause=type(cause).__name__)
        return _Failure("connection", cause=type(cause or exc).__name__)

    def _status_failure(self, exc: Exception) -> _Failure:
        status = int(getattr(exc, "status_code", 0) or 0)
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        detail, code = _error_detail(getattr(exc, "body", None))
        return _Failure("status", status=status, retry_after=retry_after(headers) if headers is not None else None,
                        detail=detail, code=code)

    def _delay(self, attempt: int, retry_after_s: float | None) -> float | None:
        """Seconds to wait before the next attempt; None when the server asks for more than the bound."""
        if retry_after_s is not None:
            if retry_after_s > self.retry.max_retry_after_s:
                return None
            return max(retry_after_s, 0.0)
        backoff: float = min(self.retry.backoff_s * (2.0 ** attempt), self.retry.max_backoff_s)
        return backoff * random.uniform(0.5, 1.0)

    async def _wait(self, attempt: int, delay: float, failure: _Failure) -> None:
        why = f"HTTP {failure.status}" if failure.kind == "status" else failure.cause or failure.kind
        log.warning("model request retry %d/%d in %.2f s: %s from %s", attempt + 1, self.retry.max_retries, delay,
                    why, self._where)
        self.retries += 1
        if delay > 0:
            await asyncio.sleep(delay)

    @property
    def _where(self) -> str:
        return httpx.URL(self.base_url).host

    def _message(self, failure: _Failure, attempt: int) -> str:
        where = self._where
        tried = f" after {attempt + 1} attempts" if attempt else ""
        if failure.kind == "timeout":
            return f"the model server at {where} did not answer within {self.retry.timeout_s:g} s (setting 'timeout_s')"
        if failure.kind in ("connection", "connect_timeout"):
            return (f"cannot reach the model server at {self.base_url}{tried or ' after 1 attempt'} ({failure.cause}); "
                    f"check 'base_url' / {self.env_base_url} and that the server runs")
        if failure.kind == "bad_body":
            return f"the model server at {where} returned a body that is not JSON"
        if failure.kind == "other":
            return f"the request to the model server at {where} failed ({failure.cause})"
        status = failure.status
        if status in (401, 403):
            hint = f"authentication failed: check the setting 'api_key' or the environment variable {self.env_api_key}"
        elif status == 404:
            hint = f"not found: check the model name '{self.model}' and 'base_url' / {self.env_base_url}"
        elif status == 429:
            hint = "rate limited or out of quota"
            if failure.retry_after is not None and failure.retry_after > self.retry.max_retry_after_s:
                hint += (f"; the server asked to retry after {failure.retry_after:g} s, more than the "
                         f"{self.retry.max_retry_after_s:g} s toolcrib waits")
        elif status >= 500:
            hint = "server error"
        else:
            hint = "the server rejected the request"
        message = f"the model server at {where} answered HTTP {status}{tried}: {hint}"
        detail = self._scrub(failure.detail)
        return f"{message} ({detail})" if detail else message

    def _scrub(self, text: str) -> str:
        if self._api_key:
            text = text.replace(self._api_key, "***")
        return _SECRETISH.sub("***", text)[:300]


def _error_detail(body: object) -> tuple[str, str]:
    """(message, code) from an error body: OpenAI's ``{"error": {...}}``, Anthropic's
    ``{"type": "error", "error": {...}}``, or a plain string."""
    if isinstance(body, str):
        return body.strip()[:200], ""
    if not isinstance(body, Mapping):
        return "", ""
    error = body.get("error", body)
    if isinstance(error, Mapping):
        message = error.get("message") or error.get("code") or ""
        return str(message), str(error.get("code") or error.get("type") or "")
    if isinstance(error, str):
        return error, ""
    return str(body.get("detail") or ""), ""


def retry_after(headers: Any) -> float | None:
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


def count(value: Any) -> int:
    return value if isinstance(value, int) and value >= 0 else 0


def bool_setting(settings: Mapping[str, Any], key: str, default: bool) -> bool:
    value = settings.get(key, default)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "on", "off", "yes", "no", "1", "0"):
        return value.lower() in ("true", "on", "yes", "1")
    raise ConfigError(f"expected true or false, got {value!r}", key=key)


def model_setting(rest: str, settings: Mapping[str, Any], prefix: str, example: str) -> str:
    """The model name of ``PREFIX:MODEL`` (or the ``model`` setting); a ConfigError when there is none."""
    model = rest or str(settings.get("model") or "")
    if not model:
        raise ConfigError(f"no model name: use '{prefix}:MODEL' (e.g. '{prefix}:{example}')", key="model")
    return model


def mapping_setting(settings: Mapping[str, Any], key: str, expected: str) -> Mapping[str, Any]:
    """A table-valued setting (empty when unset); ``expected`` says what it should hold."""
    value = settings.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key} must be {expected}", key=key)
    return value


def url_setting(settings: Mapping[str, Any], env: Mapping[str, str], env_name: str, default: str) -> str:
    base_url = str(settings.get("base_url") or env.get(env_name) or default)
    if not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"base_url must start with http:// or https://, got '{base_url}' "
                          f"(setting 'base_url' or environment variable {env_name})", key="base_url")
    return base_url

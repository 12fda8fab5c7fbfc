"""What every backend that calls a provider's SDK over HTTP shares.

The network guard (tests allow only loopback), the HTTP client handed to the SDK, toolcrib's own
bounded retries on top of an SDK told not to retry, and error messages that say what to do and never
carry a key. Imports no SDK: each backend supplies its SDK's error classes (both official SDKs are
generated from one template, so their errors share a shape: ``status_code``, ``response``, ``body``).

Why not the SDKs' own retries: they also retry read timeouts (a slow server would then take
``(max_retries + 1) * timeout_s``, not ``timeout_s``), 408 and 409, and they ignore ``Retry-After: 0``;
toolcrib documents retries on 429, 5xx and connection failures only, with Retry-After honoured up to
a bound. The SDKs' timeouts, typed requests and responses and typed errors are used as they are.
"""

from __future__ import annotations

import email.utils
import ipaddress
import json
import logging
import random
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import httpx

from toolcrib.errors import ConfigError, ModelUnavailable
from toolcrib.models.base import Model, ToolCall, ToolSpec
from toolcrib.models.textcalls import new_call_id

if TYPE_CHECKING:
    import httpx2

__all__ = ["ensure_network_allowed", "is_loopback"]

log = logging.getLogger("toolcrib.models")

_T = TypeVar("_T")
_SECRETISH = re.compile(r"(\bsk-[A-Za-z0-9_\-*]{4,}|Bearer\s+\S+)")


def is_loopback(host: str) -> bool:
    if host.lower() in ("localhost", "localhost.localdomain") or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def ensure_network_allowed(url: object) -> None:
    """Refuse a non-loopback host while ``toolcrib.models.openai.ALLOW_NETWORK`` is False.

    The flag is read at call time from the module where the test suite sets it (conftest).
    """
    from toolcrib.models import openai as flag_home

    if flag_home.ALLOW_NETWORK:
        return
    host = httpx.URL(str(url)).host
    if not is_loopback(host):
        raise ModelUnavailable(
            f"network access to '{host}' is blocked (toolcrib.models.openai.ALLOW_NETWORK is False, "
            "as in the test suite); only loopback servers may be contacted"
        )


def guarded_http_client(base_url: str, timeout_s: float) -> httpx2.Client:
    """The HTTP client an SDK gets: the network guard runs before every request it sends (retries and
    any other endpoint included), redirects are not followed, and a proxy from the environment never
    sees loopback calls."""
    import httpx2

    def guard(request: httpx2.Request) -> None:
        ensure_network_allowed(request.url)

    host = httpx.URL(base_url).host
    return httpx2.Client(timeout=httpx2.Timeout(timeout_s), follow_redirects=False,
                         trust_env=not is_loopback(host), event_hooks={"request": [guard]})


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


class RemoteModel(Model):
    """Base of the SDK-backed backends: settings every remote model has and the call with retries."""

    env_api_key: str = "OPENAI_API_KEY"
    env_base_url: str = "OPENAI_BASE_URL"
    sdk_errors: SDKErrors

    def __init__(self, model: str, *, base_url: str, api_key: str | None, timeout_s: float, max_retries: int,
                 backoff_s: float, max_backoff_s: float, max_retry_after_s: float) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.max_retry_after_s = max_retry_after_s
        self.retries = 0  # retried attempts over this instance's life (429, 5xx, connection errors)
        self._api_key = api_key

    # --- the call with retries --------------------------------------------------------------

    def _call(self, send: Callable[[], _T]) -> _T:
        """``send()`` (one SDK request, SDK retries off), retried on 429/5xx/connection failures."""
        ensure_network_allowed(self.base_url)
        attempt = 0
        while True:
            try:
                return send()
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
            if failure.retryable and attempt < self.max_retries:
                delay = self._delay(attempt, failure.retry_after)
                if delay is not None:
                    self._wait(attempt, delay, failure)
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
            if retry_after_s > self.max_retry_after_s:
                return None
            return max(retry_after_s, 0.0)
        backoff: float = min(self.backoff_s * (2.0 ** attempt), self.max_backoff_s)
        return backoff * random.uniform(0.5, 1.0)

    def _wait(self, attempt: int, delay: float, failure: _Failure) -> None:
        why = f"HTTP {failure.status}" if failure.kind == "status" else failure.cause or failure.kind
        log.warning("model request retry %d/%d in %.2f s: %s from %s", attempt + 1, self.max_retries, delay, why,
                    self._where)
        self.retries += 1
        if delay > 0:
            time.sleep(delay)

    @property
    def _where(self) -> str:
        return httpx.URL(self.base_url).host

    def _message(self, failure: _Failure, attempt: int) -> str:
        where = self._where
        tried = f" after {attempt + 1} attempts" if attempt else ""
        if failure.kind == "timeout":
            return f"the model server at {where} did not answer within {self.timeout_s:g} s (setting 'timeout_s')"
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
            if failure.retry_after is not None and failure.retry_after > self.max_retry_after_s:
                hint += (f"; the server asked to retry after {failure.retry_after:g} s, more than the "
                         f"{self.max_retry_after_s:g} s toolcrib waits")
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


# --- shared pieces of the wire formats -----------------------------------------------------------


def tool_call_from_json(call_id: str | None, name: str, arguments: object) -> ToolCall:
    """A ToolCall from arguments as a provider sent them: a JSON string (or an object); a string that
    is not a JSON object gives an empty ``arguments`` and a ``parse_error`` the gate refuses with."""
    call_id = call_id or new_call_id()
    if isinstance(arguments, dict):
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


def openai_strict(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``schema`` as OpenAI's strict mode (function tools with ``strict: true``) takes it: every object
    lists all its properties as required, and one that was optional accepts null instead. A null the
    model sends for such a property means "not given": ``drop_optional_nulls`` removes it again, so
    the gate validates exactly what it would have without the rewrite (defaults apply)."""
    strict: dict[str, Any] = _strict_node(schema)
    return strict


def _strict_node(node: Any) -> Any:
    if not isinstance(node, Mapping):
        return node
    out = dict(node)
    for key in ("items", "additionalProperties", "not"):
        if isinstance(out.get(key), Mapping):
            out[key] = _strict_node(out[key])
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        if isinstance(out.get(key), list):
            out[key] = [_strict_node(n) for n in out[key]]
    for key in ("$defs", "definitions"):
        if isinstance(out.get(key), Mapping):
            out[key] = {name: _strict_node(n) for name, n in out[key].items()}
    properties = out.get("properties")
    if isinstance(properties, Mapping):
        required = set(out.get("required") or ())
        out["properties"] = {name: _strict_node(p) if name in required else _nullable(_strict_node(p))
                             for name, p in properties.items()}
        out["required"] = list(properties)
    return out


def _nullable(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    kind = schema.get("type")
    if "enum" in schema and None not in schema["enum"]:
        schema = {**schema, "enum": [*schema["enum"], None]}
    if isinstance(kind, str):
        return schema if kind == "null" else {**schema, "type": [kind, "null"]}
    if isinstance(kind, list):
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if isinstance(schema.get("anyOf"), list):
        if any(isinstance(o, Mapping) and o.get("type") == "null" for o in schema["anyOf"]):
            return schema
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [schema, {"type": "null"}]}


def drop_optional_nulls(calls: tuple[ToolCall, ...], tools: Sequence[ToolSpec] | None) -> tuple[ToolCall, ...]:
    """The calls without the null arguments ``openai_strict`` made the model send for optional
    properties (top level and nested objects); any other value, a null for a required property
    included, is left for the gate to judge."""
    schemas = {t.name: t.parameters for t in tools or ()}
    out = []
    for call in calls:
        schema = schemas.get(call.name)
        cleaned = _without_nulls(call.arguments, schema) if schema and not call.parse_error else call.arguments
        out.append(call if cleaned == call.arguments else replace(call, arguments=cleaned))
    return tuple(out)


def _without_nulls(value: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return value
    required = set(schema.get("required") or ())
    out = {}
    for name, item in value.items():
        if item is None and name in properties and name not in required:
            continue
        sub = properties.get(name)
        out[name] = _without_nulls(item, sub) if isinstance(item, dict) and isinstance(sub, Mapping) else item
    return out


def wire_arguments(call: ToolCall) -> str:
    """A call's arguments as sent back in a conversation: as the model wrote them when they did not
    parse (so it can see its mistake), else the parsed object as JSON."""
    if call.parse_error and call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


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


def number_setting(settings: Mapping[str, Any], key: str, default: float, *, minimum: float) -> float:
    value = settings.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"expected a number, got {value!r}", key=key) from None
    if number < minimum:
        raise ConfigError(f"expected a number >= {minimum:g}, got {value!r}", key=key)
    return number


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


def common_settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """timeout_s, max_retries, backoff_s, max_backoff_s and max_retry_after_s from settings."""
    return {
        "timeout_s": number_setting(settings, "timeout_s", 60.0, minimum=0.001),
        "max_retries": int(number_setting(settings, "max_retries", 3, minimum=0)),
        "backoff_s": number_setting(settings, "backoff_s", 0.5, minimum=0.0),
        "max_backoff_s": number_setting(settings, "max_backoff_s", 8.0, minimum=0.0),
        "max_retry_after_s": number_setting(settings, "max_retry_after_s", 60.0, minimum=0.0),
    }

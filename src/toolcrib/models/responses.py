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

Hosted tools, run by the provider itself, by workspace configuration (``hosted_tools``; each value is
a table of that tool's options, ``{}`` for none)::

    [model.settings.hosted_tools]
    file_search = { vector_store_ids = ["vs_..."], max_num_results = 8 }  # `toolcrib ingest --to ...` prints the id
    web_search = { search_context_size = "medium" }
    code_interpreter = {}                                                 # container {"type": "auto"} by default

They are sent with every request (a request of code's that offers no function tools included), with
``include`` asking for their results (``file_search_call.results``, ``web_search_call.action.sources``,
``code_interpreter_call.outputs``). The gate never sees them: the provider decides and runs them, and
the runner records each as a ``call_executed`` decided by the provider. What they found becomes
citable only as the provider returned it: a file passage as ``file#<file id>`` (its quoted text), a
web page as ``web#<hash of the URL>`` (as the ``web_search`` builtin cites it); the reply's
``file_citation`` / ``url_citation`` annotations become ``[id]`` markers in the text at the place the
provider put them.

A hosted file search reads only what the principal may: ``toolcrib ingest --to openai-vector-store``
gives each file one boolean attribute per group of its ``access`` list (``toolcrib_access_GROUP``, and
``toolcrib_public`` for everyone), and every request made for a principal carries a ``filters`` clause
matching their groups (and the configured ``filters``, if any, with ``and``). A file attached to the
store by other means carries no such attribute and is found by no one until it is given one.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from toolcrib.errors import ConfigError, LimitExceeded, ModelUnavailable
from toolcrib.models._remote import (
    LoopClients,
    RemoteModel,
    bool_setting,
    count,
    mapping_setting,
    model_setting,
    url_setting,
)
from toolcrib.models.base import (
    Completion,
    HostedCall,
    HostedSource,
    Message,
    ModelProfile,
    ModelSettings,
    ToolCall,
    ToolSpec,
)
from toolcrib.models.openai import DEFAULT_BASE_URL, async_openai_client, resolve_api_key
from toolcrib.models.settings import RetrySettings
from toolcrib.models.wire import drop_optional_nulls, openai_strict, tool_call_from_json, wire_arguments

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.responses import Response

__all__ = ["OpenAIResponsesModel", "input_items"]

log = logging.getLogger(__name__)

_REMEMBERED = 256  # responses whose tool calls a stored conversation may continue from

# Each hosted tool: the options toolcrib passes through (the SDK's FileSearchToolParam, WebSearchToolParam
# and tool_param.CodeInterpreter) and what ``include`` asks for so its results reach the trace.
_HOSTED_OPTIONS: dict[str, frozenset[str]] = {
    "file_search": frozenset({"vector_store_ids", "max_num_results", "filters", "ranking_options"}),
    "web_search": frozenset({"search_context_size", "user_location", "filters", "external_web_access"}),
    "code_interpreter": frozenset({"container"}),
}
_HOSTED_INCLUDE = {"file_search": "file_search_call.results", "web_search": "web_search_call.action.sources",
                   "code_interpreter": "code_interpreter_call.outputs"}
_HOSTED_ITEMS = {"file_search_call": "file_search", "web_search_call": "web_search",
                 "code_interpreter_call": "code_interpreter"}
_QUOTE = 2000  # characters of one file_search result kept as its quote
PUBLIC_ATTRIBUTE, ACCESS_PREFIX = "toolcrib_public", "toolcrib_access_"
_PLAIN_GROUP = re.compile(r"[A-Za-z0-9_.:-]{1,40}")


def access_attribute(group: str) -> str:
    """The vector-store file attribute (a key of at most 64 characters) that lets readers in ``group``
    read the file: ``toolcrib_public`` for everyone (``*``); a group name other than plain letters,
    digits and ``_.:-`` (or longer than 40) by a hash of it."""
    if group == "*":
        return PUBLIC_ATTRIBUTE
    name = group if _PLAIN_GROUP.fullmatch(group) else "h" + hashlib.sha256(group.encode()).hexdigest()[:24]
    return ACCESS_PREFIX + name


def access_filter(groups: Sequence[str], configured: Any = None) -> dict[str, Any]:
    """A file_search ``filters`` value that finds only the files readers in ``groups`` may read, combined
    with ``configured`` (the workspace's own filter) by ``and``."""
    readable = {"type": "or", "filters": [{"type": "eq", "key": access_attribute(g), "value": True}
                                          for g in sorted({*groups, "*"})]}
    return readable if configured is None else {"type": "and", "filters": [configured, readable]}


class OpenAIResponsesModel(RemoteModel["AsyncOpenAI"]):
    """A model behind the Responses API, with function tools, parallel calls and bounded retries."""

    profile = ModelProfile(parallel_calls=True, strict_schemas=True)

    def __init__(self, model: str, *, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 api_version: str | None = None, store: bool = False, retry: RetrySettings | None = None,
                 extra_body: Mapping[str, Any] | None = None, hosted_tools: Mapping[str, Any] | None = None) -> None:
        if not model:
            raise ConfigError("the model name is empty; use a spec like 'openai-responses:gpt-4.1-mini'", key="model")
        super().__init__(model, base_url=base_url, api_key=api_key, retry=retry)
        self.name = f"openai-responses:{model}"
        self.store = store
        self.extra_body = dict(extra_body or {})
        self._hosted = hosted_tool_params(hosted_tools or {})
        self.profile = replace(self.profile, hosted_tools=tuple(t["type"] for t in self._hosted))
        if api_version:
            self.env_api_key = "AZURE_OPENAI_API_KEY"
        make, self.sdk_errors, self._headers = async_openai_client(
            base_url=self.base_url, api_key=api_key, timeout_s=self.retry.timeout_s, api_version=api_version)
        self._clients = LoopClients(make)
        # (conversation before the assistant turn, that turn's call ids) -> the response that proposed them
        self._continuable: OrderedDict[tuple[str, tuple[str, ...]], str] = OrderedDict()
        self._lock = threading.Lock()

    def for_reader(self, groups: Sequence[str]) -> OpenAIResponsesModel:
        """This model with its hosted file_search limited to the files readers in ``groups`` may read (see
        the module docstring); itself when no file_search is configured. Shares the client and state."""
        if "file_search" not in self.profile.hosted_tools:
            return self
        scoped = copy.copy(self)
        scoped._hosted = [{**p, "filters": access_filter(groups, p.get("filters"))} if p["type"] == "file_search"
                          else p for p in self._hosted]
        return scoped

    @classmethod
    def from_spec(cls, rest: str, settings: Mapping[str, Any]) -> OpenAIResponsesModel:
        """Build from ``openai-responses:MODEL`` and settings; the environment is read here."""
        model = model_setting(rest, settings, "openai-responses", "gpt-4.1-mini")
        base_url = url_setting(settings, os.environ, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
        api_version = str(settings.get("api_version") or os.environ.get("OPENAI_API_VERSION") or "") or None
        env_keys = ("AZURE_OPENAI_API_KEY", "OPENAI_API_KEY") if api_version else ("OPENAI_API_KEY",)
        api_key = resolve_api_key(settings, base_url, env_names=env_keys)
        extra = mapping_setting(settings, "extra_body", "a mapping of extra request fields")
        hosted = mapping_setting(settings, "hosted_tools", "a table: tool name -> its options, e.g. "
                                 "{file_search = {vector_store_ids = [\"vs_...\"]}, web_search = {}}")
        return cls(model, base_url=base_url, api_key=api_key, api_version=api_version,
                   store=bool_setting(settings, "store", False), extra_body=extra, hosted_tools=hosted,
                   retry=RetrySettings.from_settings(settings))

    # --- the call ---------------------------------------------------------------------------

    def request_body(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                     settings: ModelSettings | None = None) -> dict[str, Any]:
        """The fields sent to ``/responses`` (``extra_body`` aside), for a caller to log or inspect."""
        resolved = self.settings.resolve(settings)
        previous, new = self._continuation(messages)
        body: dict[str, Any] = {"model": self.model, "input": input_items(new), "store": self.store}
        if previous:
            body["previous_response_id"] = previous
        wire = [_wire_tool(t) for t in tools or []]
        if self._hosted and resolved.choice != "none":
            wire += self._hosted
            body["include"] = [_HOSTED_INCLUDE[t] for t in self.profile.hosted_tools]
        if wire:
            body["tools"] = wire
            body["tool_choice"] = resolved.choice
            body["parallel_tool_calls"] = True
        if resolved.max_tokens is not None:
            body["max_output_tokens"] = resolved.max_tokens
        if resolved.temperature is not None:
            body["temperature"] = resolved.temperature
        return body

    async def _send(self, client: AsyncOpenAI, body: dict[str, Any]) -> Response:
        response: Response = await client.responses.create(**body, extra_body=self.extra_body or None,
                                                           extra_headers=self._headers)
        return response

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

    def _completion(self, response: Response, ms: float, messages: list[Message], tools: list[ToolSpec] | None,
                    settings: ModelSettings) -> Completion:
        completion = self._read(response, ms, settings.max_tokens)
        completion = replace(completion, tool_calls=drop_optional_nulls(completion.tool_calls, tools))
        if self.store and completion.tool_calls:
            self._remember(messages, completion.tool_calls, str(response.id))
        return completion

    def _read(self, response: Response, ms: float, max_tokens: int | None) -> Completion:
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
        hosted: list[HostedCall] = []
        cited: list[HostedSource] = []
        for item in getattr(response, "output", None) or []:
            kind = getattr(item, "type", None)
            if kind == "message":
                for part in getattr(item, "content", None) or []:
                    if getattr(part, "type", None) == "output_text":
                        text, sources = annotated_text(str(part.text), getattr(part, "annotations", None) or [])
                        texts.append(text)
                        cited += sources
                    elif getattr(part, "type", None) == "refusal":
                        texts.append(str(part.refusal))
            elif kind == "function_call":
                calls.append(tool_call_from_json(getattr(item, "call_id", None), str(getattr(item, "name", "")),
                                                 getattr(item, "arguments", None)))
            else:
                call = hosted_call(item)
                if call is not None:
                    hosted.append(call)
        usage = getattr(response, "usage", None)
        return Completion(
            text="".join(texts),
            tool_calls=tuple(calls),
            hosted=tuple(hosted),
            cited=tuple(dict.fromkeys(cited)),
            tokens_in=count(getattr(usage, "input_tokens", 0)),
            tokens_out=count(getattr(usage, "output_tokens", 0)),
            ms=ms,
            model=str(getattr(response, "model", None) or self.model),
        )


# --- hosted tools ----------------------------------------------------------------------------------


def hosted_tool_params(config: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``hosted_tools`` setting as Responses tool params, checked; a mistake names the setting."""
    params: list[dict[str, Any]] = []
    for name, options in config.items():
        key = f"hosted_tools.{name}"
        if name not in _HOSTED_OPTIONS:
            raise ConfigError(f"unknown hosted tool '{name}'; the Responses API hosts "
                              f"{', '.join(sorted(_HOSTED_OPTIONS))}", key=key)
        if options is True:
            options = {}
        if not isinstance(options, Mapping):
            raise ConfigError("expected a table of the tool's options ({} for none)", key=key)
        unknown = sorted(set(options) - _HOSTED_OPTIONS[name])
        if unknown:
            raise ConfigError(f"unknown option(s) {', '.join(unknown)}; {name} takes "
                              f"{', '.join(sorted(_HOSTED_OPTIONS[name]))}", key=key)
        param: dict[str, Any] = {"type": name, **options}
        if name == "file_search":
            ids = options.get("vector_store_ids")
            if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and i for i in ids):
                raise ConfigError("file_search needs vector_store_ids, a list of vector store ids (make one with "
                                  "`toolcrib ingest --to openai-vector-store NAME`)", key=f"{key}.vector_store_ids")
        elif name == "code_interpreter":
            param.setdefault("container", {"type": "auto"})
        params.append(param)
    return params


def hosted_call(item: Any) -> HostedCall | None:
    """A hosted tool's output item (file_search_call, web_search_call, code_interpreter_call) as a
    HostedCall with the sources it returned; None for any other item (reasoning, ...)."""
    kind = getattr(item, "type", None)
    tool = _HOSTED_ITEMS.get(str(kind))
    if tool is None:
        log.debug("Responses output item of type %r not read", kind)
        return None
    call_id, status = str(getattr(item, "id", "") or ""), str(getattr(item, "status", "") or "")
    if tool == "file_search":
        sources = tuple(HostedSource("file", str(r.file_id), str(r.filename or ""), str(r.text or "")[:_QUOTE])
                        for r in getattr(item, "results", None) or [] if getattr(r, "file_id", None))
        results = [{"file_id": s.ref, "filename": s.title, "text": s.text} for s in sources]
        return HostedCall(call_id, tool, status, {"queries": list(getattr(item, "queries", None) or [])}, sources,
                          output="" if not results else f"{len(results)} result(s)")
    if tool == "web_search":
        action = getattr(item, "action", None)
        arguments: dict[str, Any] = {"action": str(getattr(action, "type", "") or "")}
        for field_name in ("query", "queries", "url", "pattern"):
            value = getattr(action, field_name, None)
            if value:
                arguments[field_name] = value
        # the pages a search consulted (include web_search_call.action.sources): URLs only, no title
        # or text, so they are recorded, and become citable through the reply's url_citation annotations
        urls = [str(s.url) for s in getattr(action, "sources", None) or [] if getattr(s, "url", None)]
        return HostedCall(call_id, tool, status, arguments, (), output="\n".join(urls))
    logs = [str(o.logs) if getattr(o, "type", None) == "logs" else f"[image] {getattr(o, 'url', '')}"
            for o in getattr(item, "outputs", None) or []]
    return HostedCall(call_id, tool, status, {"code": str(getattr(item, "code", None) or "")}, (),
                      output="\n".join(logs)[:4000])


def annotated_text(text: str, annotations: list[Any]) -> tuple[str, list[HostedSource]]:
    """``text`` with an ``[id]`` marker where each ``file_citation`` / ``url_citation`` annotation points,
    and the sources they name. A url_citation's text is the span of the reply the provider attributed
    to the page (toolcrib never sees the page itself); a file_citation carries no text of its own."""
    marks: list[tuple[int, HostedSource]] = []
    for note in annotations:
        kind = getattr(note, "type", None)
        if kind == "file_citation" and getattr(note, "file_id", None):
            source = HostedSource("file", str(note.file_id), str(getattr(note, "filename", "") or ""))
            marks.append((int(getattr(note, "index", len(text)) or 0), source))
        elif kind == "url_citation" and getattr(note, "url", None):
            start, end = int(note.start_index or 0), int(note.end_index or 0)
            source = HostedSource("web", str(note.url), str(getattr(note, "title", "") or ""), text[start:end])
            marks.append((end, source))
    out = text
    for at, source in sorted(marks, key=lambda m: m[0], reverse=True):
        at = max(0, min(at, len(out)))
        marker = f"[{source.citation}]"
        if out[at:at + len(marker)] == marker or out[max(0, at - len(marker) - 1):at].strip() == marker:
            continue  # the same source cited twice at one place
        before = " " if at and not out[at - 1].isspace() else ""
        out = out[:at] + before + marker + out[at:]
    return out, [s for _, s in marks]


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
            "parameters": openai_strict(spec.parameters) if spec.strict else spec.parameters,
            "strict": spec.strict}


def _fingerprint(messages: list[Message]) -> str:
    return hashlib.sha256(repr(messages).encode()).hexdigest()

"""Tool calls written as text by open models, recovered into ``ToolCall`` proposals.

Servers without a tool parser for a model (or a model that ignores its template) return the call
inside the message text. Recognised forms, tried in this order:

- Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one or several;
- Mistral: ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`` and the newer
  ``[TOOL_CALLS]name{...}`` / ``[TOOL_CALLS]name[ARGS]{...}``;
- Llama 3: ``<|python_tag|>{"name": ..., "parameters": {...}}`` (several separated by ``;``);
- JSON in a fenced block or bare in the text: an object (or array of objects) that has a ``name``
  and ``arguments`` or ``parameters``.

Malformed JSON inside a recognised wrapper becomes a ``ToolCall`` with ``parse_error`` set (the
gate turns it into a controlled error for the model); it never raises. Prose with no call in it
comes back unchanged with no calls.
"""

from __future__ import annotations

import ast
import json
import re
import uuid
from typing import Any

from toolcrib.models.base import ToolCall

__all__ = ["new_call_id", "parse_text_tool_calls"]

_HERMES = re.compile(r"<tool_call>(.*?)(?:</tool_call>|\Z)", re.DOTALL)
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_NAMED = re.compile(r"\s*([A-Za-z_][\w.\-]*)\s*(?:\[CALL_ID\]\s*[\w\-]+\s*)?(?:\[ARGS\])?\s*(?=[{\[])")
_PYTHON_TAG = "<|python_tag|>"
_FENCE = re.compile(r"```(?:json|JSON|tool_call|tool_code)?[ \t]*\n(.*?)```", re.DOTALL)
_NAME_IN_TEXT = re.compile(r"""["']name["']\s*:\s*["']([^"']+)["']""")
_END_TOKENS = ("<|eom_id|>", "<|eot_id|>", "<|im_end|>", "<|end|>", "</s>")
_MAX_CANDIDATES = 256  # bare-JSON scan: starting points tried, to bound work on long texts
_decoder = json.JSONDecoder()


def new_call_id() -> str:
    """A fresh id for a call whose wire format carried none."""
    return f"call_{uuid.uuid4().hex[:24]}"


def parse_text_tool_calls(text: str) -> tuple[str, list[ToolCall]]:
    """Return (text left once the calls are removed, calls found), for the formats above."""
    if not text:
        return text, []
    for finder in (_hermes, _mistral, _llama_python_tag, _fenced, _bare):
        found = finder(text)
        if found is not None:
            remaining, calls = found
            if calls:
                return _tidy(remaining), calls
    return text, []


# --- the formats -------------------------------------------------------------------------------


def _hermes(text: str) -> tuple[str, list[ToolCall]] | None:
    if "<tool_call>" not in text:
        return None
    calls: list[ToolCall] = []
    for match in _HERMES.finditer(text):
        calls.extend(_calls_from_payload(_strip_fence(match.group(1)), wrapped=True))
    return _HERMES.sub("", text), calls


def _mistral(text: str) -> tuple[str, list[ToolCall]] | None:
    if _MISTRAL not in text:
        return None
    head, *segments = text.split(_MISTRAL)
    calls: list[ToolCall] = []
    tail: list[str] = []
    for segment in segments:
        named = _MISTRAL_NAMED.match(segment)
        if named and not segment.lstrip().startswith(("[", "{")):
            # [TOOL_CALLS]name{...} (v11) or [TOOL_CALLS]name[ARGS]{...}
            value, end, error = _decode_prefix(segment, named.end())
            if error is None and isinstance(value, dict):
                calls.append(_call(named.group(1), value, segment[named.end():end]))
            else:
                raw = segment[named.end():].strip()
                calls.append(_broken(named.group(1), raw, error or "arguments are not a JSON object"))
                end = len(segment)
            tail.append(segment[end:])
            continue
        start = len(segment) - len(segment.lstrip())
        value, end, error = _decode_prefix(segment, start)
        if error is None:
            calls.extend(_calls_from_value(value, segment[start:end], wrapped=True))
            tail.append(segment[end:])
        else:
            calls.extend(_calls_from_payload(segment.strip(), wrapped=True))
    return head + "".join(tail), calls


def _llama_python_tag(text: str) -> tuple[str, list[ToolCall]] | None:
    if _PYTHON_TAG not in text:
        return None
    head, _, body = text.partition(_PYTHON_TAG)
    for token in _END_TOKENS:
        body = body.replace(token, "")
    calls: list[ToolCall] = []
    pos = 0
    body = body.strip()
    while pos < len(body):
        value, end, error = _decode_prefix(body, pos)
        if error is not None:
            calls.extend(_calls_from_payload(body[pos:].strip(), wrapped=True))
            break
        calls.extend(_calls_from_value(value, body[pos:end], wrapped=True))
        pos = end
        while pos < len(body) and body[pos] in " \t\r\n;":
            pos += 1
    return head, calls


def _fenced(text: str) -> tuple[str, list[ToolCall]] | None:
    if "```" not in text:
        return None
    calls: list[ToolCall] = []
    spans: list[tuple[int, int]] = []
    for match in _FENCE.finditer(text):
        body = match.group(1).strip()
        if not body.startswith(("{", "[")):
            continue
        found = _calls_from_payload(body, wrapped=_looks_like_call(body))
        if found:
            calls.extend(found)
            spans.append(match.span())
    return _cut(text, spans), calls


def _bare(text: str) -> tuple[str, list[ToolCall]] | None:
    stripped = text.strip()
    calls: list[ToolCall] = []
    spans: list[tuple[int, int]] = []
    pos = 0
    tried = 0
    while tried < _MAX_CANDIDATES:
        starts = [i for i in (text.find("{", pos), text.find("[", pos)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        tried += 1
        value, end, error = _decode_prefix(text, start)
        if error is not None:
            pos = start + 1
            continue
        found = _calls_from_value(value, text[start:end], wrapped=False)
        if found:
            calls.extend(found)
            spans.append((start, end))
        pos = end
    if not calls and stripped.startswith("{") and _looks_like_call(stripped):
        # One call-shaped object that does not parse: report it rather than show it as prose.
        return "", _calls_from_payload(stripped, wrapped=True)
    return _cut(text, spans), calls


# --- turning JSON into calls -------------------------------------------------------------------


def _calls_from_payload(payload: str, *, wrapped: bool) -> list[ToolCall]:
    """Calls from one JSON (or Python-literal) text; inside a wrapper, a broken payload is reported."""
    value, error = _loads(payload)
    if error is None:
        return _calls_from_value(value, payload, wrapped=wrapped)
    if not wrapped:
        return []
    return [_broken(_guess_name(payload), payload, error)]


def _calls_from_value(value: Any, raw: str, *, wrapped: bool) -> list[ToolCall]:
    items = value if isinstance(value, list) else [value]
    if not items or not all(isinstance(item, dict) and _call_name(item) for item in items):
        if wrapped and isinstance(value, (dict, list)):
            return [_broken(_guess_name(raw), raw, "a tool call needs a 'name' and 'arguments'")]
        return []
    if not wrapped and not all(_has_arguments(item) for item in items):
        return []  # bare JSON with a "name" but no arguments is data, not a call
    return [_from_object(item) for item in items]


def _from_object(item: dict[str, Any]) -> ToolCall:
    if isinstance(item.get("function"), dict):  # {"type": "function", "function": {...}}
        item = item["function"]
    name = str(item.get("name", ""))
    args = item.get("arguments", item.get("parameters", {}))
    if args is None:
        args = {}
    if isinstance(args, str):
        raw = args
        parsed, error = _loads(args) if args.strip() else ({}, None)
        if error is not None:
            return _broken(name, raw, error)
        args = parsed
    else:
        raw = json.dumps(args, ensure_ascii=False)
    if not isinstance(args, dict):
        return _broken(name, raw, f"arguments must be a JSON object, got {type(args).__name__}")
    return ToolCall(id=str(item.get("id") or new_call_id()), name=name, arguments=args, raw_arguments=raw)


def _call(name: str, args: dict[str, Any], raw: str) -> ToolCall:
    return ToolCall(id=new_call_id(), name=name, arguments=args, raw_arguments=raw)


def _broken(name: str, raw: str, error: str) -> ToolCall:
    return ToolCall(id=new_call_id(), name=name, arguments={}, raw_arguments=raw, parse_error=error)


def _call_name(item: dict[str, Any]) -> str | None:
    if isinstance(item.get("function"), dict):
        item = item["function"]
    name = item.get("name")
    return name if isinstance(name, str) and name else None


def _has_arguments(item: dict[str, Any]) -> bool:
    if isinstance(item.get("function"), dict):
        item = item["function"]
    return "arguments" in item or "parameters" in item


# --- small parsing pieces ----------------------------------------------------------------------


def _loads(payload: str) -> tuple[Any, str | None]:
    """JSON, else a Python literal (Hermes models sometimes write dicts with single quotes)."""
    try:
        return json.loads(payload), None
    except json.JSONDecodeError as exc:
        json_error = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    if len(payload) <= 100_000 and payload.lstrip().startswith(("{", "[")):
        try:
            return ast.literal_eval(payload), None
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            pass
    return None, json_error


def _decode_prefix(text: str, start: int) -> tuple[Any, int, str | None]:
    """Decode one JSON value starting at ``start``: (value, end index, error or None)."""
    try:
        value, end = _decoder.raw_decode(text, start)
    except json.JSONDecodeError as exc:
        return None, start, f"invalid JSON: {exc.msg}"
    except RecursionError:
        return None, start, "invalid JSON: nested too deeply"
    return value, end, None


def _strip_fence(body: str) -> str:
    """The inside of a ```json fence a model sometimes puts inside <tool_call> tags."""
    body = body.strip()
    if body.startswith("```"):
        inner = body.split("\n", 1)[1] if "\n" in body else ""
        return inner.rsplit("```", 1)[0].strip()
    return body


def _looks_like_call(text: str) -> bool:
    return bool(re.search(r"""["']name["']\s*:""", text)) and bool(
        re.search(r"""["'](?:arguments|parameters)["']\s*:""", text)
    )


def _guess_name(raw: str) -> str:
    match = _NAME_IN_TEXT.search(raw)
    return match.group(1) if match else ""


def _cut(text: str, spans: list[tuple[int, int]]) -> str:
    out: list[str] = []
    pos = 0
    for start, end in spans:
        out.append(text[pos:start])
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _tidy(text: str) -> str:
    for token in _END_TOKENS:
        text = text.replace(token, "")
    return text.strip(" \t\r\n;")  # ";" separates Llama-3 calls

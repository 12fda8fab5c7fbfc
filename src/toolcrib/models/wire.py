"""Pieces of the providers' wire formats that more than one backend shares: a tool call read from the
arguments a provider sent, OpenAI's strict form of a schema (and the nulls it makes the model send, dropped
again), and a call's arguments as sent back in a conversation."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from toolcrib.models.base import ToolCall, ToolSpec
from toolcrib.models.textcalls import new_call_id

__all__ = ["drop_optional_nulls", "openai_strict", "tool_call_from_json", "wire_arguments"]


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

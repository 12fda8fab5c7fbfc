"""The embedded model's decision: a JSON list of calls (each ``oneOf`` one branch per offered tool) or of
one answer, the llama.cpp grammar it is written under, and reading it back into ``ToolCall`` proposals
(output cut off at the token limit included). The gate still validates the arguments against the real
schema; the runner decides how many of the calls run."""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from toolcrib.errors import ConfigError
from toolcrib.models.base import ToolCall, ToolSpec

__all__ = ["MAX_CALLS", "decision_schema_text", "grammar", "inline_refs", "parse_decision", "reply_grammar"]

MAX_CALLS = 8  # calls in one decision; the runner decides how many of them run
# Keywords llama.cpp's JSON-Schema-to-grammar converter understands; anything else is dropped from
# the copy used for the grammar (the gate validates arguments against the real schema afterwards).
_GRAMMAR_KEYWORDS = frozenset({
    "type", "properties", "required", "additionalProperties", "items", "prefixItems", "minItems",
    "maxItems", "enum", "const", "oneOf", "anyOf", "allOf", "minLength", "maxLength", "pattern", "format",
})
_GRAMMAR_FORMATS = frozenset({"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"})


# --- grammar --------------------------------------------------------------------------------------


def _decision_schema(tools: list[ToolSpec], required: bool, answer_text: bool = True) -> dict[str, Any]:
    """A call (``oneOf`` one branch per tool: its name as a const, its grammar arguments) or an answer,
    each a named definition (``call``, ``answer``) so that ``grammar`` can repeat calls. Without
    ``answer_text`` the answer is the empty string: the model only says it calls nothing more."""
    calls: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {"tool": {"const": tool.name}, "arguments": _grammar_arguments(tool)},
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for tool in tools
    ]
    text = {"type": "string"} if answer_text else {"const": ""}
    answer = {"type": "object", "properties": {"answer": text}, "required": ["answer"],
              "additionalProperties": False}
    choices = [{"$ref": "#/$defs/call"}] + ([] if required else [{"$ref": "#/$defs/answer"}])
    return {"$defs": {"call": {"oneOf": calls}, "answer": answer}, "oneOf": choices}


def decision_schema_text(tools: list[ToolSpec], required: bool, answer_text: bool = True) -> str:
    return json.dumps(_decision_schema(tools, required, answer_text))  # key order matters: "tool" first


def _grammar_arguments(tool: ToolSpec) -> dict[str, Any]:
    """The tool's arguments schema as the grammar takes it. A parameter the converter cannot express
    (``"items": {}``, say) accepts any JSON value instead, so one odd parameter does not take the
    local model away from every tool: the gate still validates it against the real schema."""
    schema: dict[str, Any] = _sanitize(inline_refs(tool.parameters))
    for name, pattern in tool.grammar:  # written under the tool's own pattern, where the converter takes it
        if name in schema.get("properties", {}) and _pattern_supported(pattern):
            schema["properties"][name] = {"type": "string", "pattern": pattern}
    if _convertible(json.dumps(schema)):
        return schema
    properties: dict[str, Any] = schema.get("properties", {})
    for name, sub in properties.items():
        if not _convertible(json.dumps(sub)):
            properties[name] = {}
    if not _convertible(json.dumps(schema)):
        raise ConfigError(f"tool '{tool.name}' cannot be offered to the local model: its arguments schema cannot "
                          "be turned into a grammar, even with each parameter left open; simplify the schema "
                          "or leave the tool out", key="tools")
    return schema


@lru_cache(maxsize=1024)
def _convertible(schema_text: str) -> bool:
    """Whether llama.cpp's JSON-Schema-to-grammar converter takes this schema (it asserts on what it cannot)."""
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        json_schema_to_gbnf(schema_text)
    except Exception:
        return False
    return True


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """Replace local ``$ref``s (pydantic puts enums and nested models in ``$defs``) by what they name.

    The tool's schema is nested inside the decision schema, where its ``#/$defs/...`` would not
    resolve. Recursive definitions are cut at a fixed depth (any JSON value is allowed there).
    """
    defs: dict[str, Any] = {**schema.get("definitions", {}), **schema.get("$defs", {})}

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [walk(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = defs.get(ref.rsplit("/", 1)[-1]) if ref.startswith(("#/$defs/", "#/definitions/")) else None
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            if target is None or depth > 8:
                return walk(siblings, depth)
            return walk({**target, **siblings}, depth + 1)
        return {k: walk(v, depth) for k, v in node.items() if k not in ("$defs", "definitions")}

    result: dict[str, Any] = walk(schema, 0)
    return result


def _sanitize(schema: Any) -> Any:
    """A copy of a JSON Schema with only what llama.cpp's grammar converter supports."""
    if isinstance(schema, list):
        return [_sanitize(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in _GRAMMAR_KEYWORDS:
            continue
        if key == "format" and value not in _GRAMMAR_FORMATS:
            continue
        if key == "pattern" and not _pattern_supported(value):
            continue
        if key == "properties":
            out[key] = {name: _sanitize(sub) for name, sub in value.items()}
        elif key in ("enum", "const", "required", "type"):
            out[key] = value
        else:
            out[key] = _sanitize(value)
    if out.get("type") == "integer" and "enum" not in out and (choices := _integer_range(schema)) is not None:
        out["enum"] = choices  # the converter ignores bounds: "top_k": 100 was proposed for at most 20
    if out.get("type") == "object" and "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if out.get("items") is True or out.get("items") == {}:  # any items: the converter wants them left out
        del out["items"]
    return out


_MAX_CHOICES = 100


def _integer_range(schema: dict[str, Any]) -> list[int] | None:
    """Every value an integer schema's bounds allow, when both are set and there are few of them."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(schema.get("exclusiveMinimum"), (int, float)):
        low = math.floor(schema["exclusiveMinimum"]) + 1
    if isinstance(schema.get("exclusiveMaximum"), (int, float)):
        high = math.ceil(schema["exclusiveMaximum"]) - 1
    if not isinstance(low, (int, float)) or not isinstance(high, (int, float)) or not 0 <= high - low < _MAX_CHOICES:
        return None
    return list(range(math.ceil(low), math.floor(high) + 1))


def _pattern_supported(pattern: str) -> bool:
    """Whether llama.cpp's converter accepts this regex (it needs ^...$ and a limited syntax)."""
    return (isinstance(pattern, str) and pattern.startswith("^") and pattern.endswith("$")
            and _convertible(json.dumps({"type": "string", "pattern": pattern})))


@lru_cache(maxsize=64)
def grammar(schema_text: str) -> Any:
    """The llama.cpp grammar for a decision schema, built once per tool set.

    Built here rather than through ``response_format`` because llama-cpp-python silently falls back
    to an unconstrained JSON grammar when conversion fails, which would let the model invent tools.
    """
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    try:
        rules = json_schema_to_gbnf(schema_text)
        # a list: of one answer, or of calls. The first choice is still "tool" or "answer" (written as
        # an alternative to a list of calls, the answer won too often: the model then answered business
        # questions with invented data); after each call the model closes the list or writes another
        # call (written one per line instead, it never wrote a second: 0 of 4 BFCL parallel entries).
        answers = {"$ref": "#/$defs/answer"} in json.loads(schema_text)["oneOf"]  # not when a call is required
        calls = f'call ("," space call){{0,{MAX_CALLS - 1}}}'
        root = f'root ::= "[" space ({calls}{" | answer" if answers else ""}) "]" space'

        text = "\n".join(line for line in rules.splitlines() if not line.startswith("root ::="))
        return LlamaGrammar.from_string(f"{root}\n{text}", verbose=False)
    except Exception as exc:
        raise ConfigError(
            f"a tool's parameter schema cannot be turned into a grammar for the local model: {exc}",
            key="tools",
        ) from exc


@lru_cache(maxsize=64)
def reply_grammar(schema_text: str) -> Any:
    """The llama.cpp grammar of a reply written under ``schema_text`` (a JSON Schema), built once per schema."""
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    try:
        return LlamaGrammar.from_string(json_schema_to_gbnf(schema_text), verbose=False)
    except Exception as exc:
        raise ConfigError(f"a reply schema cannot be turned into a grammar for the local model: {exc}",
                          key="model") from exc


# --- parsing --------------------------------------------------------------------------------------

_TOOL_PREFIX = re.compile(r'^\s*\{\s*"tool"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ANSWER_PREFIX = re.compile(r'^\s*\{\s*"answer"\s*:\s*"')
_call_counter = 0
_counter_lock = threading.Lock()


def _next_call_id() -> str:
    global _call_counter
    with _counter_lock:
        _call_counter += 1
        return f"call_{_call_counter}"


def parse_decision(content: str) -> tuple[str, tuple[ToolCall, ...]]:
    """Turn the grammar-constrained JSON list into answer text or ToolCalls (truncated output
    included: of calls cut off, the complete ones and the cut one, marked as malformed)."""
    body = content.strip().removeprefix("[").lstrip()
    if _TOOL_PREFIX.match(body):
        return "", _parse_calls(body)
    try:
        decision, _ = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError:
        if match := _ANSWER_PREFIX.match(body):
            return _partial_string(body[match.end():]), ()
        return content.strip(), ()
    if isinstance(decision, dict) and isinstance(decision.get("answer"), str):
        return decision["answer"].strip(), ()
    return content.strip(), ()


def _parse_calls(body: str) -> tuple[ToolCall, ...]:
    """The calls of a JSON list, read one at a time (``body`` follows the opening bracket)."""
    decoder = json.JSONDecoder()
    calls: list[ToolCall] = []
    position = 0
    while len(calls) < MAX_CALLS:
        position = len(body) - len(body[position:].lstrip(" \n\t,"))
        if position >= len(body) or body[position] == "]":
            break
        try:
            item, position = decoder.raw_decode(body, position)
        except json.JSONDecodeError as exc:
            if match := _TOOL_PREFIX.match(body[position:]):
                calls.append(_cut_call(body[position:], match, exc))
            break
        if isinstance(item, dict) and isinstance(item.get("tool"), str):
            calls.append(_call(item))
    return tuple(calls)


def _call(decision: Mapping[str, Any]) -> ToolCall:
    arguments = decision.get("arguments")
    if isinstance(arguments, dict):
        return ToolCall(id=_next_call_id(), name=decision["tool"], arguments=arguments,
                        raw_arguments=json.dumps(arguments))
    return ToolCall(id=_next_call_id(), name=decision["tool"], raw_arguments=json.dumps(arguments),
                    parse_error="the arguments are not a JSON object")


def _cut_call(content: str, match: re.Match[str], exc: json.JSONDecodeError) -> ToolCall:
    """A call whose JSON was cut off (the token limit) or malformed: its name, and why it cannot run."""
    return ToolCall(id=_next_call_id(), name=json.loads(f'"{match.group(1)}"'), arguments={},
                    raw_arguments=content[match.end():],
                    parse_error=f"the arguments were cut off or malformed: {exc.msg}")


def _partial_string(body: str) -> str:
    """Decode the text of a JSON string cut off before its closing quote."""
    for end in range(len(body), max(len(body) - 8, 0), -1):
        try:
            return str(json.loads('"' + body[:end].rstrip('"}]\n ') + '"')).strip()
        except json.JSONDecodeError:
            continue
    return body.strip()

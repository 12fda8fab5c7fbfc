"""Tools declared by a JSON Schema: MCP tools, OpenAPI operations, BFCL and AgentDojo specs.

The schema is translated once, at registration, into a pydantic-core validator that checks the
model's arguments strictly and as JSON: no ``"5"`` for 5, no ``1`` for true, no property the schema
does not declare. Keywords that constrain a value but that the translation does not cover (``not``,
``if``, ``patternProperties`` ...) are refused at registration, never silently ignored; annotations
(``title``, ``description``, ``format``, ``default``, ``examples``) are shown to the model only.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, Unpack

from pydantic_core import CoreSchema, PydanticCustomError, SchemaError, SchemaValidator
from pydantic_core import core_schema as cs

from toolcrib.errors import ConfigError, InvalidArguments
from toolcrib.policy.canonical import canonical_json
from toolcrib.tools.tool import Tool, ToolOptions, assemble_tool

_UNSUPPORTED = frozenset({
    "not", "if", "then", "else", "contains", "minContains", "maxContains", "patternProperties", "propertyNames",
    "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties", "unevaluatedItems",
    "$dynamicRef", "$recursiveRef",
})
_OBJECT_KEYWORDS = ("properties", "required", "additionalProperties", "minProperties", "maxProperties")
_ARRAY_KEYWORDS = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")
_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def json_schema_tool(
    name: str,
    description: str,
    parameters: Mapping[str, Any],
    fn: Callable[..., Any],
    *,
    context_param: str | None = None,
    **options: Unpack[ToolOptions],
) -> Tool:
    """A ``Tool`` whose arguments are described by ``parameters``, the JSON Schema of one object.

    ``fn`` (sync or async) is called with the validated arguments as keyword arguments, exactly the
    ones the model sent (schema defaults are not filled in): ``fn(**arguments)``. Names that are not
    Python identifiers (``from``, ``in``, ``max-results``) reach a ``**kwargs`` parameter.
    ``context_param`` names one more keyword argument that receives the call's ``ToolContext``.

    Objects that declare ``properties`` (and the arguments object itself) accept no other
    properties unless they say so with ``additionalProperties``; the schema offered to the model
    says so too. Every ``prefixItems`` position is required. Raises ``ConfigError`` naming the tool
    and parameter for a schema that cannot be checked.

    ```py
    from toolcrib import json_schema_tool

    schema = {
        "type": "object",
        "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
        "required": ["from", "to"],
    }
    flights = json_schema_tool("search_flights", "Find flights between two airports.", schema,
                               lambda **arguments: {"found": False, "asked": arguments})
    print(flights.name, flights.effect.value, flights.parameters["additionalProperties"])
    #> search_flights read False
    ```
    """
    offered = copy.deepcopy(dict(parameters))
    if "$ref" in offered:  # {"$ref": "#/definitions/Args", "definitions": {...}}: the object itself, inline
        target = _resolve(offered, offered.pop("$ref"))
        offered = {**target, **offered} if isinstance(target, dict) else offered
    if offered.setdefault("type", "object") != "object":
        raise ConfigError(f"tool '{name}': the arguments schema must describe an object, not {offered['type']!r}",
                          key="tools")
    _close(offered)
    offered.setdefault("additionalProperties", False)
    offered.setdefault("required", [])
    if context_param is not None and context_param in offered.get("properties", {}):
        raise ConfigError(f"tool '{name}': context_param '{context_param}' is also a parameter", key="tools")
    try:
        validator = SchemaValidator(_Translation(name, offered).build())
    except SchemaError as exc:
        raise ConfigError(f"tool '{name}': its arguments schema cannot be compiled: {exc}", key="tools") from None
    return assemble_tool(name, description or name, fn, offered, validator, context_param=context_param, **options)


def _close(schema: Any, *, closes: bool = True) -> None:
    """In place: an object schema that declares ``properties`` admits no others unless it says so.

    The members of an ``allOf`` stay open: each describes only part of the object.
    """
    if not isinstance(schema, dict):
        return
    for key in ("properties", "$defs", "definitions"):
        if isinstance(schema.get(key), dict):
            for sub in schema[key].values():
                _close(sub)
    for key in ("items", "additionalProperties"):
        _close(schema.get(key))
    for key in ("prefixItems", "anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for sub in schema[key]:
                _close(sub, closes=key != "allOf")
    if closes and "properties" in schema:
        schema.setdefault("additionalProperties", False)


class _Translation:
    """One tool's arguments schema as a pydantic-core schema. Local ``$ref``s (recursive ones
    included) become core-schema definitions."""

    def __init__(self, tool: str, root: dict[str, Any]) -> None:
        self.tool = tool
        self.root = root
        self.definitions: dict[str, CoreSchema | None] = {}  # None while a definition is being translated

    def build(self) -> CoreSchema:
        schema = self.node(self.root, "")
        done = [d for d in self.definitions.values() if d is not None]
        return cs.definitions_schema(schema, done) if done else schema

    def refuse(self, path: str, reason: str) -> ConfigError:
        where = f"parameter '{path}'" if path else "the arguments schema"
        return ConfigError(f"tool '{self.tool}': {where} {reason}; fix its JSON Schema or leave the tool out",
                           key="tools")

    def node(self, schema: Any, path: str) -> CoreSchema:
        if schema is True:
            return cs.any_schema()
        if not isinstance(schema, Mapping):
            raise self.refuse(path, f"has the schema {schema!r}, which accepts no value" if schema is False
                              else f"is not a JSON Schema object: {schema!r}")
        unsupported = sorted(_UNSUPPORTED & schema.keys())
        if unsupported:
            raise self.refuse(path, f"uses {', '.join(unsupported)}, which toolcrib cannot check")
        parts: list[CoreSchema] = []
        if "$ref" in schema:
            parts.append(self.ref(schema["$ref"], path))
        kinds = self.kinds(schema, path)
        if kinds:
            parts.append(_union([(self.typed(schema, kind, path), kind) for kind in kinds]))
        for key in ("anyOf", "oneOf"):  # oneOf is checked as anyOf: exclusivity is not enforced
            if key in schema:
                parts.append(_union([(self.node(sub, path), f"option {i + 1}") for i, sub in enumerate(schema[key])]))
        parts += [self.node(sub, path) for sub in schema.get("allOf", ())]
        core = parts[0] if len(parts) == 1 else cs.chain_schema(parts) if parts else cs.any_schema()
        if "enum" in schema or "const" in schema:
            core = cs.no_info_after_validator_function(
                self.one_of(schema["enum"] if "enum" in schema else [schema["const"]], path), core)
        return cs.nullable_schema(core) if schema.get("nullable") is True else core  # OpenAPI 3.0

    def kinds(self, schema: Mapping[str, Any], path: str) -> list[str]:
        kind = schema.get("type")
        if kind is None:  # keywords that only make sense for one type stand for it
            return ["object"] if any(k in schema for k in _OBJECT_KEYWORDS) else \
                ["array"] if any(k in schema for k in _ARRAY_KEYWORDS) else []
        kinds = kind if isinstance(kind, list) else [kind]
        unknown = [k for k in kinds if k not in _TYPES]
        if unknown:
            raise self.refuse(path, f"has the unknown type {unknown[0]!r}")
        return kinds

    def typed(self, schema: Mapping[str, Any], kind: str, path: str) -> CoreSchema:
        if kind == "object":
            return self.object(schema, path)
        if kind == "array":
            return self.array(schema, path)
        if kind == "string":
            return cs.str_schema(strict=True, min_length=schema.get("minLength"), max_length=schema.get("maxLength"),
                                 pattern=self.pattern(schema.get("pattern"), path), regex_engine="python-re")
        if kind == "integer":
            return cs.int_schema(strict=True, **self.bounds(schema, integer=True))
        if kind == "number":  # an integer stays an int: the callable gets the JSON value as sent
            return cs.no_info_wrap_validator_function(
                _keep_int, cs.float_schema(strict=True, allow_inf_nan=False, **self.bounds(schema)))
        if kind == "boolean":
            return cs.bool_schema(strict=True)
        return cs.none_schema()

    def object(self, schema: Mapping[str, Any], path: str) -> CoreSchema:
        properties: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required") or ())
        fields = {name: cs.typed_dict_field(self.node(sub, _join(path, name)), required=name in required)
                  for name, sub in properties.items()}
        fields.update({name: cs.typed_dict_field(cs.any_schema()) for name in required - properties.keys()})
        extra = schema.get("additionalProperties", True)
        core: CoreSchema = cs.typed_dict_schema(
            fields, strict=True, extra_behavior="forbid" if extra is False else "allow",
            extras_schema=None if extra is True or extra is False else self.node(extra, _join(path, "*")))
        return _sized(core, schema.get("minProperties"), schema.get("maxProperties"), "properties")

    def array(self, schema: Mapping[str, Any], path: str) -> CoreSchema:
        items = schema.get("items", True)
        prefix = schema.get("prefixItems")
        core: CoreSchema
        if prefix is not None:
            slots = [self.node(sub, f"{path}[{i}]") for i, sub in enumerate(prefix)]
            rest = [] if items is False else [self.node(items, f"{path}[]")]
            core = cs.no_info_after_validator_function(list, cs.tuple_schema(
                slots + rest, variadic_item_index=len(slots) if rest else None, strict=True))
        elif items is False:
            core = cs.list_schema(strict=True, max_length=0)
        else:
            core = cs.list_schema(None if items is True else self.node(items, f"{path}[]"), strict=True)
        if schema.get("uniqueItems") is True:
            core = cs.no_info_after_validator_function(_unique, core)
        return _sized(core, schema.get("minItems"), schema.get("maxItems"), "items")

    def ref(self, ref: Any, path: str) -> CoreSchema:
        """A local reference: ``#``, ``#/$defs/NAME`` or ``#/definitions/NAME``."""
        target = _resolve(self.root, ref)
        if target is None:
            raise self.refuse(path, f"refers to {ref!r}, which is not a definition in this schema")
        if ref not in self.definitions:
            self.definitions[ref] = None
            self.definitions[ref] = cs.chain_schema([self.node(target, path)], ref=ref)
        return cs.definition_reference_schema(ref)

    def one_of(self, allowed: Any, path: str) -> Callable[[Any], Any]:
        if not isinstance(allowed, list) or not allowed:
            raise self.refuse(path, "has an enum that is not a non-empty list")
        try:
            keys = {canonical_json(v) for v in allowed}
        except (TypeError, InvalidArguments):
            raise self.refuse(path, f"has an enum value that is not JSON: {allowed!r}") from None
        shown = [json.dumps(v) for v in allowed[:12]] + (["..."] if len(allowed) > 12 else [])
        expected = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"

        def check(value: Any) -> Any:
            if canonical_json(value) not in keys:  # JSON equality: 1 == 1.0, true != 1
                raise PydanticCustomError("enum", "Input should be {expected}", {"expected": expected})
            return value

        return check

    def pattern(self, pattern: Any, path: str) -> str | None:
        if pattern is None:
            return None
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            raise self.refuse(path, f"has the pattern {pattern!r}, which Python cannot run ({exc})") from None
        return str(pattern)

    @staticmethod
    def bounds(schema: Mapping[str, Any], *, integer: bool = False) -> dict[str, Any]:
        """minimum/maximum/exclusive*/multipleOf as pydantic-core's ge/le/gt/lt/multiple_of
        (``exclusiveMinimum: true`` is the draft-4 spelling); for an integer, 0.5 <= n is 1 <= n."""
        out = {"ge": schema.get("minimum"), "le": schema.get("maximum"), "multiple_of": schema.get("multipleOf")}
        for keyword, strict, loose in (("exclusiveMinimum", "gt", "ge"), ("exclusiveMaximum", "lt", "le")):
            value = schema.get(keyword)
            if value is True:
                out[strict], out[loose] = out[loose], None
            elif value is not None and value is not False:
                out[strict] = value
        if integer:
            rounded = {"ge": math.ceil, "gt": math.floor, "le": math.floor, "lt": math.ceil}
            out = {k: rounded[k](v) if k in rounded and isinstance(v, float) else v for k, v in out.items()}
        return {k: v for k, v in out.items() if v is not None}


def _resolve(root: Mapping[str, Any], ref: Any) -> Any:
    """What a local reference names (``#``, ``#/$defs/NAME``, ``#/definitions/NAME``), or None."""
    if ref == "#":
        return root
    if isinstance(ref, str) and ref.startswith(("#/$defs/", "#/definitions/")):
        group, name = ref[2:].split("/", 1)
        definitions = root.get(group)
        return definitions.get(name.replace("~1", "/").replace("~0", "~")) if isinstance(definitions, dict) else None
    return None


def _union(choices: list[tuple[CoreSchema, str]]) -> CoreSchema:
    """Any of ``choices``; ``null`` among them makes the rest nullable (clearer errors than a union)."""
    rest = [choice for choice in choices if choice[0]["type"] != "none"]
    if not rest:
        return cs.none_schema()
    core = rest[0][0] if len(rest) == 1 else cs.union_schema(list(rest))
    return cs.nullable_schema(core) if len(rest) < len(choices) else core


def _sized(core: CoreSchema, low: Any, high: Any, unit: str) -> CoreSchema:
    if low is None and high is None:
        return core

    def check(value: Any) -> Any:
        if (low is not None and len(value) < low) or (high is not None and len(value) > high):
            bounds = f"at least {low}" if high is None else f"at most {high}" if low is None else f"{low} to {high}"
            raise PydanticCustomError("size", "Input should have {bounds} {unit}", {"bounds": bounds, "unit": unit})
        return value

    return cs.no_info_after_validator_function(check, core)


def _keep_int(value: Any, handler: cs.ValidatorFunctionWrapHandler) -> Any:
    checked = handler(value)
    return value if type(value) is int else checked


def _unique(value: list[Any]) -> list[Any]:
    if len({canonical_json(item) for item in value}) != len(value):
        raise PydanticCustomError("unique", "Input should have no repeated items")
    return value


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name

"""Validating a call's arguments without the JSON round trip where that gives the same values.

``Tool.validate`` checks arguments as JSON (strictly: a string is not a number). When every parameter is
a plain scalar, validating the Python values gives the same result at a fraction of the cost, and a
schema without the author's own code validates the same arguments to the same values every time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

# Parameter schemas whose values validate alike as Python objects and as JSON text: a plain scalar
# (optionally nullable), a string enum (Literal), with only these keywords. Anything else (an Enum
# class, a date, bytes, a tuple, a nested model) parses differently from JSON and keeps the round trip.
_SCALAR_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
_SCALAR_KEYWORDS = frozenset({"type", "title", "description", "default", "minLength", "maxLength", "pattern",
                              "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "enum"})


def _scalar_schema(schema: Any) -> bool:
    if not isinstance(schema, dict) or schema.get("type") not in _SCALAR_TYPES or not schema.keys() <= _SCALAR_KEYWORDS:
        return False
    return all(isinstance(v, str) for v in schema.get("enum", ()))


def validates_as_python(parameters: Mapping[str, Any]) -> bool:
    """Whether every parameter is a plain scalar: ``_scalar_schema``, or that or null (``str | None``)."""
    for schema in parameters.get("properties", {}).values():
        if not isinstance(schema, dict):
            return False
        if "anyOf" in schema:
            options = schema["anyOf"]
            if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options
                    and all(_scalar_schema(o) for o in options)
                    and schema.keys() <= {"anyOf", "title", "description", "default"}):
                return False
        elif not _scalar_schema(schema):
            return False
    return True


def scalar_key(arguments: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The arguments as a key, when every key is a ``str`` and every value an exact ``str``, ``int``,
    ``bool``, ``None`` or finite ``float`` (values a JSON encode and parse would give back unchanged);
    else None. Where a value is a number, the key holds the values' types too, which keep ``1``,
    ``1.0`` and ``True`` apart (they compare equal); strings and None need none."""
    if type(arguments) is not dict:
        return None
    items = tuple(arguments.items())
    numbers = False
    for name, value in items:
        kind = type(value)
        if type(name) is not str:
            return None
        if kind is str or value is None:
            continue
        if kind is int or kind is bool or (kind is float and math.isfinite(value)):
            numbers = True
        else:
            return None
    return (items, tuple(type(v) for _, v in items)) if numbers else items


def pure_schema(schema: Any) -> bool:
    """Whether a pydantic-core schema validates without running code of the tool's author: no
    validator function (``AfterValidator``, ``field_validator``, ...), default factory or custom init."""
    if isinstance(schema, dict):
        if str(schema.get("type", "")).startswith("function-") or "default_factory" in schema \
                or schema.get("custom_init"):
            return False
        return all(pure_schema(v) for k, v in schema.items() if k not in ("metadata", "cls", "config"))
    if isinstance(schema, (list, tuple)):
        return all(pure_schema(v) for v in schema)
    return True


def dumped(model: type[BaseModel], validated: Any) -> dict[str, Any]:
    """``model.model_validate(...).model_dump()``, calling pydantic-core directly with the same
    (default) options: the model methods' keyword handling costs more than the validation."""
    values: dict[str, Any] = model.__pydantic_serializer__.to_python(validated)
    return values


def described(exc: ValidationError) -> str:
    """What is wrong with the arguments, as the model is told it: up to five problems, by argument."""
    parts = []
    for err in exc.errors()[:5]:
        loc = ".".join(str(p) for p in err["loc"]) or "arguments"
        if err["type"] == "extra_forbidden":
            parts.append(f"unexpected argument '{loc}'")
        elif err["type"] == "missing":
            parts.append(f"missing required argument '{loc}'")
        else:
            parts.append(f"'{loc}' {err['msg'][:1].lower()}{err['msg'][1:]}")  # the rest may quote a pattern
    return "; ".join(parts)

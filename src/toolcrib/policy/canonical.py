"""Canonical JSON: one byte string per value, so equal calls hash equal and edited calls do not."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from toolcrib.errors import InvalidArguments


def _normalise(value: Any) -> Any:
    """JSON-ready copy: integral floats become ints (3.0 -> 3), tuples lists, enums their value."""
    kind = type(value)  # the exact JSON types first: most values, and isinstance(x, Mapping) costs ~1 us
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        out: dict[str, Any] = {}
        for key, item in value.items():
            if type(key) is not str and not isinstance(key, str):
                raise TypeError(f"canonical JSON needs string keys, got {type(key).__name__}")
            out[key] = _normalise(item)
        return out
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, Enum):
        return _normalise(value.value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArguments("numbers must be finite: NaN and Infinity are not accepted")
        if value.is_integer():
            return int(value)  # also turns -0.0 into 0
        return value
    if isinstance(value, Mapping):
        return _normalise(dict(value))
    if isinstance(value, (list, tuple)):
        return [_normalise(item) for item in value]
    raise TypeError(f"canonical JSON cannot encode {type(value).__name__}")


def canonical_json(obj: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text kept as is, 3 == 3.0; NaN/Infinity refused."""
    return json.dumps(
        _normalise(obj), sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of the UTF-8 encoding of ``text``."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()

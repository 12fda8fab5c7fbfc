"""A function read as a tool's declaration: its docstring's description and ``Args:``, its strict schema."""

from __future__ import annotations

import inspect
import re
from typing import Any

from pydantic import BaseModel

_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.+)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Description (text before any section) and Google-style ``Args:`` descriptions."""
    doc = inspect.cleandoc(doc or "")
    head, _, rest = doc.partition("\nArgs:")
    args: dict[str, str] = {}
    current = None
    for line in ("  " + rest.lstrip("\n")).splitlines() if rest else []:
        if line.strip() and not line.startswith(" "):
            break  # next section
        m = _ARG_LINE.match(line)
        if m:
            current = m.group(1)
            args[current] = m.group(2).strip()
        elif current and line.strip():
            args[current] += " " + line.strip()
    description = " ".join(head.split())
    return description, args


def strict_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    schema["additionalProperties"] = False
    schema.setdefault("required", [])
    return schema

"""A change the request spells out: its arguments read from the request by code.

"Set CH3 to 12 V" names the change (set_supply_voltage), its channel (the one identifier of that
shape) and its set point (the one figure). When every required argument of a change tool can be read
from the request that way, unambiguously, code checks those values against the tool's schema, its
domain check and its safety envelope before any model is asked: a value the tool cannot take is
refused at once, and no proposal that could never run reaches an approver. Anything less clear
(two figures, a free-text argument, a verb the request does not use) is left to the model.
"""

from __future__ import annotations

from typing import Any

from toolcrib.agent.request import Request
from toolcrib.text import stems
from toolcrib.tools.grounding import identifiers
from toolcrib.tools.tool import Tool, name_words


def requested_arguments(request: Request, tool: Tool) -> dict[str, Any] | None:
    """The arguments of ``tool`` that the request spells out, when it asks for this change (the verb
    of the tool's name, in any form) and gives each required argument exactly one value: an
    identifier of its declared shape, or the request's one figure for its one numeric parameter.
    None otherwise."""
    verb = name_words(tool.name)[0]
    if not verb or not stems(verb) & request.stems:
        return None
    schema = tool.parameters.get("properties", {})
    required = list(tool.parameters.get("required", ()))
    shapes = dict(tool.identifier_shapes)
    words = request.without_units  # where identifiers are looked for
    figures = request.figures
    numeric = [name for name in required if schema.get(name, {}).get("type") in ("integer", "number")]
    arguments: dict[str, Any] = {}
    for name in required:
        if name in shapes:
            found = list(dict.fromkeys(identifiers(words, shapes[name])))
            if len(found) != 1:
                return None
            arguments[name] = found[0]
        elif name in numeric and len(numeric) == 1 and len(figures) == 1:
            value = float(figures[0])
            if schema[name]["type"] == "integer":
                if not value.is_integer():
                    return None
                arguments[name] = int(value)
            else:
                arguments[name] = int(value) if value.is_integer() else value
        else:
            return None
    return arguments or None

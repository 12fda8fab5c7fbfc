"""A deterministic model for the demo service desk, used by the service's tests, its page test and
``benchmarks/serve_load.py`` (``--model function:tests/fakes/desk_model.py:desk``). It proposes the call
a good model would for a few question shapes and answers from the tool result it was given, citing it."""

from __future__ import annotations

import json
import re

from toolcrib.models.base import Completion, Message, ToolCall, ToolSpec

_RESERVE = re.compile(r"\breserve\s+(\d+)\s+([A-Z0-9][A-Z0-9-]*)", re.I)
_PART = re.compile(r"\b([A-Z]{2,4}-\d{3,5}|F\d)\b")
_IDS = re.compile(r"Evidence ids you may cite: ([^.\n]*)\.")


def desk(messages: list[Message], tools: list[ToolSpec] | None) -> Completion | str:
    question = next(m.content for m in messages if m.role == "user")
    offered = {t.name for t in tools or []}
    if tools:
        reserve = _RESERVE.search(question)
        if reserve and "reserve_stock" in offered:
            return _call("reserve_stock", part_number=reserve.group(2).upper(), quantity=int(reserve.group(1)))
        part = _PART.search(question)
        if part and "lookup_part" in offered and re.search(r"\b(cost|price)", question, re.I):
            return _call("lookup_part", part_number=part.group(1))
        if "no tool" in question.lower():
            return "Hello from the desk."  # no evidence: the runner abstains
        return "I could not find that."
    ids = _IDS.search(messages[-1].content)
    returned = next((m for m in reversed(messages) if m.role == "tool"), None)
    # the evidence brief's first label (the aided path), or the tool result's own id (the native conversation)
    cite = ids.group(1).split(",")[0].strip() if ids else f"{returned.name}#1" if returned else ""
    result = returned.content if returned is not None else messages[-2].content
    price = re.search(r'"price": "([^"]+)"', result)
    if price:
        return f"It costs {price.group(1)} [{cite}]."
    if '"reserved": true' in result:
        return f"The parts are reserved [{cite}]."
    return f"Here is what the tool returned [{cite}]: {json.dumps(result[:80])}"


def _call(name: str, **arguments: object) -> Completion:
    return Completion(text="", tool_calls=(ToolCall(f"call_{name}", name, dict(arguments)),), model="desk")

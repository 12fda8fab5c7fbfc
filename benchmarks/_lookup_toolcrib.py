"""``_lookup`` as a toolcrib workspace sees it: the tools module (``lookup_part``, async, READ) and the
function model (``--model function:benchmarks/_lookup_toolcrib.py:model``) of ``serve_peers.py``."""

from __future__ import annotations

import re

from _lookup import answer_from, lookup, part_in

from toolcrib import Completion, Message, ToolCall, ToolSpec, tool

_IDS = re.compile(r"Evidence ids you may cite: ([^.\n]*)\.")


@tool(name="lookup_part", identifiers=["part_number"], cache_ttl_s=0)
async def lookup_part(part_number: str) -> dict[str, object]:
    """Look up a part's price by its part number.

    Args:
        part_number: The part number, such as HLV-2205.
    """
    return lookup(part_number)


def model(messages: list[Message], tools: list[ToolSpec] | None) -> Completion | str:
    """Call lookup_part for the question's part; once its result is in, answer from it, citing it."""
    question = next(m.content for m in messages if m.role == "user")
    part = part_in(question) or ""
    returned = next((m for m in reversed(messages) if m.role == "tool"), None)
    if tools and returned is None:
        return Completion(text="", tool_calls=(ToolCall("call_1", "lookup_part", {"part_number": part}),))
    ids = _IDS.search(messages[-1].content)
    cite = ids.group(1).split(",")[0].strip() if ids else "lookup_part#1"
    result = returned.content if returned is not None else messages[-2].content
    return f"{answer_from(part, result)} [{cite}]."

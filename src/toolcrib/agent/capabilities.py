"""What a request asks of tools the principal may not use: said in the answer, never left unsaid.

A user who asks for a live reading, and may only read the archive, should hear that the live reading
is not theirs to take, not only the archived value. A tool that changes something (WRITE or ACTUATE)
is named when the policy does not offer it to the principal and the request holds its verb (the first
word of its name or of its description: "set" for set_supply_voltage, "order" for restock_item,
"Order more units of an item") and another word of its name or description that no tool they may
use has in its own name ("What is the supply voltage?" names no verb of it).
"""

from __future__ import annotations

from collections.abc import Iterable

from toolcrib.agent.request import Request
from toolcrib.text import stems
from toolcrib.tools.tool import Effect, Tool, name_words

_VAGUE = stems("a an the of to and or for from its it their this that one more some any with on in")


def _name_words(tool: Tool) -> list[str]:
    return [w for w in name_words(tool.name.lower()) if w]


def unavailable_asked(request: Request, tools: Iterable[Tool], usable: Iterable[Tool]) -> list[Tool]:
    """The tools of ``tools`` that change something, are not among ``usable`` (what the policy offers
    the principal) and that ``request`` names (see the module docstring)."""
    usable = list(usable)
    usable_names = {t.name for t in usable}
    theirs = stems(" ".join(w for t in usable for w in _name_words(t)))
    asked = request.stems
    named = []
    for tool in tools:
        words = _name_words(tool)
        if tool.effect is Effect.READ or tool.name in usable_names or not words:
            continue
        summary = tool.summary.lower()
        verbs = stems(words[0]) | stems(summary.split(" ", 1)[0])  # "restock", or its summary's "Order ..."
        if verbs & asked and (stems(" ".join([*words, summary])) - theirs - _VAGUE) & asked - verbs:
            named.append(tool)
    return named


def unavailable_note(tools: Iterable[Tool]) -> str:
    """One sentence per tool: it is not available to the user, and what it does."""
    notes = []
    for tool in tools:
        summary = tool.summary.rstrip(".")
        notes.append(f"{tool.name} is not available to you ({summary[:1].lower()}{summary[1:]}), so it was not used.")
    return " ".join(notes)

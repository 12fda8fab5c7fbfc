"""The one tool and the fake model behind every server ``serve_peers.py`` compares: ``lookup_part`` over
an in-memory dict, and a model that calls it once for the part a question names, then answers with the
price it was shown. Plain Python, no framework: each server wraps these in its own way."""

from __future__ import annotations

import re

PARTS = {"HLV-2205": "$52.00", "PSU-4030": "$189.50", "FAN-8025": "$14.20", "RLY-1240": "$7.85"}
QUESTIONS = tuple(f"What does part {part} cost?" for part in PARTS)
_PART = re.compile(r"\b[A-Z]{2,4}-\d{3,5}\b")
_PRICE = re.compile(r"\$\d[\d,]*\.\d\d")


def lookup(part_number: str) -> dict[str, object]:
    """A part's record: its price, or ``found: false``."""
    price = PARTS.get(part_number.strip().upper())
    if price is None:
        return {"found": False, "part_number": part_number}
    return {"found": True, "part_number": part_number, "price": price}


def part_in(question: str) -> str | None:
    """The part number a question names, if any: the fake model's first turn calls lookup_part with it."""
    found = _PART.search(question)
    return found.group(0) if found else None


def answer_from(part: str, tool_result: str) -> str:
    """The fake model's second turn: the price read from the tool result it was shown."""
    found = _PRICE.search(tool_result)
    return f"{part} costs {found.group(0)}" if found else "I could not find the price"


def has_price(text: str) -> bool:
    return _PRICE.search(text) is not None

"""Argument grounding: an identifier the model passes must appear in what the user or a tool said.

The same sources decide which tools are worth offering: a tool whose required identifier cannot
appear in them (no order id in "how do refunds work?") could only be called with an invented one,
which the gate would refuse, so the runner does not offer it and the model is not tempted.
"""

from __future__ import annotations

import re
from typing import Any

# What a tool identifier looks like when the tool does not say: a token holding a digit (ORD-1001,
# F2, 1001) or written in capitals (channel C, HEPA); never a lone "I", or "A" opening a sentence.
_TOKEN = re.compile(r"[A-Za-z0-9](?:[\w/.-]*[A-Za-z0-9])?")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)$")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _is_word(token: str, text: str, start: int) -> bool:
    """A lone "I", or a capital letter opening a sentence ("A customer..."), is a word, not an id."""
    return token == "I" or (len(token) == 1 and token.isupper() and bool(_SENTENCE_START.search(text[:start])))


class Grounding:
    """The text a run has seen from trusted-to-quote sources: user messages and tool results."""

    def __init__(self, *texts: str) -> None:
        self._blob = ""
        self._texts: list[str] = []
        for t in texts:
            self.add(t)

    def add(self, text: str) -> None:
        self._blob += "\n" + _norm(text)
        self._texts.append(text)

    def contains(self, value: Any) -> bool:
        needle = _norm(str(value))
        return bool(needle) and needle in self._blob

    def names_identifier(self, shape: str | None = None) -> bool:
        """Whether these sources hold a token that could be an identifier: one matching ``shape`` (a
        regular expression for the whole token) when given, else anything identifier-like."""
        pattern = re.compile(rf"(?<![\w-])(?:{shape})(?![\w-])") if shape is not None else _TOKEN
        for text in self._texts:
            for m in pattern.finditer(text):
                token = m.group(0)
                looks_like_id = shape is not None or token.isupper() or any(c.isdigit() for c in token)
                if looks_like_id and not _is_word(token, text, m.start()):
                    return True
        return False

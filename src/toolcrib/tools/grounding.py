"""Argument grounding: an identifier the model passes must appear in what the user or a tool said."""

from __future__ import annotations

from typing import Any


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class Grounding:
    """The text a run has seen from trusted-to-quote sources: user messages and tool results."""

    def __init__(self, *texts: str) -> None:
        self._blob = ""
        for t in texts:
            self.add(t)

    def add(self, text: str) -> None:
        self._blob += "\n" + _norm(text)

    def contains(self, value: Any) -> bool:
        needle = _norm(str(value))
        return bool(needle) and needle in self._blob

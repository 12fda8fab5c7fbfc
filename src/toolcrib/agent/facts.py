"""What a text states that a claim check can compare: its identifiers and its figures.

The claim check reads an answer's sentences, the evidence and the request the same way: a figure or an
identifier a sentence states must be in the evidence or the request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from toolcrib.text import CODE_IDENTIFIER

# A figure: an optional currency sign, digits with thousands separators and decimals, an optional %; not
# the digits of an identifier or the month and day of an ISO date (after a hyphen).
_FIGURE = re.compile(r"(?<![\w.-])([$€£]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)")
_TIMESTAMP = re.compile(r"(\d{4}-\d{2}-\d{2})T(?=\d)")
_ANY_FIGURE = re.compile(r"(?<![\w.])([$€£]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(%?)")  # after a hyphen too


@dataclass(frozen=True)
class Facts:
    """The identifiers and figures a text states; small whole numbers (counts, steps, days of a date) are
    left out: prose writes them in too many ways to check."""

    identifiers: frozenset[str]
    figures: frozenset[float]

    @classmethod
    def of(cls, text: str, *, evidence: bool = False) -> Facts:
        """What ``text`` states; as ``evidence``, every number in it counts, the parts of a date or an
        identifier too ("2026-11-18" supports "November 18, 2026")."""
        figures = set()
        if evidence:  # the time of an ISO timestamp is a figure of its own: 2026-12-09T10:15 gives 10 and 15
            text = _TIMESTAMP.sub(r"\1 ", text)
        for currency, whole, decimals, percent in (_ANY_FIGURE if evidence else _FIGURE).findall(text):
            value = float(whole.replace(",", "") + decimals)
            if evidence or currency or decimals or percent or value >= 10:
                figures.add(round(value, 6))
        return cls(frozenset(m.upper() for m in CODE_IDENTIFIER.findall(text)), frozenset(figures))

    @classmethod
    def joined(cls, parts: Iterable[Facts]) -> Facts:
        """What several texts state together."""
        parts = list(parts)
        return cls(frozenset().union(*(p.identifiers for p in parts)), frozenset().union(*(p.figures for p in parts)))

    def missing_from(self, evidence: Facts, question: Facts) -> str:
        """What of this is in neither ``evidence`` nor ``question``: "" when nothing is missing."""
        ids = sorted(self.identifiers - evidence.identifiers - question.identifiers)
        figures = sorted(self.figures - evidence.figures - question.figures)
        missing = [f"identifier {', '.join(ids)}" if ids else "",
                   f"figure {', '.join(f'{f:g}' for f in figures)}" if figures else ""]
        return " and ".join(m for m in missing if m)

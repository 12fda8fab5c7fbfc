"""Support for a sentence's words, not only its figures: the names and the values of the workspace's data an
answer states must be held by what the run found or by the request.

A small model writes a wrong answer without a figure or an identifier in it ("The appointment is for a
surgery.", citing the cancellation policy; a place nobody named), and the figure check passes it. Two
kinds of word say what a sentence is about, and are checked the way a figure is:

- a name: a run of capitalised words inside a sentence ("Dr Khan", "Harbour Street"; not a weekday, a
  month, a title, a code in capitals or an identifier, which the figure check reads);
- a value of the workspace's data (``ValueIndex.link`` with kinds: "surgery" of a column of visit kinds,
  "paracetamol" of a medicines table): a word the data gives a meaning.

Either is held when one of its words (by stem) is in the run's evidence or in the request (with the
values code linked in it). Every other word is left alone: prose says the same thing in too many ways.
"""

from __future__ import annotations

import re
from collections.abc import Set

from toolcrib.retrieval.excerpt import names
from toolcrib.sql.values import ValueIndex
from toolcrib.text import stems

_NOT_NAMES = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january", "february", "march",
    "april", "may", "june", "july", "august", "september", "october", "november", "december",
    "dr", "mr", "mrs", "ms", "miss", "prof", "note", "yes", "no", "ok"})  # dates and titles are no names
_NOT_NAME_STEMS = stems(" ".join(_NOT_NAMES))

_OPENING = re.compile(r"^[\W\d_]+")


def unheld(claim: str, held: Set[str], values: ValueIndex | None) -> list[str]:
    """The names and stored values ``claim`` states of which no word is in ``held`` (the ``text.stems`` of
    its evidence and its request, read once per answer), each once, in the order stated."""
    out: list[str] = []
    opening = _OPENING.sub("", claim)  # the sentence's first word opens it, after a bullet or a number too
    said = [n for n in names(opening) if not n.isupper() and not any(c.isdigit() for c in n)]
    if values is not None:
        said += [link.said for link in values.link(claim, kinds=True)]
    for name in said:
        words = stems(name) - _NOT_NAME_STEMS
        if words and not words & held and name not in out:
            out.append(name)
    return out

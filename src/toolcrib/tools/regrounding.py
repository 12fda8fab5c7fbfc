"""Values a model wrote that no source gives: the dates a call's arguments hold, held to the dates the run was
given, and a filter of a lookup nobody named, left out.

A small model writes the year it learned in: asked about "Tuesday 8 December", it calls
``find_free_rooms(date="2023-12-08")`` and the answer says no room is free. Every ISO date inside a string
argument (a day, a day and time, a date inside a query) must be a date the request states (resolved by code,
``dates.stated_dates``) or one a text the run has seen holds. One that is not is re-grounded where the request
says which date it meant (the one of the request's days with the same day and month, or its only day), and
refused otherwise, with the dates that would have been accepted, so the next decision can correct itself.

A small model also fills a lookup's optional filters with words nobody said: ``find_free_rooms(date=...,
building="None")`` finds no room in a building called "None". An optional free-text argument of a READ whose value no
text of the run holds (not the request, not a result, not a value linked to the data) is left out, so the
tool's own default applies, and recorded like a re-grounded date.

A name from a closed set (the staff of a rota, a status: ``Domains``) must name one of its stored values:
``find_free_rooms(date=..., building="West Wing")`` where no building is called so is refused with the
values that exist.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import date
from typing import Any, Protocol

from toolcrib.dates import Stated, described, iso_dates, stated_dates
from toolcrib.errors import UngroundedArgument
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Effect, Tool

_FILTER_WORDS = 6  # a longer text is what the tool searches for, not a filter
_WORD = re.compile(r"[^\W\d_]{3,}")  # a name's words ("Dr" is a title, not a name)
_LISTED = 20  # stored values a refusal lists, at most


class Domains(Protocol):
    """The stored values of a closed set, by the name of the argument that must name one of them."""

    def closed(self, name: str) -> Sequence[str] | None:
        """The values an argument called ``name`` must name; None when any value will do."""
        ...


@dataclass(frozen=True)
class Regrounded:
    """One value of an argument the gate replaced or left out: what the model wrote, what runs ("" when
    left out), why."""

    argument: str
    written: str
    grounded: str
    because: str

    def to_dict(self) -> dict[str, str]:
        return asdict(self)


def unnamed_filters(tool: Tool, values: dict[str, Any], grounding: Grounding) -> tuple[dict[str, Any],
                                                                                     list[Regrounded]]:
    """``values`` less the optional free-text filters of a READ (``Tool.filters``) that no text of the run holds."""
    if not tool.filters:
        return values, []
    dropped = [Regrounded(name, value, "", "no text of the run gives it: the tool's default applies")
               for name in tool.filters if type(value := values.get(name)) is str and value.strip()
               and len(value.split()) <= _FILTER_WORDS and not iso_dates(value) and not grounding.contains(value)]
    if not dropped:
        return values, []
    return {k: v for k, v in values.items() if k not in {d.argument for d in dropped}}, dropped


def stored_names(tool: Tool, values: dict[str, Any], domains: Domains | None) -> None:
    """Raise UngroundedArgument, listing the stored values, for a READ's free-text argument of a closed set
    (``domains``) that names none of them: not equal to one, and no word of it held by that one alone."""
    if domains is None or tool.effect is not Effect.READ:
        return
    for name, value in values.items():
        if type(value) is not str or not value.strip() or name in tool.identifiers or iso_dates(value):
            continue
        stored = domains.closed(name)
        if stored and not _names(value, stored):
            raise UngroundedArgument(f"{tool.name}: {name} {value!r} names none of the stored values "
                                     f"({', '.join(stored[:_LISTED])}): use one of those, or leave it out")


def _names(value: str, stored: Sequence[str]) -> bool:
    """``value`` is one of ``stored``, or gives a word only one of them holds ("Okafor": "Dr Ngozi Okafor")."""
    whole, own = _domain(tuple(stored))
    return value.strip().casefold() in whole or any(w.casefold() in own for w in _WORD.findall(value))


@functools.lru_cache(maxsize=256)
def _domain(stored: tuple[str, ...]) -> tuple[frozenset[str], frozenset[str]]:
    """The values of a closed set, casefolded, and the words only one of them holds."""
    held = Counter(w for s in stored for w in {w.casefold() for w in _WORD.findall(s)})
    return frozenset(s.casefold() for s in stored), frozenset(w for w, n in held.items() if n == 1)


def ground_dates(tool: str, values: dict[str, Any], skip: Sequence[str], grounding: Grounding, question: str,
                 today: date | None = None) -> tuple[dict[str, Any], list[Regrounded]]:
    """``values`` with each date no source gives (in a string, or a value typed ``date`` or ``datetime``)
    replaced by the request's date it stands for, and what was replaced; ``skip`` names arguments grounded
    otherwise (identifiers); the request's dates are resolved against ``today`` (default: the machine's).
    Raises UngroundedArgument for a date the request does not say how to replace."""
    changed: dict[str, Any] = {}
    regrounded: list[Regrounded] = []
    for name, value in values.items():
        if name in skip or not ((type(value) is str and "-" in value) or isinstance(value, date)):
            continue
        written = value.isoformat() if isinstance(value, date) else value  # a parameter typed date or datetime
        found = iso_dates(written)
        if not found:
            continue
        today = today or date.today()
        stated = stated_dates(question, today)
        text = written
        for day, m in reversed(found):  # from the end: replacing keeps the earlier dates' places
            if _given(day, stated, grounding, today):
                continue
            meant = _meant(day, stated)
            if meant is None:
                raise UngroundedArgument(_refusal(tool, name, m.group(0), stated))
            text = text[:m.start()] + meant.isoformat() + text[m.end():]
            because = (f"the request gives {described(stated)}" if stated else "")
            regrounded.append(Regrounded(name, m.group(0), meant.isoformat(), because))
        if text != written:
            changed[name] = type(value).fromisoformat(text) if isinstance(value, date) else text
    return ({**values, **changed} if changed else values), regrounded[::-1]


def _given(day: date, stated: Sequence[Stated], grounding: Grounding, today: date) -> bool:
    """The request states ``day`` (or a span holding it), or a text the run has seen holds it."""
    if any(s.holds(day) for s in stated) or grounding.contains(day.isoformat()):
        return True
    return any(s.day == day for _, text in grounding.sources for s in stated_dates(text, today))


def _meant(day: date, stated: Sequence[Stated]) -> date | None:
    """The request's day ``day`` stands for: the one with the same day and month (a wrong year), else the
    request's only day; None when the request does not say."""
    days = [s.day for s in stated if s.day is not None]
    same = [d for d in days if (d.month, d.day) == (day.month, day.day)]
    if len(same) == 1:
        return same[0]
    return days[0] if len(days) == 1 and len(stated) == 1 else None


def _refusal(tool: str, argument: str, written: str, stated: Sequence[Stated]) -> str:
    """The refusal the model reads: which date, and which would have been accepted."""
    head = f"{tool}: {argument} holds the date {written}, which neither the request nor any tool result gives"
    if stated:
        return f"{head}; the request gives {described(stated)}: use one of those"
    return f"{head}; the request gives no date: do not choose one, ask the user which day they mean"

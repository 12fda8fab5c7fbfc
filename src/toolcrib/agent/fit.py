"""Whether a lookup the model proposed fits the request: do its values come from anywhere?

A small model offered a lookup that takes free values (a day, a name) fills them with its own when the
request is about something else: "When does the desk open on public holidays?" becomes
``find_free_times(day="2023-04-15", person="Dr. Smith")``, and the answer is written from a result about
nothing that was asked. A call whose every text value appears neither in the request (as written, as
its words, or as a date it gives) nor in anything the run found did not come from the request: it is
set aside, and the run goes on as if the model had chosen nothing (code searches the documents).
Identifiers are the gate's to check (``Identifier``); what a model writes into a built-in search, SQL
query or program is its own words by design, so those tools are not judged here.
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from typing import Any

from toolcrib.agent.request import Request
from toolcrib.dates import iso_dates
from toolcrib.sql.tool import SQL_RESOURCE
from toolcrib.text import STOP_WORDS, stems
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Effect, Tool

WRITTEN_INPUT = frozenset({"retrieval", "web", "analysis", SQL_RESOURCE})  # tools whose input the model writes


def invented_values(tool: Tool, arguments: Mapping[str, Any], request: Request, grounding: Grounding) -> list[str]:
    """The text values of a READ call to ``tool`` when not one of them comes from the request or
    anything the run found; [] when one does, when it has none, or when the tool is not judged here."""
    if tool.effect is not Effect.READ or WRITTEN_INPUT.intersection(tool.tags):
        return []
    values = [v.strip() for k, v in arguments.items()
              if k not in tool.identifiers and isinstance(v, str) and v.strip()]
    if not values:
        return []
    asked = _prefixes(request.stems)
    if any(_comes_from(v, request, asked, grounding) for v in values):
        return []
    return values


def _prefixes(words: Set[str]) -> set[str]:
    """Words by their first four letters ("shipping" and "ship" meet), less short and stop words."""
    return {w[:4] for w in words if len(w) >= 3 and w not in STOP_WORDS}


def _comes_from(value: str, request: Request, asked: set[str], grounding: Grounding) -> bool:
    if grounding.contains(value) or _prefixes(stems(value)) & asked:
        return True
    # a day, or a day and time, where the request states a date: the gate holds it to the request's
    # ("31 January" as 2030-01-31T09:00; "2023-01-31" re-grounded to it)
    return bool(request.dated) and bool(iso_dates(value))

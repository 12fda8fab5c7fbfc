"""What code tells the model about a request before it decides: the dates it states, resolved against today,
and the values of the workspace's data it names, linked to where they are stored.

A small model writes "8 December" in the year it learned in, cannot know what "next Monday" is, and has no
way from "Mango" to ``lookup_pet(pet_id)``. Code reads both: the dates (``dates.stated_dates``) and the
database values the request names (``sql.values.ValueIndex``), for a user who may query that database (the
same values their own SQL could read). A link is also a text the run has seen, from the workspace's data:
the gate grounds the row id it gives like one a tool returned, and the proposal shows where it came from.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from toolcrib.agent import prompts
from toolcrib.agent.request import Request
from toolcrib.policy.principal import Principal
from toolcrib.sql.base import ReadOnlySQL
from toolcrib.sql.tool import SQL_RESOURCE
from toolcrib.sql.values import Link, ValueIndex
from toolcrib.tools.gate import Gate
from toolcrib.tools.grounding import Source

LINKED = Source("tool", "workspace data (values the request names)")
"""Where a linked value comes from: the workspace's own database, read by code."""


class ValueLinks:
    """The workspace database's value index, built on first use and read again once ``fresh_s`` has passed
    (rows added since, by ingest or by a write that ran, are linked from then on)."""

    def __init__(self, resources: Mapping[str, Any], *, fresh_s: float = 60.0) -> None:
        sql = resources.get(SQL_RESOURCE)
        self._sql = sql if isinstance(sql, ReadOnlySQL) else None
        self._fresh_s = fresh_s
        self._index: ValueIndex | None = None
        self._built = 0.0

    def links(self, request: Request, principal: Principal, gate: Gate) -> tuple[Link, ...]:
        """The values ``request`` names, for a ``principal`` offered a tool that queries the database."""
        if self._sql is None or not any(SQL_RESOURCE in t.tags for t in gate.offer(principal).tools):
            return ()
        if self._index is None or time.monotonic() - self._built > self._fresh_s:
            self._index, self._built = ValueIndex.build(self._sql), time.monotonic()
        return self._index.link(request.text)


def as_read(request: Request, links: tuple[Link, ...]) -> str:
    """The request as the model reads it: with what code resolved in it, where it resolved anything."""
    notes = []
    if request.dated:
        dates = ", ".join(s.describe() for s in request.dated)
        notes.append(prompts.DATES.format(today=request.today.isoformat(), dates=dates))
    if links:
        notes.append(prompts.LINKED.format(links="; ".join(link.describe() for link in links)))
    return "\n".join([request.text, *notes])


def linked_text(links: tuple[Link, ...]) -> str:
    """The links as the text the run has seen from ``LINKED``."""
    return "\n".join(link.describe() for link in links)

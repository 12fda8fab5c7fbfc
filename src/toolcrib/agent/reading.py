"""What code tells the model about a request before it decides: the dates it states, resolved against today,
and the values of the workspace's data it names, linked to where they are stored.

A small model writes "8 December" in the year it learned in, cannot know what "next Monday" is, and has no
way from "Juniper" to ``lookup_customer(customer_id)``. Code reads both: the dates (``dates.stated_dates``) and the
database values the request names (``sql.values.ValueIndex``), for a user who may query that database (the
same values their own SQL could read). A link is also a text the run has seen, from the workspace's data:
the gate grounds the row id it gives like one a tool returned, and the proposal shows where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toolcrib.agent import prompts
from toolcrib.agent.request import Request
from toolcrib.dates import described
from toolcrib.policy.principal import Principal
from toolcrib.sql.base import ReadOnlySQL
from toolcrib.sql.tool import SQL_RESOURCE
from toolcrib.sql.values import Link, ValueIndex, value_index
from toolcrib.tools.gate import Gate
from toolcrib.tools.grounding import Source

LINKED = Source("tool", "workspace data (values the request names)")
"""Where a linked value comes from: the workspace's own database, read by code."""


class ValueLinks:
    """The values of the workspace's database, to link a request's words to and to check a closed set's
    names against (``sql.values.value_index``: one index per database, shared by every runner on it)."""

    def __init__(self, resources: Mapping[str, Any]) -> None:
        sql = resources.get(SQL_RESOURCE)
        self._sql = sql if isinstance(sql, ReadOnlySQL) else None

    def index(self, principal: Principal, gate: Gate) -> ValueIndex | None:
        """The database's values, for a ``principal`` offered a tool that queries it (the values their own
        SQL could read); None for anyone else."""
        if self._sql is None or not any(SQL_RESOURCE in t.tags for t in gate.offer(principal).tools):
            return None
        return value_index(self._sql)


def as_read(request: Request, links: tuple[Link, ...]) -> str:
    """The request as the model reads it: with what code resolved in it, where it resolved anything."""
    notes = []
    if request.dated:
        notes.append(prompts.DATES.format(today=request.today.isoformat(), dates=described(request.dated)))
    if links:
        notes.append(prompts.LINKED.format(links="; ".join(link.describe() for link in links)))
    return "\n".join([request.text, *notes])


def linked_text(links: tuple[Link, ...]) -> str:
    """The links as the text the run has seen from ``LINKED``."""
    return "\n".join(link.describe() for link in links)

"""Record answers: a question that asks for facts of records looked up by their identifiers is
answered by code, from the records' own fields, with no final model call.

On two cores the answer call costs 5-20 s, and a small model restates a record's fields imperfectly
(a date reformatted, the carrier left out). When every result of the run is a record the
organisation's own system returned for an identifier (a lookup: ``Tool.lookup_key``), and the
question asks what, which, who, where, when, how much or how many about nothing those records do
not cover, the answer is the records themselves: the fields the question names first, every value
written exactly as the record holds it, each record cited. Anything else (a yes/no or why question,
a document search, a result that found nothing, a failed or flagged call, a word of the question
that no record or tool covers) goes to the model as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterator, Mapping, Sequence, Set
from typing import Any, NamedTuple

from toolcrib.agent.request import Request
from toolcrib.retrieval.retriever import contains_exactly
from toolcrib.text import stems
from toolcrib.tools.tool import Tool

# Words that ask, point or hedge without naming anything a record must hold; a count the request gives
# ("three filters") is its own figure.
ASKING = stems(
    "what which who whom where when how much many long soon old is are was were the a an of for to in on at by "
    "do does did we our my i you your it its they their there this that these those has have had be been can "
    "could would will please tell me us about currently current now today right still exactly there any all "
    "last latest recent recorded know let see find look up give show and or with from into as so also its "
    "one ones get got don doesn isn t s "  # contractions: "don't" is "don" and "t"
    "whether check verify confirm two three four five six seven eight nine ten eleven twelve")
_SKIPPED = frozenset({"found", "ok", "message"})  # what a result says about itself, not the record's facts
_MAX_FIELDS = 14
_MAX_ROWS, _MAX_COLUMNS = 5, 4  # a query result code states as it is
_TRUE, _FALSE = "\x00true", "\x00false"  # a flag is stated as "live" or "not live", not "live no"


class LookedUp(NamedTuple):
    """One successful lookup of the run: the tool, the identifier it was given, its record and its citation."""

    tool: Tool
    key: str
    record: Mapping[str, Any]
    citation: str


def record_answer(request: Request, lookups: Sequence[LookedUp]) -> str | None:
    """The answer code writes from ``lookups``, or None when the question needs the model (see the
    module docstring)."""
    if not lookups or not request.wants_facts or request.asks_judgement:
        return None
    if any(not _flat(item.record) or item.record.get("found") is False for item in lookups):
        return None
    if _asks_beyond(request, lookups):
        return None
    return "\n".join(_sentence(item, request.stems - ASKING) for item in lookups)


def table_answer(request: Request, data: Mapping[str, Any], citation: str, label: str = "") -> str | None:
    """The answer code writes from a query's small table result (``{"columns", "rows"}``: at most
    ``_MAX_ROWS`` rows of at most ``_MAX_COLUMNS`` columns, none truncated) for a question that asks for
    facts: each row's columns in words (``heading``) and values exactly as returned ("Average weight kg:
    8.92 [sql_query#1]."), any name the query resolved, any condition dropped from it (``sql.unsaid``) or
    added to it (``sql.stated``),
    under ``label`` (a listing's tool) where given. None when the question needs the model, or the result
    is empty or larger."""
    columns, rows = data.get("columns"), data.get("rows")
    if not request.wants_facts or request.asks_judgement or data.get("truncated") or unanswered_asks(request, data):
        return None
    if data.get("claimed"):  # a column named for what it does not compute: not code's to state
        return None
    if (not isinstance(columns, list) or not isinstance(rows, list) or not 0 < len(rows) <= _MAX_ROWS
            or not 0 < len(columns) <= _MAX_COLUMNS or any(not isinstance(r, list) or len(r) != len(columns)
                                                           for r in rows)):
        return None
    if all(cell is None for row in rows for cell in row):
        return None
    headings = [heading(str(c)) for c in columns]
    shown = ["; ".join(f"{h}: {cell(v)}" for h, v in zip(headings, row, strict=True)) for row in rows]
    body = shown[0] if len(shown) == 1 else " | ".join(f"({i}) {r}" for i, r in enumerate(shown, start=1))
    resolved = data.get("resolved") or {}
    note = "".join(f" ('{k}' read as '{v}')" for k, v in resolved.items()) if isinstance(resolved, dict) else ""
    dropped = data.get("dropped_filters") or []
    if isinstance(dropped, list) and dropped:  # conditions on values nobody gave: the reader must know
        plural = "s" if len(dropped) > 1 else ""
        note += f" (without the condition{plural} nobody asked for: {'; '.join(map(str, dropped))})"
    added = data.get("added_filters") or []
    if isinstance(added, list) and added:  # filters the request names that code wrote into the query
        note += f" (where {' and '.join(map(str, added))}, as the request says)"
    head = ", ".join(h for h in (label, "" if len(rows) == 1 else f"{len(rows)} rows") if h)
    body = f"{head}: {body}" if head else body
    return f"{body[:1].upper()}{body[1:]} [{citation}]{note}."


_AGGREGATE = re.compile(r"(?i)^(sum|count|avg|min|max|total)\(\s*(?:distinct\s+)?([^()]*)\)$")
_AGGREGATE_WORDS = {"sum": "total", "count": "number of", "avg": "average", "min": "lowest", "max": "highest",
                    "total": "total"}
_ROUNDED = re.compile(r"(?i)^round\((.*),\s*\d+\s*\)$")


def heading(column: str) -> str:
    """A result's column as words: "AVG(weight_kg)" -> "average weight kg", "COUNT(*)" -> "number of rows",
    "ROUND(SUM(amount), 2)" -> "total amount", "total_value" -> "total value"."""
    column = column.strip()
    if rounded := _ROUNDED.match(column):
        column = rounded.group(1).strip()
    if aggregate := _AGGREGATE.match(column):
        what = aggregate.group(2).strip().strip('"`[]') or "*"
        column = f"{_AGGREGATE_WORDS[aggregate.group(1).lower()]} {'rows' if what in ('*', '1') else what}"
    return " ".join(re.split(r"[_\s]+", column)).strip()


def listing_answer(request: Request, tool: Tool, data: Mapping[str, Any], citation: str) -> str | None:
    """The answer code writes from a tool's result that lists a few records (``{"free_slots": [{...},
    ...], "count": 3}``): the list as ``table_answer`` states a table, under the tool's name. None for a
    lookup of one record by its identifier (its lists are the record's own), when the result is not one
    such list, or when the request asks for anything the tool and its result do not cover
    (``unanswered_words``)."""
    lists = [v for v in data.values() if isinstance(v, list)]
    if (tool.lookup_key() is not None or len(lists) != 1 or not lists[0]
            or not all(isinstance(r, Mapping) and _flat(r) for r in lists[0])):
        return None
    items: list[Mapping[str, Any]] = lists[0]
    columns = list(dict.fromkeys(k for item in items for k in item))
    if _asks_beyond(request, [LookedUp(tool, "", data, citation)]):
        return None
    table = {"columns": [c.replace("_", " ") for c in columns],
             "rows": [[item.get(c) for c in columns] for item in items]}
    label = tool.name.replace("_", " ")
    return table_answer(request, table, citation, label=label[:1].upper() + label[1:])


def unanswered_asks(request: Request, data: object) -> list[str]:
    """The things a request of several asks of which a result (or a list of results) names no word, in its
    columns, values or what it resolved ("What is the total of invoice INV-7 and when is it due?" of a table
    of ``total``): what the result does not answer."""
    if len(request.asks) < 2:
        return []
    covered = _words_of(data)
    return [ask for ask in request.asks if not (stems(ask) - ASKING) & covered]


def _words_of(record: Any) -> set[str]:
    """The stems of a record's field names and values ("total_value" is "total" and "value")."""
    return stems(json.dumps(record, ensure_ascii=False, default=str).replace("_", " "))


def cell(value: Any) -> str:
    """A result's value as an answer states it (a float to the claim check's precision)."""
    if value is None:
        return "none"
    if isinstance(value, float):  # to the claim check's precision (6 decimals): 8.92, never 8.919999999999998
        return str(int(value)) if value.is_integer() else str(round(value, 6))
    return str(value)


def _asks_beyond(request: Request, lookups: Sequence[LookedUp]) -> bool:
    """Whether ``request`` asks for more than ``lookups`` hold: a word none covers (one is let pass in a
    request of three or more content words: a word of its own phrasing)."""
    asked = request.stems - ASKING
    return len(unanswered_words(request.stems, lookups)) > (1 if len(asked) >= 3 else 0)


def unanswered_words(asked: Set[str], lookups: Sequence[LookedUp]) -> set[str]:
    """The content words of ``asked`` (a request's stems) that no record holds, in its fields or values, and no
    tool that returned one names or describes: what the request asks beyond what was looked up. A
    lookup that found nothing (``"found": false``) covers nothing: its tool's description is no answer."""
    covered: set[str] = set()
    for item in lookups:
        if isinstance(item.record, Mapping) and item.record.get("found") is False:
            continue
        covered |= stems(f"{item.tool.name.replace('_', ' ')} {item.tool.description}") | _words_of(item.record)
    return set(asked) - ASKING - covered


def as_computed(data: Mapping[str, Any]) -> dict[str, Any]:
    """A query's result with each column that is named for what it does not compute (``claimed``) read
    as its expression: "delivery_lead_time" holds no lead time when it is ``MAX(year)``."""
    claimed = data.get("claimed") or {}
    shown = {k: v for k, v in data.items() if k != "claimed"}
    shown["columns"] = [claimed.get(c, c) for c in data.get("columns") or []]
    return shown


def _flat(record: Any) -> bool:
    """A record code can state: a mapping of a few scalar (or list-of-scalar) fields."""
    if not isinstance(record, Mapping) or not 0 < len(record) <= _MAX_FIELDS:
        return False
    return all(_scalar(v) or (isinstance(v, list) and all(_scalar(x) for x in v)) for v in record.values())


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _sentence(item: LookedUp, asked: Set[str]) -> str:
    """``Order status PO-1001: status shipped; carrier DHL; ... [order_status#1]``, the fields
    the question names first."""
    fields: list[tuple[str, str]] = []
    for name, value in item.record.items():
        if name in _SKIPPED or value in (None, "", []) or str(value).casefold() == item.key.casefold():
            continue
        if name == "unit" and fields and fields[-1][0] == "value":  # "value 24.1 °C", not "unit °C" apart
            fields[-1] = ("value", f"{fields[-1][1]} {value}")
        else:
            fields.append((name, _shown(value)))
    fields.sort(key=lambda field: not (stems(field[0].replace("_", " ")) & asked))
    parts = [f"not {name}" if value == _FALSE else name if value == _TRUE else f"{name} {value}"
             for name, value in ((n.replace("_", " "), v) for n, v in fields)]
    label = " ".join(w for w in item.tool.name.split("_")[1:] if w) or item.tool.name
    return f"{label[:1].upper()}{label[1:]} {item.key}: {'; '.join(parts)} [{item.citation}]."


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


_NAMING = re.compile(r"(?:\w+_)?(?:name|title)", re.IGNORECASE)  # the fields that name the record itself
_MIN_NAME = 8  # a shorter value ("KB-400", "Filter") is not a name an answer mentions a record by
_MAX_NAMED = 5


def with_identifiers(text: str, results: Sequence[Any], id_fields: Collection[str]) -> tuple[str, list[str]]:
    """``text`` with each record of ``results`` (tool data) that it names by its name or title ("The
    Art of Electronics") but not by its identifier (a field named as some tool's identifier parameter:
    ``book_id`` BK-101) given that identifier after the first mention: "The Art of Electronics
    (BK-101)". What was found is named the way the tools take it, so the user can act on it. Returns
    the text and the identifiers added; nothing when more than a few records are named."""
    found: list[tuple[str, str]] = []  # (identifier, the name the text uses)
    for record in _records(results):
        ids = [v for k, v in record.items() if k in id_fields and isinstance(v, str) and v.strip()]
        if len(ids) != 1 or contains_exactly(text, ids[0]):
            continue
        mention = next((m for k, v in record.items() if _NAMING.fullmatch(k) and isinstance(v, str)
                        and len(v) >= _MIN_NAME and (m := re.search(re.escape(v), text, re.IGNORECASE))), None)
        if mention is not None:
            found.append((ids[0], mention.group(0)))
    if not found or len(found) > _MAX_NAMED:
        return text, []
    for identifier, name in found:  # the name as the text writes it: found again after each insertion
        at = text.index(name) + len(name)
        text = f"{text[:at]} ({identifier}){text[at:]}"
    return text, [identifier for identifier, _ in found]


def _records(value: Any) -> Iterator[Mapping[str, Any]]:
    """Every mapping in ``value`` (a result's data), outermost first."""
    if isinstance(value, Mapping):
        yield value
        for item in value.values():
            yield from _records(item)
    elif isinstance(value, list):
        for item in value:
            yield from _records(item)

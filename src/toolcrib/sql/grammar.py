"""The SQL a small model may write, as a pattern over the real schema: only the allowed tables and their
columns, joins between them, filters, aggregates written in the query.

The embedded model writes its tool calls under a grammar (``models.decision``); this pattern becomes the
grammar of ``sql_query``'s ``query`` argument, so a column or a table that does not exist cannot be written
at all. It covers one SELECT: columns or aggregates (COUNT, SUM, AVG, MIN, MAX, with DISTINCT and AS),
FROM one table with JOINs ON column equalities, WHERE conditions joined by AND/OR (comparisons, LIKE,
BETWEEN, IN, IS NULL) on placeholders or literals, GROUP BY, ORDER BY and LIMIT. Capable models keep the
plain tool (the pattern is never used to validate), and the SQL guard checks every query either way.
"""

from __future__ import annotations

import re

from toolcrib.sql.base import Schema

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_COLUMNS = 400  # a schema wider than this is left to the guard: the grammar would grow too large


def _alternatives(names: list[str]) -> str:
    return "(" + "|".join(names) + ")"


def select_pattern(schema: Schema) -> str | None:
    """The pattern of the SELECTs over ``schema``'s tables (views too), or None when its names need quoting
    or it has more than ``_MAX_COLUMNS`` columns."""
    tables = sorted(schema.columns)
    columns = sorted({c for cols in schema.columns.values() for c, _ in cols})
    qualified = [f"{t}[.]{c}" for t in tables for c, _ in schema.columns[t]]
    if not tables or not all(_NAME.match(n) for n in [*tables, *columns]) or len(qualified) > _MAX_COLUMNS:
        return None
    column = _alternatives(qualified + columns)
    value = "([?]|'[^']*'|-?[0-9]+([.][0-9]+)?)"
    aggregate = f"(COUNT|SUM|AVG|MIN|MAX)[(](DISTINCT )?({column}|[*])[)]"
    item = f"({aggregate}|{column}|[*])( AS [a-z_]+)?"
    condition = (rf"{column} ((=|!=|<>|<|>|<=|>=) {value}|(NOT )?LIKE {value}|BETWEEN {value} AND {value}"
                 f"|IN [(]{value}(, {value})*[)]|IS (NOT )?NULL)")
    table = _alternatives(tables)
    order = rf"({aggregate}|{column}|[a-z_]+)( ASC| DESC)?"
    # no backslash anywhere: llama.cpp's grammar parser takes no escaped "." or "(" in a literal
    return (rf"^SELECT (DISTINCT )?{item}(, {item})* FROM {table}"
            rf"( (LEFT )?JOIN {table} ON {column} = {column})*"
            rf"( WHERE {condition}( (AND|OR) {condition})*)?"
            rf"( GROUP BY {column}(, {column})*)?"
            rf"( ORDER BY {order}(, {order})*)?"
            r"( LIMIT [0-9]+)?$")

"""Names written short: a query that found nothing because it compared a column to part of a value.

A model asks for ``provider = 'Norden Präzisionsteile'`` when the table holds "Norden Präzisionsteile
GmbH", or ``category = 'invoices'`` when it holds "invoice", and the sum comes back NULL: a
confident wrong answer of zero. When a query's result is empty
(no rows, or only NULLs and zeros), each comparison of a column to a text (a literal, or the query's
only parameter) is looked up in that column: a value that contains the text, when exactly one does,
replaces it (else one that contains the text's stem), and the query runs again; a day compared to a column of
timestamps ("opened_at = '2030-01-31'") becomes every time of that day (``LIKE '2030-01-31%'``). The result says what
was resolved, so the answer and the trace can show it; two or more candidates leave the query as written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from toolcrib.text import stem

_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")

# (table as SQL, column as SQL, text) -> the distinct values of that column containing the text
Candidates = Callable[[str, str, str], list[str]]


def is_empty(rows: Sequence[Sequence[Any]]) -> bool:
    """No rows, or rows of NULLs and zeros only (COUNT 0, SUM NULL)."""
    return all(cell is None or cell == 0 for row in rows for cell in row)


def resolve_names(sql: str, params: Sequence[Any], dialect: str,
                  candidates: Candidates) -> tuple[str, list[Any], dict[str, str]] | None:
    """The query with each short text replaced by the one value of its column that contains it, the
    params, and what was replaced (text -> value); None when nothing could be resolved."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    tables = list(tree.find_all(exp.Table))
    aliases = {t.alias_or_name.lower(): t for t in tables}
    placeholders = list(tree.find_all(exp.Placeholder, exp.Parameter))
    values = list(params)
    resolved: dict[str, str] = {}
    for eq in tree.find_all(exp.EQ):
        column, other = eq.this, eq.expression
        if not isinstance(column, exp.Column):
            column, other = other, column
        if not isinstance(column, exp.Column):
            continue
        table = aliases.get(column.table.lower()) if column.table else (tables[0] if len(tables) == 1 else None)
        if table is None:
            continue
        if isinstance(other, exp.Literal) and other.is_string:
            text = other.this
        elif other in placeholders and len(placeholders) == 1 and len(values) == 1 and isinstance(values[0], str):
            text = values[0]
        else:
            continue
        if len(text.strip()) < 3:
            continue
        name = exp.Table(this=table.this.copy(), db=table.args.get("db"))
        table_sql, column_sql = name.sql(dialect=dialect), exp.column(column.name).sql(dialect=dialect)
        found = candidates(table_sql, column_sql, text)
        if _ISO_DAY.fullmatch(text) and found and all(f[len(text):len(text) + 1] in ("T", " ") for f in found):
            # a day compared to a column of timestamps ("opened_at = '2030-01-31'"): every time of that day
            resolved[text] = f"{text}%"
            if isinstance(other, exp.Literal):
                eq.replace(exp.Like(this=column.copy(), expression=exp.Literal.string(f"{text}%")))
            else:
                eq.replace(exp.Like(this=column.copy(), expression=other.copy()))
                values[0] = f"{text}%"
            continue
        if not found and len(short := stem(text)) >= 4 and short != text:  # "invoices" for "invoice"
            found = candidates(table_sql, column_sql, short)
        if len(found) != 1 or found[0] == text:
            continue
        resolved[text] = found[0]
        if isinstance(other, exp.Literal):
            other.replace(exp.Literal.string(found[0]))
        else:
            values[0] = found[0]
    if not resolved:
        return None
    return tree.sql(dialect=dialect), values, resolved

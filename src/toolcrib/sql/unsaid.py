"""Filters nobody gave: a query that found nothing because the model added a condition of its own.

Asked for "the combined value of our contracts with Norden", a small model may write
``WHERE provider = 'Norden' AND provider_region = 'Ireland' AND year = 2023``: the region and the year
appear nowhere in the request or in any earlier result, and the sum comes back NULL. When a query's
result is empty, each top-level ``AND`` condition of its ``WHERE`` that compares a column with a value
the run has not seen (a text, or a number of two digits or more: a 0 or a 1 is how "out of stock" or
"active" is written, never a fact the user states) is dropped, and the query runs again. The result
says which conditions were dropped, so the answer and the trace show it. Never applied to a query
whose result is not empty, never to numbered parameters (``$1``: dropping one renumbers the rest), and
never when it would leave a query of rows (no aggregate) without a condition on a value: its rows would be
the whole table, not what was asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

# whether a value appears in what the run has seen: the request, earlier results
Grounded = Callable[[Any], bool]

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Like, exp.ILike, exp.In, exp.Between)


def drop_unsaid_filters(sql: str, params: Sequence[Any], dialect: str,
                        grounded: Grounded) -> tuple[str, list[Any], list[str]] | None:
    """The query without the ``WHERE`` conditions on values nobody gave, its params, and those
    conditions as SQL; None when it has none (or cannot be read)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    where = tree.args.get("where") if isinstance(tree, exp.Select) else None
    if where is None or any(True for _ in tree.find_all(exp.Parameter)):
        return None
    placeholders = {id(p): i for i, p in enumerate(tree.find_all(exp.Placeholder, bfs=False))}
    kept: list[exp.Expr] = []
    dropped: list[exp.Expr] = []
    unused: set[int] = set()
    conditions = list(where.this.flatten()) if isinstance(where.this, exp.And) else [where.this]
    for condition in conditions:
        values = _compared_values(condition, params, placeholders)
        if values and any(_unsaid(v, grounded) for v in values):
            dropped.append(condition)
            unused |= {placeholders[id(p)] for p in condition.find_all(exp.Placeholder)}
        else:
            kept.append(condition)
    if not dropped:
        return None
    if not tree.find(exp.AggFunc) and not any(_compared_values(c, params, placeholders) for c in kept):
        return None  # every row of the table: not what any condition asked for (a total over it would be)
    shown = [_with_values(c, params, placeholders).sql(dialect=dialect) for c in dropped]
    if kept:
        where.set("this", exp.and_(*kept))
    else:
        tree.set("where", None)
    return tree.sql(dialect=dialect), [v for i, v in enumerate(params) if i not in unused], shown


def _with_values(condition: exp.Expr, params: Sequence[Any], placeholders: dict[int, int]) -> exp.Expr:
    """A copy of ``condition`` with each placeholder written as its value, for people to read."""
    copy = condition.copy()
    pairs = list(zip(condition.find_all(exp.Placeholder, bfs=False), copy.find_all(exp.Placeholder, bfs=False),
                     strict=True))
    for original, node in pairs:
        value = params[placeholders[id(original)]]
        node.replace(exp.Null() if value is None else exp.Literal.string(value) if isinstance(value, str)
                     else exp.Literal.number(value))
    return copy


def _compared_values(condition: exp.Expr, params: Sequence[Any], placeholders: dict[int, int]) -> list[Any]:
    """The values a column is compared with in ``condition`` (a literal, or the param of a placeholder);
    empty when it is not such a comparison (a subquery, a function of two columns, an OR)."""
    if not isinstance(condition, _COMPARISONS) or not any(True for _ in condition.find_all(exp.Column)):
        return []
    if any(True for _ in condition.find_all(exp.Select)):
        return []
    values: list[Any] = []
    for node in condition.find_all(exp.Literal, exp.Placeholder):
        if isinstance(node, exp.Placeholder):
            i = placeholders.get(id(node))
            if i is None or i >= len(params):
                return []
            values.append(params[i])
        elif node.is_string:
            values.append(node.this)
        else:
            values.append(_number(node.this))
    return values


def _number(text: str) -> float | int | str:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _unsaid(value: Any, grounded: Grounded) -> bool:
    """A text (its LIKE wildcards aside) or a number of two digits or more that the run has not seen."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, (int, float)):
        return abs(value) >= 10 and not grounded(value)
    text = str(value).strip("%_ ")
    return bool(text) and not grounded(text)

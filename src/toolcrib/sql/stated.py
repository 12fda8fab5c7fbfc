"""Filters the request states: a query that reads the table of a value the request names, and leaves it out.

Asked "What is the average price of our surgery services?", a small model may write
``SELECT AVG(price_gbp) FROM services``: the request names "surgery", a value stored in
``services.category``, and the average comes back over every service. Before a query runs, each value
the request names (``ValueIndex.stated``) whose table the query reads, and whose column the query does
not mention at all (not in what it selects, filters, groups or orders by), is added to its ``WHERE``: an
equality, or ``IN`` for several values of one column. A column the query mentions is the model's to
filter as it chose ("not cancelled", a grouping). The result says which filters were added, so the answer
and the trace show it. Only a plain SELECT (no subquery, CTE or set operation) is changed, and only a
table the query reads once.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

# a value the request names: (table, column, the value as stored)
Stated = tuple[str, str, str]


def add_stated_filters(sql: str, dialect: str, stated: Sequence[Stated]) -> tuple[str, list[str]] | None:
    """The query with the filters the request states and it leaves out, and those filters as SQL; None when
    it leaves none out (or cannot be read, or is more than a plain SELECT)."""
    if not stated:
        return None
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("with") or len(list(tree.find_all(exp.Select))) > 1:
        return None
    tables = list(tree.find_all(exp.Table))
    read = {t.name.casefold(): t for t in tables}
    if len(read) != len(tables):
        return None  # a table read twice: which of its rows a filter is for is not code's to say
    mentioned = list(tree.find_all(exp.Column))
    wanted: dict[tuple[str, str], list[str]] = {}
    for table, column, value in stated:
        node = read.get(table.casefold())
        if node is None or _mentions(mentioned, node, column, len(tables)):
            continue
        wanted.setdefault((node.alias_or_name, column), []).append(value)
    if not wanted:
        return None
    added: list[exp.Expr] = []
    for (qualifier, column), values in wanted.items():
        target = exp.column(column, table=qualifier if len(tables) > 1 else None)
        literals = [exp.Literal.string(v) for v in dict.fromkeys(values)]
        added.append(exp.EQ(this=target, expression=literals[0]) if len(literals) == 1
                     else exp.In(this=target, expressions=literals))
    where = tree.args.get("where")
    condition = exp.and_(*(([where.this] if where is not None else []) + added))
    tree.set("where", exp.Where(this=condition))
    return tree.sql(dialect=dialect), [a.sql(dialect=dialect) for a in added]


def _mentions(columns: list[exp.Column], table: exp.Table, column: str, tables: int) -> bool:
    """Whether the query mentions ``table``'s ``column`` anywhere (a bare name counts when it reads one
    table, or could mean this one)."""
    own = {table.name.casefold(), table.alias_or_name.casefold()}
    return any(c.name.casefold() == column.casefold() and (not c.table or c.table.casefold() in own or tables == 1)
               for c in columns)

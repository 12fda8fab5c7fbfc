"""The SQL a small model may write, as a pattern over the real schema: only the allowed tables and their
columns, joins along their foreign keys, filters on the values stored, aggregates and arithmetic of the
right types written in the query.

The embedded model writes its tool calls under a grammar (``models.decision``); this pattern becomes the
grammar of ``sql_query``'s ``query`` argument, so what does not exist cannot be written at all: a column of
another table than the one read, a join between columns that do not refer to each other, a sum of a text,
a status the column never holds. It covers one SELECT:

- over one table: its columns, written bare; over joined tables: every column written with its table;
- columns, one arithmetic operation between numeric columns and numbers (``price * stock``), aggregates
  (COUNT of anything; SUM and AVG of numbers; MIN and MAX), ROUND and AS;
- JOINs along the declared foreign keys (any column equality when the schema declares none);
- WHERE conditions joined by AND/OR, one level of brackets: comparisons with a value or another column,
  LIKE, BETWEEN, IN, IS NULL; a column of kinds (a status, a category: ``kinds``) is compared with one of
  its stored values or a placeholder;
- GROUP BY, HAVING, ORDER BY and LIMIT.

Capable models keep the plain tool (the pattern is never used to validate), and the SQL guard checks every
query either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from toolcrib.sql.base import ReadOnlySQL, Schema
from toolcrib.sql.introspect import json_type
from toolcrib.sql.values import KINDS, holds_kinds

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MAX_COLUMNS = 400  # a schema wider than this is left to the guard: the grammar would grow too large
_PLAIN = re.compile(r"[A-Za-z0-9 _-]")  # characters a pattern may hold as they are
_NUMBER = "-?[0-9]+([.][0-9]+)?"
_VALUE = f"([?]|'[^']*'|{_NUMBER})"
_COMPARISON = "(=|!=|<>|<|>|<=|>=)"
_WORDS = re.compile(r"[A-Za-z][A-Za-z .'_-]{0,39}")  # a kind is written in words, not a date, number or code

# (table, column) -> the values it holds, for the columns of kinds
Kinds = Mapping[tuple[str, str], Sequence[str]]


def _alternatives(names: Sequence[str]) -> str:
    return "(" + "|".join(names) + ")"


def _literal(text: str) -> str | None:
    """``text`` as a pattern that matches it alone (each other character in brackets), or None when it holds
    a quote, a backslash or a bracket (llama.cpp's grammar parser takes no escapes)."""
    if any(c in text for c in "'\\\"[]^") or not text.isprintable():
        return None
    return "".join(c if _PLAIN.match(c) else f"[{c}]" for c in text)


@dataclass(frozen=True)
class _Columns:
    """The columns one form of the query may name, each written as it must be (bare or with its table)."""

    every: list[str]
    numeric: list[str]  # numbers, or of no declared type (SQLite)
    free: list[str]  # compared with any value
    kinds: dict[str, str]  # written name -> the pattern of its stored values

    def clauses(self) -> tuple[str, str]:
        """The pattern of everything after the tables (WHERE on), and of one select item."""
        column = _alternatives(self.every)
        number = _alternatives([*self.numeric, _NUMBER]) if self.numeric else _NUMBER
        arithmetic = f"{number}( [-+*/] {number})?"
        summed = f"(SUM|AVG)[(](DISTINCT )?{arithmetic}[)]|" if self.numeric else ""
        aggregate = f"(COUNT[(](DISTINCT )?({column}|[*])[)]|{summed}(MIN|MAX)[(]{column}[)])"
        figure = f"({aggregate}( [-+*/] ({aggregate}|{_NUMBER}))?|{arithmetic}|{column})"
        item = f"(ROUND[(]{figure}, [0-9][)]|{figure}|[*])( AS [a-z_]+)?"
        tests = [f"{arithmetic} {_COMPARISON} ({_VALUE}|{number})"] if self.numeric else []
        if self.free:
            free = _alternatives(self.free)
            tests += [f"{free} ({_COMPARISON} ({_VALUE}|{free})|(NOT )?LIKE {_VALUE}|BETWEEN {_VALUE} AND {_VALUE}"
                      f"|(NOT )?IN [(]{_VALUE}(, {_VALUE})*[)])"]
        for name, values in self.kinds.items():
            kind = f"([?]|'{values}')"
            tests.append(f"{name} ((=|!=|<>) {kind}|(NOT )?IN [(]{kind}(, {kind})*[)])")
        tests.append(f"{column} IS (NOT )?NULL")
        test = _alternatives(tests)
        condition = f"({test}|[(]{test}( (AND|OR) {test})+[)])"
        order = f"({aggregate}|{arithmetic}|{column}|[a-z_]+)( ASC| DESC)?"
        return (rf"( WHERE {condition}( (AND|OR) {condition})*)?"
                rf"( GROUP BY {column}(, {column})*( HAVING {aggregate} {_COMPARISON} {_VALUE})?)?"
                rf"( ORDER BY {order}(, {order})*)?"
                r"( LIMIT [0-9]+)?"), item


def _columns(schema: Schema, tables: Sequence[str], kinds: Kinds, *, qualified: bool) -> _Columns:
    every: list[str] = []
    numeric: list[str] = []
    free: list[str] = []
    kinded: dict[str, str] = {}
    for table in tables:
        for name, declared in schema.columns[table]:
            written = f"{table}[.]{name}" if qualified else name
            every.append(written)
            if json_type(declared) != "string" or not declared.strip():
                numeric.append(written)
            stored = [_literal(v) for v in kinds.get((table, name), ())]
            if stored and all(stored):
                kinded[written] = _alternatives([v for v in stored if v])
            elif json_type(declared) == "string":
                free.append(written)
    return _Columns(every, numeric, free, kinded)


def _joins(schema: Schema, table: str) -> str:
    """A JOIN clause: along a declared foreign key (either table joined, the equality either way round),
    or of any two columns when the schema declares none."""
    if not schema.foreign_keys:
        column = _alternatives([f"{t}[.]{c}" for t in sorted(schema.columns) for c, _ in schema.columns[t]])
        return rf"(LEFT )?JOIN {table} ON {column} = {column}"
    along = []
    for k in schema.foreign_keys:
        own, theirs = f"{k.table}[.]{k.column}", f"{k.target}[.]{k.key}"
        along += [f"{joined} ON {a} = {b}" for joined in dict.fromkeys((k.target, k.table))
                  for a, b in ((own, theirs), (theirs, own))]
    return "(LEFT )?JOIN " + _alternatives(along)


def closed_columns(sql: ReadOnlySQL) -> dict[tuple[str, str], tuple[str, ...]]:
    """The text columns of ``sql``'s allowed tables (views aside) that hold kinds: a few distinct values of
    words (``no_show``, ``Dr Priya Patel``; no dates, numbers or codes), each on several rows. Their values
    as stored, by (table, column)."""
    schema = sql.schema()
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for table, columns in schema.columns.items():
        if table in schema.views or not _NAME.match(table):
            continue
        for column, declared in columns:
            if json_type(declared) != "string" or not declared.strip() or not _NAME.match(column):
                continue
            rows = sql.execute_unchecked(f'SELECT "{column}", COUNT(*) FROM "{table}" WHERE "{column}" IS NOT NULL '
                                         f'GROUP BY "{column}" LIMIT {KINDS + 1}')["rows"]
            values = [str(v) for v, _ in rows]
            if (holds_kinds(len(values), sum(n for _, n in rows))
                    and all(_WORDS.fullmatch(v) and _literal(v) for v in values)):
                found[(table, column)] = tuple(values)
    return found


def select_pattern(schema: Schema, kinds: Kinds | None = None) -> str | None:
    """The pattern of the SELECTs over ``schema``'s tables (views too), with ``kinds`` (the stored values of
    the columns of kinds) the only values those columns are compared with; None when its names need
    quoting or it has more than ``_MAX_COLUMNS`` columns."""
    tables = sorted(schema.columns)
    names = [n for t in tables for c, _ in schema.columns[t] for n in (t, c)]
    if not tables or not all(_NAME.match(n) for n in names) or len(names) // 2 > _MAX_COLUMNS:
        return None
    forms = []
    for table in tables:  # one table, its columns bare
        clauses, item = _columns(schema, [table], kinds or {}, qualified=False).clauses()
        forms.append(f"SELECT (DISTINCT )?{item}(, {item})* FROM {table}{clauses}")
    if len(tables) > 1:  # joined tables, every column with its table
        clauses, item = _columns(schema, tables, kinds or {}, qualified=True).clauses()
        forms.append(f"SELECT (DISTINCT )?{item}(, {item})* FROM {_alternatives(tables)}"
                     f"( {_joins(schema, _alternatives(tables))})+{clauses}")
    # no backslash anywhere: llama.cpp's grammar parser takes no escaped "." or "(" in a literal
    return "^(" + "|".join(forms) + ")$"

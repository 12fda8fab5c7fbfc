"""The ``ReadOnlySQL`` seam: validate statically, then run with the database's own read-only guards."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, ClassVar, NotRequired, TypedDict

from toolcrib.errors import InvalidArguments
from toolcrib.sql.guard import CheckedQuery, check_select, fold_allowlist
from toolcrib.sql.names import is_empty, resolve_names
from toolcrib.sql.stated import Stated, add_stated_filters
from toolcrib.sql.unsaid import Grounded, drop_unsaid_filters

Param = str | int | float | None


class QueryResult(TypedDict):
    """What a query returns to the model: at most ``row_cap`` rows and ``max_chars`` of JSON; and,
    when a text compared in the query was resolved to the one value that contains it, which; when
    conditions on values nobody gave were dropped from a query that found nothing, which; when filters
    the request states were added to a query that left them out, which; when an
    output column is named for what its expression does not read, its expression (``claimed``)."""

    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    resolved: NotRequired[dict[str, str]]
    dropped_filters: NotRequired[list[str]]
    added_filters: NotRequired[list[str]]
    claimed: NotRequired[dict[str, str]]


@dataclass(frozen=True)
class ForeignKey:
    """A declared reference between two allowed tables: ``table.column`` holds ``target.key``'s values."""

    table: str
    column: str
    target: str
    key: str


@dataclass(frozen=True)
class Schema:
    """The allowed part of a database: columns (name, type) per table or view, view definitions and the
    foreign keys between allowed tables."""

    columns: Mapping[str, Sequence[tuple[str, str]]]
    views: Mapping[str, str] = field(default_factory=dict)
    foreign_keys: Sequence[ForeignKey] = ()


def allowed_keys(keys: Iterable[ForeignKey],
                 columns: Mapping[str, Sequence[tuple[str, str]]]) -> tuple[ForeignKey, ...]:
    """The foreign keys whose both ends are columns of allowed tables, named as ``columns`` names them."""
    named = {t.lower(): (t, {c.lower(): c for c, _ in cols}) for t, cols in columns.items()}
    found = []
    for k in keys:
        (table, own), (target, theirs) = named.get(k.table.lower(), ("", {})), named.get(k.target.lower(), ("", {}))
        if k.column.lower() in own and k.key.lower() in theirs:
            found.append(ForeignKey(table, own[k.column.lower()], target, theirs[k.key.lower()]))
    return tuple(dict.fromkeys(found))


class ReadOnlySQL(ABC):
    """A read-only SQL database restricted to an allowlist of tables.

    ``query`` is the one path for model- and user-supplied SQL: the static check in
    ``toolcrib.sql.guard``, then ``execute_unchecked``, whose backends keep the database itself
    read-only (SQLite: read-only file + authorizer; PostgreSQL: SELECT-only role + read-only
    transaction), so that a statement the parser misjudged is still refused.
    """

    dialect: ClassVar[str] = "sqlite"
    placeholder_hint: ClassVar[str] = "write ? for each value, in order"
    placeholder: ClassVar[str] = "?"  # the first placeholder, as the driver takes it
    contains: ClassVar[str] = "LIKE"  # a case-insensitive match

    def __init__(self, allowed_tables: Iterable[str], *, row_cap: int = 200, timeout_s: float = 5.0,
                 max_chars: int = 20_000) -> None:
        self.allowed_tables: frozenset[str] = fold_allowlist(list(allowed_tables), self.dialect)
        if row_cap < 1 or timeout_s <= 0 or max_chars < 100:
            raise ValueError("row_cap must be >= 1, timeout_s > 0 and max_chars >= 100")
        self.row_cap = row_cap
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self._schema: Schema | None = None

    # -- the real work -------------------------------------------------------------------------
    @abstractmethod
    def execute_unchecked(self, sql: str, params: Sequence[Param] = ()) -> QueryResult:
        """Run ``sql`` with only the database's own guards: no parser, no allowlist check.

        Never pass model or user text here; use ``query``. It exists so the backends' read-only
        guarantees can be exercised (and tested) on their own.
        """

    @abstractmethod
    def load_schema(self) -> Schema:
        """Introspect the allowed tables' columns and the definitions of views among them."""

    # -- shared behaviour ----------------------------------------------------------------------
    def schema(self) -> Schema:
        """The allowed part of the schema, loaded once."""
        if self._schema is None:
            self._schema = self.load_schema()
        return self._schema

    def check(self, sql: str) -> CheckedQuery:
        """The static check alone: raises ``InvalidArguments``/``NotPermitted`` or returns facts."""
        return check_select(sql, self.allowed_tables, dialect=self.dialect,
                            views=self.schema().views, schemas=self.default_schemas())

    def default_schemas(self) -> tuple[str, ...]:
        """Qualifiers that name the default schema (``main.t`` in SQLite)."""
        return ("main",)

    def query(self, sql: str, params: Sequence[Param] | None = None, *,
              grounded: Grounded | None = None, stated: Sequence[Stated] = ()) -> QueryResult:
        """Validate, then run one read-only SELECT with bound parameters, with the filters the request
        states (``stated``: the values it names, where they are stored) that the query leaves out added.
        An empty result is retried with names written short resolved (``names``) and, given ``grounded``
        (whether the run has seen a value), without the conditions on values nobody gave (``unsaid``); the
        first that finds something is returned, saying what it changed."""
        values = _check_params(params)
        checked = self.check(sql)
        if checked.placeholders != len(values):
            raise InvalidArguments(
                f"the query has {checked.placeholders} placeholder(s) but {len(values)} param(s) "
                f"were given; {self.placeholder_hint}"
            )
        stating = add_stated_filters(sql, self.dialect, stated)
        if stating is not None:
            sql, added = stating
            self.check(sql)
        result = self._with_retries(sql, values, grounded)
        if stating is not None:
            result["added_filters"] = added
        if checked.claimed:  # "MAX(year) AS delivery_lead_time": the reader must know what was computed
            result["claimed"] = dict(checked.claimed)
        return result

    def _with_retries(self, sql: str, values: list[Param], grounded: Grounded | None) -> QueryResult:
        result = self.execute_unchecked(sql, values)
        if not is_empty(result["rows"]):
            return result
        resolved = self._with_names_resolved(sql, values)
        if resolved is not None:
            return resolved
        relaxed = drop_unsaid_filters(sql, values, self.dialect, grounded) if grounded is not None else None
        if relaxed is None:
            return result
        sql, values, dropped = relaxed
        found = self._found(sql, values) or self._with_names_resolved(sql, values)
        if found is None:
            return result
        found["dropped_filters"] = dropped
        return found

    def _with_names_resolved(self, sql: str, values: list[Param]) -> QueryResult | None:
        """The result of ``sql`` with its short names resolved, saying which; None when none was, or it
        still found nothing."""
        relaxed = resolve_names(sql, values, self.dialect, self._containing)
        if relaxed is None:
            return None
        sql, values, resolved = relaxed
        found = self._found(sql, values)
        if found is not None:
            found["resolved"] = resolved
        return found

    def _found(self, sql: str, values: list[Param]) -> QueryResult | None:
        """A rewrite of the caller's query, checked again and run; None when it finds nothing."""
        self.check(sql)
        result = self.execute_unchecked(sql, values)
        return None if is_empty(result["rows"]) else result

    def _containing(self, table: str, column: str, text: str) -> list[str]:
        """Up to two distinct text values of ``column`` in ``table`` that contain ``text``."""
        pattern = "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        sql = (f"SELECT DISTINCT {column} FROM {table} WHERE CAST({column} AS TEXT) {self.contains} "
               f"{self.placeholder} ESCAPE '\\' LIMIT 2")
        self.check(sql)
        return [str(row[0]) for row in self.execute_unchecked(sql, [pattern])["rows"] if row[0] is not None]

    def describe_schema(self) -> str:
        """A compact text of the allowed tables and their columns, for the tool description."""
        schema = self.schema()
        lines = [f"Tables you can query ({self.dialect_label()}):"]
        for name in sorted(schema.columns):
            cols = ", ".join(f"{c} {t}".strip() for c, t in schema.columns[name])
            kind = " (view)" if _has_view(schema, name, self.dialect) else ""
            lines.append(f"- {name}{kind}({cols})")
        lines.append(f"Parameters: {self.placeholder_hint}; never put values into the SQL text.")
        return "\n".join(lines)

    def dialect_label(self) -> str:
        return "SQLite"

    def close(self) -> None:
        """Release the connection. Does nothing by default."""

    def __enter__(self) -> ReadOnlySQL:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def shape(self, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, more: bool) -> QueryResult:
        """Cap rows by size: stop before the JSON of the rows passes ``max_chars``."""
        budget = self.max_chars - len(json.dumps(list(columns)))
        cell_cap = max(50, self.max_chars // 4)
        out: list[list[Any]] = []
        truncated = more
        for row in rows:
            cells = [_cell(v, cell_cap) for v in row]
            size = len(json.dumps(cells, default=str)) + 1
            if any(isinstance(v, str) and v.endswith("…[cut]") for v in cells):
                truncated = True
            if size > budget:
                truncated = True
                break
            budget -= size
            out.append(cells)
        return {"columns": list(columns), "rows": out, "row_count": len(out), "truncated": truncated}


def _has_view(schema: Schema, name: str, dialect: str) -> bool:
    folded = name.lower() if dialect == "sqlite" else name
    return any((k.lower() if dialect == "sqlite" else k) == folded for k in schema.views)


def _check_params(params: Sequence[Param] | None) -> list[Param]:
    if params is None:
        return []
    if isinstance(params, (str, bytes)) or not isinstance(params, Sequence):
        raise InvalidArguments("params must be a list of values")
    for value in params:
        if isinstance(value, bool) or not isinstance(value, (str, int, float, type(None))):
            raise InvalidArguments("each param must be a string, a number or null")
    return list(params)


def _cell(value: Any, cap: int) -> Any:
    """A JSON-ready cell; long text is cut and marked."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return f"<{len(bytes(value))} bytes>"
    if isinstance(value, (dt.timedelta, uuid.UUID)):
        return str(value)
    if isinstance(value, (list, dict)):
        value = json.dumps(value, default=str)
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= cap else text[:cap] + "…[cut]"

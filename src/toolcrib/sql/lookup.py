"""Lookup tools generated from a database's schema: ``lookup_<table>`` reads one row by its key, or the
rows a name-like text column names, through the workspace's read-only SQL guard.

A workspace declares them in ``[[lookups]]`` (``toolcrib init --database`` writes one per table); the
columns' types come from the database when the workspace opens, so the arguments are typed like the
hand-written lookups' and their values are grounded like theirs: each is an identifier the request or
an earlier result must hold.
"""

from __future__ import annotations

import re
from typing import Any

from toolcrib.errors import ConfigError, InvalidArguments, ToolFailed
from toolcrib.sql.base import ReadOnlySQL
from toolcrib.sql.introspect import json_type
from toolcrib.tools.json_schema import json_schema_tool
from toolcrib.tools.tool import Effect, Tool, ToolContext

SQL_RESOURCE = "sql"
_MATCHES = 5  # rows a name may return before the user is asked to be more precise


def lookup_name(table: str) -> str:
    """``lookup_<table>``, in the characters a tool name may hold."""
    return "lookup_" + re.sub(r"[^A-Za-z0-9_]+", "_", table).strip("_").lower()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def make_lookup_tool(table: str, key: list[str], names: list[str], columns: dict[str, str], *,
                     dialect_placeholder: str = "?", description: str = "") -> Tool:
    """The ``lookup_<table>`` tool. ``columns``: each column's declared type (``rowid`` may be a key
    column of a SQLite table without a primary key); ``dialect_placeholder``: ``?`` or ``$1``."""
    typed = {name.lower(): (name, kind) for name, kind in columns.items()}
    for column in [*key, *names]:
        if column.lower() not in typed and column.lower() != "rowid":
            raise ConfigError(f"lookup of {table}: the table has no column '{column}'", key="lookups")
    name_param = "name" if "name" not in {k.lower() for k in key} else "row_name"
    properties: dict[str, Any] = {}
    for column in key:
        kind = "integer" if column.lower() == "rowid" else json_type(typed[column.lower()][1])
        properties[column] = {"type": kind, "description": f"the {table} row's {column}"}
    if names:
        properties[name_param] = {"type": "string",
                                  "description": f"what the row is called ({', '.join(names)}), as the user wrote it"}
    schema = {"type": "object", "properties": properties, "required": [] if names else list(key)}
    numbered = dialect_placeholder != "?"

    def ph(i: int) -> str:  # numbered, so several name columns share one value
        return f"${i}" if numbered else f"?{i}"

    select = f"SELECT {'rowid AS rowid, ' if any(k.lower() == 'rowid' for k in key) else ''}* FROM {_quote(table)}"

    def lookup(ctx: ToolContext, **arguments: Any) -> dict[str, Any]:
        sql = ctx.resources.get(SQL_RESOURCE)
        if not isinstance(sql, ReadOnlySQL):
            raise ToolFailed("no SQL database is configured for this workspace")
        given = [k for k in key if arguments.get(k) is not None]
        wanted = str(arguments.get(name_param) or "").strip()
        if given:
            if len(given) != len(key):
                raise InvalidArguments(f"{lookup_name(table)}: give every key column ({', '.join(key)})")
            where = " AND ".join(f"{_quote(k)} = {ph(i)}" for i, k in enumerate(key, start=1))
            result = sql.execute_unchecked(f"{select} WHERE {where} LIMIT 2", [arguments[k] for k in key])
            asked: dict[str, Any] = {k: arguments[k] for k in key}
        elif wanted and names:
            # the exact name first, in any case; then the rows whose name contains the text
            exact = " OR ".join(f"lower(CAST({_quote(n)} AS TEXT)) = lower({ph(1)})" for n in names)
            result = sql.execute_unchecked(f"{select} WHERE {exact} LIMIT {_MATCHES + 1}", [wanted])
            if not result["rows"]:
                part = " OR ".join(f"CAST({_quote(n)} AS TEXT) {sql.contains} {ph(1)}" for n in names)
                result = sql.execute_unchecked(f"{select} WHERE {part} LIMIT {_MATCHES + 1}", [f"%{wanted}%"])
            asked = {name_param: wanted}
        else:
            what = " or ".join([", ".join(key), *([name_param] if names else [])])
            raise InvalidArguments(f"{lookup_name(table)}: give {what}")
        rows = [dict(zip(result["columns"], row, strict=True)) for row in result["rows"]]
        if not rows:
            return {"found": False, **asked, "message": f"No {table} row matches {asked}."}
        if len(rows) == 1:
            return {"found": True, **rows[0]}
        return {"found": True, "count": min(len(rows), _MATCHES), "rows": rows[:_MATCHES],
                "more": len(rows) > _MATCHES, "message": "Several rows match; give the key to pick one."}

    by = f" or by name ({', '.join(names)})" if names else ""
    # the first sentence says what a row holds, in words: how a request's words find the tool that returns them
    held = [c.replace("_", " ") for c in columns if c.lower() not in {k.lower() for k in key}][:12]
    text = description or (f"Look up one {table} record by its {', '.join(key)}{by}: its "
                           f"{', '.join(held) or 'columns'}. Read-only.")
    return json_schema_tool(lookup_name(table), text, schema, lookup, context_param="ctx", effect=Effect.READ,
                            identifiers=[*key, *([name_param] if names else [])], tags=(SQL_RESOURCE,))


def lookup_tools(sql: ReadOnlySQL, lookups: list[tuple[str, list[str], list[str], str]]) -> list[Tool]:
    """One tool per ``(table, key, names, description)``, typed from ``sql``'s schema; a table the SQL
    guard does not allow is a configuration error."""
    schema = {t.lower(): dict(cols) for t, cols in sql.schema().columns.items()}
    tools = []
    for table, key, names, description in lookups:
        columns = schema.get(table.lower())
        if columns is None:
            raise ConfigError(f"lookup of {table}: no such table among [sql] allowed_tables", key="lookups")
        tools.append(make_lookup_tool(table, key, names, columns, dialect_placeholder=sql.placeholder,
                                      description=description))
    return tools

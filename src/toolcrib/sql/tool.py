"""The model-facing ``sql_query`` tool and the CLI's entry to the same validation path."""

from __future__ import annotations

from collections.abc import Sequence

from toolcrib.errors import ModelFacingError, ToolFailed
from toolcrib.sql.base import QueryResult, ReadOnlySQL
from toolcrib.tools.tool import Effect, Tool, ToolContext, make_tool

SQL_RESOURCE = "sql"

_DESCRIPTION = (
    "Run one read-only SQL SELECT against the workspace database and get rows back as JSON "
    "(columns, rows, row_count, truncated). Use it for counts, sums, averages, maxima and filters "
    "over records (\"how many\", \"total\", \"in year Y\"). NOT for what a document, clause or "
    "policy says. Only the workspace's allowed tables can be read. "
    "Put every literal value (names, ids, dates, numbers from the question) in params and refer to it with "
    "a placeholder instead of writing it into the SQL text."
)


def make_sql_query_tool(schema_text: str = "", *, timeout_s: float = 10.0, pattern: str | None = None) -> Tool:
    """Build the ``sql_query`` tool; ``schema_text`` (from ``ReadOnlySQL.describe_schema()``)
    goes into the description so the model knows the tables and columns of this workspace, and ``pattern``
    (``grammar.select_pattern``) is what a model decoding under a grammar writes the query in."""

    def sql_query(query: str, params: list[str | int | float | None] | None = None, *,
                  ctx: ToolContext) -> QueryResult:
        """Run one read-only SELECT.

        Args:
            query: exactly one SELECT statement (WITH, JOIN, subqueries and UNION are fine).
            params: the values for the query's placeholders, in order.
        """
        database = ctx.resources.get(SQL_RESOURCE)
        if not isinstance(database, ReadOnlySQL):
            raise ToolFailed("no SQL database is configured for this workspace")
        return database.query(query, params or [], grounded=ctx.grounded, stated=ctx.stated)

    description = _DESCRIPTION + ("\n" + schema_text.strip() if schema_text.strip() else "")
    return make_tool(sql_query, name="sql_query", description=description, effect=Effect.READ,
                     timeout_s=timeout_s, tags=(SQL_RESOURCE,), grammar={"query": pattern} if pattern else {})


sql_query = make_sql_query_tool()


def run_sql_cli(sql: ReadOnlySQL, query: str, params: Sequence[str]) -> dict[str, object]:
    """``toolcrib sql``: the same checks as the tool; errors come back in the tool's error shape."""
    try:
        return {"ok": True, **sql.query(query, list(params))}
    except ModelFacingError as exc:
        return exc.to_result()

"""Read-only structured queries: a static SELECT/allowlist check, then databases kept read-only
by their own rules (SQLite authorizer on a read-only file; PostgreSQL SELECT-only role)."""

from toolcrib.sql.base import QueryResult, ReadOnlySQL, Schema
from toolcrib.sql.guard import CheckedQuery, check_select
from toolcrib.sql.postgres import PostgresReadOnly, provision_readonly_role
from toolcrib.sql.sqlite import SQLiteReadOnly
from toolcrib.sql.tool import make_sql_query_tool, run_sql_cli, sql_query

__all__ = [
    "CheckedQuery",
    "PostgresReadOnly",
    "QueryResult",
    "ReadOnlySQL",
    "SQLiteReadOnly",
    "Schema",
    "check_select",
    "make_sql_query_tool",
    "provision_readonly_role",
    "run_sql_cli",
    "sql_query",
]

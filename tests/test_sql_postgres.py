"""PostgresReadOnly on a real PostgreSQL: a scratch database and a SELECT-only role per session."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from toolcrib.errors import InvalidArguments, ModelFacingError, NotPermitted, ToolTimeout
from toolcrib.sql import PostgresReadOnly, provision_readonly_role
from toolcrib.sql.base import ForeignKey

psycopg = pytest.importorskip("psycopg")
pytestmark = pytest.mark.postgres

SERVER = "host=127.0.0.1 port=5432 user=postgres connect_timeout=3"
ALLOWED = ["orders", "customers", "big_orders", "leaky"]


@pytest.fixture(scope="module")
def scratch() -> Iterator[tuple[str, str]]:
    """(dsn of a fresh database, name of its read-only role); both dropped afterwards."""
    try:
        admin = psycopg.connect(f"{SERVER} dbname=test", autocommit=True)
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    name = f"toolcrib_sqltest_{uuid.uuid4().hex[:10]}"
    role = f"{name}_ro"
    admin.execute(f'CREATE DATABASE "{name}"')
    dsn = f"{SERVER} dbname={name}"
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("""
                CREATE TABLE customers (id int PRIMARY KEY, name text NOT NULL);
                CREATE TABLE orders (id int PRIMARY KEY, customer_id int REFERENCES customers, total numeric(10, 2),
                                     placed date);
                CREATE TABLE payroll (id int PRIMARY KEY, name text, salary numeric);
                CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
                CREATE VIEW leaky AS SELECT o.id, p.salary FROM orders o JOIN payroll p ON p.id = o.id;
                INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bob');
                INSERT INTO payroll VALUES (1, 'Ann', 99000);
                INSERT INTO orders SELECT i, 1 + i % 2, i * 10, date '2024-01-01' + i FROM generate_series(1, 50) i;
            """)
        provision_readonly_role(dsn, role, ALLOWED)
        yield dsn, role
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{role}"')
        admin.close()


@pytest.fixture()
def db(scratch: tuple[str, str]) -> Iterator[PostgresReadOnly]:
    dsn, role = scratch
    database = PostgresReadOnly(dsn, ALLOWED, role=role, row_cap=10, timeout_s=1)
    yield database
    database.close()


def _count_orders(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM orders").fetchone()
    return int(row[0]) if row else -1


def _error(call: object, *args: object) -> ModelFacingError:
    with pytest.raises(ModelFacingError) as info:
        call(*args)  # type: ignore[operator]
    return info.value


def test_the_schema_holds_the_foreign_keys_between_allowed_tables(db: PostgresReadOnly) -> None:
    assert db.schema().foreign_keys == (ForeignKey("orders", "customer_id", "customers", "id"),)


def test_answers_a_parameterized_select(db: PostgresReadOnly) -> None:
    result = db.query("SELECT c.name, count(*) AS n, sum(o.total) AS total FROM orders o "
                      "JOIN customers c ON c.id = o.customer_id WHERE o.total >= $1 GROUP BY c.name "
                      "ORDER BY c.name", [250])
    assert result == {"columns": ["name", "n", "total"], "rows": [["Ann", 13, 4940], ["Bob", 13, 4810]],
                      "row_count": 2, "truncated": False}
    assert db.query("SELECT placed FROM orders WHERE id = $1", ["1"])["rows"] == [["2024-01-02"]]


def test_row_cap_and_empty_results(db: PostgresReadOnly) -> None:
    capped = db.query("SELECT generate_series(1, 1000000) AS n")  # far over the cap, quick on a loaded machine
    assert capped["row_count"] == 10 and capped["truncated"] is True
    empty = db.query("SELECT id FROM orders WHERE id < $1", [0])
    assert empty == {"columns": ["id"], "rows": [], "row_count": 0, "truncated": False}


def test_a_runaway_recursive_cte_times_out(db: PostgresReadOnly) -> None:
    err = _error(db.query, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                           "SELECT count(*) FROM c")
    assert isinstance(err, ToolTimeout)
    assert err.message == "statement timed out after 1s"
    assert db.query("SELECT count(*) FROM orders")["rows"] == [[50]]


def test_params_stay_data(db: PostgresReadOnly, scratch: tuple[str, str]) -> None:
    assert db.query("SELECT * FROM customers WHERE name = $1", ["x' OR '1'='1"])["row_count"] == 0
    assert db.query("SELECT $1::text AS v", ["1; DELETE FROM orders"])["rows"] == [["1; DELETE FROM orders"]]
    assert _count_orders(scratch[0]) == 50


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM payroll", "table payroll is not available"),
    ("SELECT * FROM orders WHERE id IN (SELECT id FROM payroll)", "table payroll is not available"),
    ("WITH p AS (SELECT * FROM payroll) SELECT * FROM p", "table payroll is not available"),
    ("WITH payroll AS (SELECT * FROM payroll) SELECT * FROM payroll", "table payroll is not available"),
    ("SELECT id FROM orders UNION SELECT id FROM payroll", "table payroll is not available"),
    ("SELECT * FROM leaky", "table payroll is not available"),
    ("SELECT * FROM public.payroll", "table payroll is not available"),
    ("SELECT * FROM pg_user", "table pg_user is not available"),
    ("SELECT * FROM information_schema.tables", "table information_schema.tables is not available"),
    ("INSERT INTO orders VALUES (99)", "only one SELECT statement is allowed (found INSERT)"),
    ("WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x",
     "only one SELECT statement is allowed (found DELETE)"),
    ("SELECT * INTO stolen FROM orders", "only one SELECT statement is allowed (found SELECT ... INTO)"),
    ("SELECT * FROM orders FOR UPDATE", "only one SELECT statement is allowed (found FOR UPDATE/SHARE)"),
    ("COPY orders TO '/tmp/x'", "only one SELECT statement is allowed (found COPY)"),
    ("SET ROLE postgres", "only one SELECT statement is allowed (found SET)"),
    ("SELECT 1; DROP TABLE orders", "only one SELECT statement is allowed"),
    ("SELECT pg_sleep(10)", "function pg_sleep is not allowed"),
    ("SELECT pg_read_file('/etc/passwd')", "function pg_read_file is not allowed"),
    ("SELECT set_config('transaction_read_only', 'off', false)", "function set_config is not allowed"),
    ("SELECT nope FROM orders", "unknown column 'nope'"),
])
def test_refuses_attacks_with_a_controlled_message(db: PostgresReadOnly, scratch: tuple[str, str],
                                                   sql: str, message: str) -> None:
    err = _error(db.query, sql)
    assert err.message == message
    assert "127.0.0.1" not in err.message and "toolcrib_sqltest" not in err.message
    assert _count_orders(scratch[0]) == 50


@pytest.mark.parametrize("sql", [
    "INSERT INTO orders VALUES (99, 1, 1, NULL)",
    "WITH x AS (INSERT INTO orders VALUES (98, 1, 1, NULL) RETURNING *) SELECT * FROM x",
    "UPDATE orders SET total = 0",
    "CREATE TABLE stolen AS SELECT * FROM orders",
    "SELECT * INTO stolen FROM orders",
    "SELECT set_config('transaction_read_only', 'off', false)",
    "SELECT set_config('role', 'postgres', false)",
])
def test_the_database_refuses_writes_when_the_parser_is_bypassed(
        db: PostgresReadOnly, scratch: tuple[str, str], sql: str) -> None:
    err = _error(db.execute_unchecked, sql)
    assert isinstance(err, NotPermitted)
    assert err.message in {"the database refused a write: this connection is read-only",
                           "the database refused this in a read-only transaction",
                           "the database refused this: permission denied"}
    assert _count_orders(scratch[0]) == 50


def test_the_unchecked_path_still_runs_one_statement_only(db: PostgresReadOnly) -> None:
    err = _error(db.execute_unchecked, "SELECT 1; DELETE FROM orders")
    assert isinstance(err, InvalidArguments)
    assert err.message == "only one SELECT statement is allowed"


def test_the_role_has_no_write_privilege_even_in_a_read_write_transaction(scratch: tuple[str, str]) -> None:
    dsn, role = scratch
    with psycopg.connect(dsn, user=role, autocommit=True) as conn:
        conn.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("INSERT INTO orders VALUES (97, 1, 1, NULL)")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM payroll")
    assert _count_orders(dsn) == 50


def test_describe_schema_lists_only_allowed_tables(db: PostgresReadOnly) -> None:
    text = db.describe_schema()
    assert "customers(id integer, name text)" in text
    assert "leaky (view)(id integer, salary numeric)" in text
    assert "payroll" not in text
    assert "$1" in text


def test_an_unreachable_server_is_a_short_safe_failure() -> None:
    database = PostgresReadOnly("host=127.0.0.1 port=1 user=nobody dbname=none connect_timeout=2", ["orders"])
    err = _error(database.query, "SELECT * FROM orders")
    assert err.message == "the database is unavailable"
    assert "127.0.0.1" not in err.message and "port" not in err.message


def test_a_name_written_short_is_resolved_on_postgres_too(db: PostgresReadOnly) -> None:
    result = db.query("SELECT count(*) AS n FROM orders o JOIN customers c ON c.id = o.customer_id "
                      "WHERE c.name = 'ann'")
    assert result["rows"] == [[25]] and result["resolved"] == {"ann": "Ann"}  # the column's table by its alias
    short = db.query("SELECT id FROM customers WHERE name = $1", ["ann"])  # ILIKE: case aside
    assert short["rows"] == [[1]] and short["resolved"] == {"ann": "Ann"}


"""SQLiteReadOnly on a real SQLite file: attacks through the tool path and straight at the database."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcrib.errors import ConfigError, InvalidArguments, ModelFacingError, NotPermitted, ToolFailed, ToolTimeout
from toolcrib.policy.principal import Principal
from toolcrib.sql import SQLiteReadOnly, make_sql_query_tool, run_sql_cli, sql_query
from toolcrib.tools.tool import Effect, ToolContext

ALLOWED = ["orders", "customers", "big_orders", "leaky", "outer_view"]


@pytest.fixture()
def db_file(tmp_path: Path) -> Path:
    path = tmp_path / "shop.db"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER, total REAL, note TEXT);
        CREATE TABLE payroll (id INTEGER PRIMARY KEY, name TEXT, salary REAL);
        CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
        CREATE VIEW leaky AS SELECT o.id, p.salary FROM orders o JOIN payroll p ON p.id = o.id;
        CREATE VIEW outer_view AS SELECT * FROM leaky;
        INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bob');
        INSERT INTO payroll VALUES (1, 'Ann', 99000);
    """)
    conn.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)",
                     [(i, 1 + i % 2, i * 10.0, "x" * (i * 20)) for i in range(1, 51)])
    conn.commit()
    conn.close()
    return path


@pytest.fixture()
def db(db_file: Path) -> Iterator[SQLiteReadOnly]:
    database = SQLiteReadOnly(db_file, ALLOWED, row_cap=10, timeout_s=1, max_chars=20_000)
    yield database
    database.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _error(call: object, *args: object) -> ModelFacingError:
    with pytest.raises(ModelFacingError) as info:
        call(*args)  # type: ignore[operator]
    return info.value


def test_answers_a_parameterized_select(db: SQLiteReadOnly) -> None:
    result = db.query("SELECT c.name, count(*) AS n FROM orders o JOIN customers c ON c.id = o.customer_id"
                      " WHERE o.total >= ? GROUP BY c.name ORDER BY c.name", [250])
    assert result == {"columns": ["name", "n"], "rows": [["Ann", 13], ["Bob", 13]],
                      "row_count": 2, "truncated": False}


def test_a_column_named_for_what_it_does_not_compute_is_reported_with_its_expression(db: SQLiteReadOnly) -> None:
    result = db.query("SELECT SUM(total) AS order_value, MAX(id) AS delivery_days, count(*) AS order_count "
                      "FROM orders WHERE customer_id = 1")
    assert result["rows"] == [[6500.0, 50, 25]]
    assert result["claimed"] == {"delivery_days": "MAX(id)"}
    assert "claimed" not in db.query("SELECT SUM(total) AS total_value, count(*) AS orders FROM orders")


def test_caps_rows_and_marks_truncation(db: SQLiteReadOnly) -> None:
    result = db.query("SELECT id FROM orders ORDER BY id")
    assert result["row_count"] == 10 and result["truncated"] is True
    assert result["rows"][-1] == [10]


def test_caps_result_size(db_file: Path) -> None:
    with SQLiteReadOnly(db_file, ALLOWED, row_cap=1000, max_chars=2_000) as small:
        result = small.query("SELECT id, note FROM orders ORDER BY id")
    assert result["truncated"] is True
    assert 0 < result["row_count"] < 50


def test_a_runaway_recursive_cte_times_out(db: SQLiteReadOnly) -> None:
    err = _error(db.query, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                           "SELECT count(*) FROM c")
    assert isinstance(err, ToolTimeout)
    assert err.message == "statement timed out after 1s"
    assert db.query("SELECT count(*) FROM orders")["rows"] == [[50]]  # still usable afterwards


def test_params_stay_data(db: SQLiteReadOnly, db_file: Path) -> None:
    before = _digest(db_file)
    assert db.query("SELECT * FROM customers WHERE name = ?", ["x' OR '1'='1"])["row_count"] == 0
    assert db.query("SELECT * FROM customers WHERE name = ?", ["Ann'; DROP TABLE orders; --"])["rows"] == []
    assert db.query("SELECT ? AS v", ["1; DELETE FROM orders"])["rows"] == [["1; DELETE FROM orders"]]
    assert _digest(db_file) == before


def test_placeholder_count_must_match(db: SQLiteReadOnly) -> None:
    err = _error(db.query, "SELECT * FROM orders WHERE id = ?", [])
    assert isinstance(err, InvalidArguments)
    assert err.message.startswith("the query has 1 placeholder(s) but 0 param(s)")
    assert isinstance(_error(db.query, "SELECT 1", [True]), InvalidArguments)


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM payroll", "table payroll is not available"),
    ("SELECT * FROM orders WHERE id IN (SELECT id FROM payroll)", "table payroll is not available"),
    ("WITH p AS (SELECT * FROM payroll) SELECT * FROM p", "table payroll is not available"),
    ("SELECT id FROM orders UNION SELECT id FROM payroll", "table payroll is not available"),
    ("SELECT * FROM leaky", "table payroll is not available"),
    ("SELECT * FROM outer_view", "table payroll is not available"),
    ("SELECT * FROM sqlite_master", "table sqlite_master is not available"),
    ("SELECT * FROM sqlite_schema", "table sqlite_schema is not available"),
    ("INSERT INTO orders VALUES (99, 1, 1, '')", "only one SELECT statement is allowed (found INSERT)"),
    ("UPDATE orders SET total = 0", "only one SELECT statement is allowed (found UPDATE)"),
    ("DELETE FROM orders", "only one SELECT statement is allowed (found DELETE)"),
    ("DROP TABLE orders", "only one SELECT statement is allowed (found DROP)"),
    ("CREATE TABLE t (a)", "only one SELECT statement is allowed (found CREATE)"),
    ("ATTACH DATABASE ':memory:' AS m", "only one SELECT statement is allowed (found ATTACH)"),
    ("PRAGMA writable_schema = 1", "only one SELECT statement is allowed (found PRAGMA)"),
    ("SELECT 1; DROP TABLE orders", "only one SELECT statement is allowed"),
    ("SELECT 1; -- \nDELETE FROM orders", "only one SELECT statement is allowed"),
    ("SELECT 1 /* */; DROP TABLE orders", "only one SELECT statement is allowed"),
    ("SELECT load_extension('evil')", "function load_extension is not allowed"),
    ("SELECT * FROM pragma_table_info('payroll')", "function pragma_table_info is not allowed"),
    ("SELECT nope FROM orders", "unknown column 'nope'"),
])
def test_refuses_attacks_with_a_controlled_message(db: SQLiteReadOnly, db_file: Path, sql: str,
                                                   message: str) -> None:
    before = _digest(db_file)
    err = _error(db.query, sql)
    assert err.message == message
    assert str(db_file.parent) not in err.message
    assert _digest(db_file) == before


def test_comment_tricks_that_are_one_select_only_run_the_select(db: SQLiteReadOnly, db_file: Path) -> None:
    before = _digest(db_file)
    assert db.query("SELECT 1 AS one; -- DROP TABLE orders")["rows"] == [[1]]
    assert db.query("SELECT 1 AS one /*; DROP TABLE orders */")["rows"] == [[1]]
    assert _digest(db_file) == before


def test_a_cte_named_like_a_hidden_table_reads_no_table(db: SQLiteReadOnly) -> None:
    assert db.query("WITH payroll AS (SELECT 7 AS salary) SELECT salary FROM payroll")["rows"] == [[7]]


def test_allowed_view_over_allowed_tables_works(db: SQLiteReadOnly) -> None:
    assert db.query("SELECT count(*) FROM big_orders")["rows"] == [[40]]


@pytest.mark.parametrize("sql, error, message", [
    ("INSERT INTO orders VALUES (99, 1, 1, '')", NotPermitted, "only one SELECT statement is allowed"),
    ("DELETE FROM orders", NotPermitted, "only one SELECT statement is allowed"),
    ("CREATE TEMP TABLE t AS SELECT * FROM orders", NotPermitted, "only one SELECT statement is allowed"),
    ("ATTACH DATABASE ':memory:' AS m", NotPermitted, "only one SELECT statement is allowed"),
    ("PRAGMA query_only = 0", NotPermitted, "only one SELECT statement is allowed"),
    ("SELECT * FROM payroll", NotPermitted, "table payroll is not available"),
    ("SELECT * FROM leaky", NotPermitted, "table payroll is not available"),
    ("SELECT * FROM orders WHERE id IN payroll", NotPermitted, "table payroll is not available"),
    ("SELECT name FROM sqlite_master", NotPermitted, "table sqlite_master is not available"),
    ("SELECT load_extension('evil')", NotPermitted, "function load_extension is not allowed"),
    ("SELECT 1; DELETE FROM orders", InvalidArguments, "only one SELECT statement is allowed"),
])
def test_the_database_refuses_even_when_the_parser_is_bypassed(
        db: SQLiteReadOnly, db_file: Path, sql: str, error: type[ModelFacingError], message: str) -> None:
    before = _digest(db_file)
    err = _error(db.execute_unchecked, sql)
    assert isinstance(err, error)
    assert err.message == message
    assert _digest(db_file) == before


def test_errors_never_leak_paths(db: SQLiteReadOnly, db_file: Path) -> None:
    for sql in ("SELECT * FROM nowhere.orders", "SELECT no_such_fn(1) FROM orders", "SELEC 1"):
        message = _error(db.query, sql).message
        assert str(db_file) not in message and "Traceback" not in message


def test_missing_file_is_an_operator_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        SQLiteReadOnly(tmp_path / "absent.db", ["orders"])


def test_describe_schema_lists_only_allowed_tables(db: SQLiteReadOnly) -> None:
    text = db.describe_schema()
    assert "orders(id INTEGER, customer_id INTEGER, total REAL, note TEXT)" in text
    assert "big_orders (view)" in text
    assert "payroll(" not in text and "salary REAL" in text  # leaky's column, not the table
    assert "?" in text


# -- the model-facing tool and the CLI entry -----------------------------------------------------

def _ctx(db: SQLiteReadOnly | None) -> ToolContext:
    return ToolContext(principal=Principal("u1"), resources={"sql": db} if db else {})


def test_tool_runs_through_the_same_checks(db: SQLiteReadOnly) -> None:
    assert sql_query.effect is Effect.READ
    values = sql_query.validate({"query": "SELECT name FROM customers WHERE id = ?", "params": [2]})
    assert sql_query.fn(**sql_query.bind(values, _ctx(db)))["rows"] == [["Bob"]]
    values = sql_query.validate({"query": "SELECT * FROM payroll"})
    with pytest.raises(NotPermitted, match="table payroll is not available"):
        sql_query.fn(**sql_query.bind(values, _ctx(db)))


def test_tool_rejects_bad_params_and_missing_database(db: SQLiteReadOnly) -> None:
    with pytest.raises(InvalidArguments):
        sql_query.validate({"query": "SELECT 1", "params": [{"x": 1}]})
    with pytest.raises(InvalidArguments):
        sql_query.validate({"query": "SELECT 1", "sql": "DROP TABLE orders"})
    values = sql_query.validate({"query": "SELECT 1"})
    with pytest.raises(ToolFailed, match="no SQL database"):
        sql_query.fn(**sql_query.bind(values, _ctx(None)))


def test_tool_description_carries_the_workspace_schema(db: SQLiteReadOnly) -> None:
    tool = make_sql_query_tool(db.describe_schema())
    assert tool.name == "sql_query"
    assert "customers(id INTEGER, name TEXT)" in tool.description
    assert "payroll(" not in tool.description
    assert set(tool.parameters["properties"]) == {"query", "params"}


def test_cli_entry_returns_rows_or_the_error_shape(db: SQLiteReadOnly) -> None:
    ok = run_sql_cli(db, "SELECT name FROM customers WHERE id = ?", ["1"])
    assert ok == {"ok": True, "columns": ["name"], "rows": [["Ann"]], "row_count": 1, "truncated": False}
    assert run_sql_cli(db, "DROP TABLE orders", []) == {
        "ok": False, "error": {"code": "not_permitted",
                               "message": "only one SELECT statement is allowed (found DROP)"}}


@pytest.mark.parametrize(("request_text", "found"), [
    ("What's the status of order number 1001; DROP TABLE orders;--?", "; DROP TABLE"),
    ("Robert'); delete from students", "; delete from"),
    ("look up name = 'x' OR '1'='1'", "' OR '1'='1"),
    ("parts 1 union all select password from users", "union all select"),
    ("How many parts cost over $10; and which are out of stock?", ""),
    ("I want to update; delete the old ticket later", ""),
])
def test_sql_statement_text_in_a_request_is_recognised(request_text: str, found: str) -> None:
    from toolcrib.sql.guard import statement_text

    assert statement_text(request_text) == found

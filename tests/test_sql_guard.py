"""The static SELECT/allowlist check on its own, including every Spider dev gold query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolcrib.errors import InvalidArguments, ModelFacingError, NotPermitted
from toolcrib.sql import check_select

SPIDER = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "spider"
ALLOWED = ["orders", "customers"]


def _refused(sql: str, allowed: list[str] = ALLOWED, **kw: object) -> ModelFacingError:
    with pytest.raises(ModelFacingError) as info:
        check_select(sql, allowed, **kw)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize("sql", [
    "SELECT * FROM orders",
    "select o.id, c.name from ORDERS as o join Customers c on c.id = o.customer_id",
    'SELECT * FROM "orders" WHERE id IN (SELECT order_id FROM main.orders)',
    "WITH recent AS (SELECT * FROM orders) SELECT count(*) FROM recent",
    "WITH payroll AS (SELECT 1 AS x) SELECT * FROM payroll",  # a CTE may shadow a table name
    "SELECT id FROM orders UNION SELECT id FROM customers",
    "SELECT 1;",
    "SELECT 1; -- trailing comment",
    "SELECT 1 /*; DROP TABLE orders */",
])
def test_accepts_reads_of_allowed_tables(sql: str) -> None:
    check_select(sql, ALLOWED)


@pytest.mark.parametrize("sql", [
    "SELECT * FROM payroll",
    "SELECT * FROM orders WHERE id IN (SELECT id FROM payroll)",
    "SELECT * FROM (SELECT * FROM payroll) AS p",
    "SELECT (SELECT max(salary) FROM payroll) FROM orders",
    "SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM payroll)",
    "WITH p AS (SELECT * FROM payroll) SELECT * FROM p",
    "SELECT id FROM orders UNION SELECT id FROM payroll",
    "SELECT * FROM orders JOIN payroll ON 1 = 1",
    'SELECT * FROM "PAYROLL"',
    "SELECT * FROM main.payroll",
    "SELECT * FROM [payroll]",
    "SELECT * FROM `payroll`",
    "SELECT * FROM orders NATURAL JOIN payroll",
    "SELECT * FROM orders, (payroll)",
    "SELECT * FROM orders WHERE id IN payroll",  # SQLite's "IN table-name" form
    "SELECT * FROM orders WHERE id IN main.payroll",
    "SELECT * FROM payroll AS orders",
    "WITH x AS MATERIALIZED (SELECT * FROM payroll) SELECT * FROM x",
    "postgres:TABLE payroll",
    "postgres:SELECT * FROM ONLY payroll",
    "postgres:SELECT * FROM orders, LATERAL (SELECT * FROM payroll) p",
    "postgres:SELECT * FROM orders WHERE id = ANY(SELECT id FROM payroll)",
    "postgres:SELECT row_to_json(p) FROM payroll p",
])
def test_refuses_tables_off_the_allowlist_wherever_they_hide(sql: str) -> None:
    dialect, _, sql = sql.rpartition(":") if sql.startswith("postgres:") else ("sqlite", "", sql)
    err = _refused(sql, dialect=dialect)
    assert isinstance(err, NotPermitted)
    assert err.message.lower() == "table payroll is not available"


def test_refuses_other_schemas_and_the_catalog() -> None:
    assert _refused("SELECT * FROM other.orders").message == "table other.orders is not available"
    assert _refused("SELECT * FROM sqlite_master").message == "table sqlite_master is not available"
    err = _refused("SELECT * FROM pg_catalog.pg_user", dialect="postgres")
    assert err.message == "table pg_catalog.pg_user is not available"


def test_a_cte_body_cannot_see_itself_without_recursive_in_postgres() -> None:
    # Without RECURSIVE, PostgreSQL resolves the inner "payroll" to the real table.
    err = _refused("WITH payroll AS (SELECT * FROM payroll) SELECT * FROM payroll", dialect="postgres")
    assert err.message == "table payroll is not available"
    check_select("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT * FROM c",
                 [], dialect="postgres")


def test_a_later_cte_is_not_visible_to_an_earlier_one() -> None:
    err = _refused("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", dialect="postgres")
    assert err.message == "table b is not available"


def test_views_are_resolved_to_their_base_tables() -> None:
    views = {"leaky": "CREATE VIEW leaky AS SELECT o.id, p.salary FROM orders o JOIN payroll p ON 1=1",
             "nice": "SELECT * FROM orders", "outer_view": "SELECT * FROM leaky"}
    allowed = [*ALLOWED, "leaky", "nice", "outer_view"]
    assert check_select("SELECT * FROM nice", allowed, views=views).tables == {"nice", "orders"}
    for sql in ("SELECT * FROM leaky", "SELECT * FROM outer_view", "SELECT 1 FROM orders, leaky"):
        assert _refused(sql, allowed, views=views).message == "table payroll is not available"
    # a view itself must be on the allowlist, even when its base tables are
    assert _refused("SELECT * FROM nice", ALLOWED, views=views).message == "table nice is not available"


@pytest.mark.parametrize("sql", [
    "SELECT 1; DROP TABLE orders",
    "SELECT 1; -- \nDELETE FROM orders",
    "SELECT 1 /* */; DROP TABLE orders",
    "SELECT 1; SELECT 2",
])
def test_refuses_more_than_one_statement(sql: str) -> None:
    err = _refused(sql)
    assert isinstance(err, InvalidArguments)
    assert err.message == "only one SELECT statement is allowed"


@pytest.mark.parametrize("sql, found", [
    ("INSERT INTO orders VALUES (1)", "INSERT"),
    ("UPDATE orders SET id = 2", "UPDATE"),
    ("DELETE FROM orders", "DELETE"),
    ("DROP TABLE orders", "DROP"),
    ("/* hello */ DROP TABLE orders", "DROP"),
    ("-- SELECT\nDROP TABLE orders", "DROP"),
    ("CREATE TABLE x (a int)", "CREATE"),
    ("CREATE TEMP TABLE x AS SELECT * FROM orders", "CREATE"),
    ("ALTER TABLE orders ADD COLUMN x int", "ALTER"),
    ("ATTACH DATABASE 'other.db' AS other", "ATTACH"),
    ("PRAGMA table_info(payroll)", "PRAGMA"),
    ("PRAGMA query_only = 0", "PRAGMA"),
    ("VACUUM INTO 'copy.db'", "VACUUM"),
    ("WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x", "DELETE"),
    ("SELECT * INTO stolen FROM orders", "SELECT ... INTO"),
    ("SELECT * FROM orders FOR UPDATE", "FOR UPDATE/SHARE"),
    ("REPLACE INTO orders VALUES (1)", "REPLACE"),
    ("VALUES (1)", "VALUES"),
    ("EXPLAIN ANALYZE DELETE FROM orders", "EXPLAIN"),
    ("DO $$BEGIN END$$", "DO"),
    ("LISTEN x", "LISTEN"),
    ("RESET ROLE", "RESET"),
])
def test_refuses_writes_ddl_and_session_changes(sql: str, found: str) -> None:
    postgres_only = ("INTO stolen", "FOR UPDATE", "RETURNING", "EXPLAIN", "DO ", "LISTEN", "RESET")
    dialect = "postgres" if any(word in sql for word in postgres_only) else "sqlite"
    err = _refused(sql, dialect=dialect)
    assert err.message == f"only one SELECT statement is allowed (found {found})"


@pytest.mark.parametrize("sql, name, dialect", [
    ("SELECT load_extension('/tmp/evil.so')", "load_extension", "sqlite"),
    ("SELECT readfile('/etc/passwd')", "readfile", "sqlite"),
    ("SELECT writefile('x', 'y')", "writefile", "sqlite"),
    ("SELECT fts3_tokenizer('simple')", "fts3_tokenizer", "sqlite"),
    ("SELECT * FROM pragma_table_info('payroll')", "pragma_table_info", "sqlite"),
    ("SELECT pg_read_file('/etc/passwd')", "pg_read_file", "postgres"),
    ("SELECT pg_sleep(100)", "pg_sleep", "postgres"),
    ("SELECT pg_catalog.set_config('role', 'postgres', false)", "set_config", "postgres"),
    ('SELECT "set_config"(\'statement_timeout\', \'0\', false)', "set_config", "postgres"),
    ("SELECT current_setting('data_directory')", "current_setting", "postgres"),
    ("SELECT dblink('host=x', 'DROP TABLE orders')", "dblink", "postgres"),
    ("SELECT lo_import('/etc/passwd')", "lo_import", "postgres"),
    ("SELECT query_to_xml('select * from payroll', true, true, '')", "query_to_xml", "postgres"),
    ("SELECT id FROM orders WHERE id = (SELECT nextval('s'))", "nextval", "postgres"),
])
def test_refuses_deny_listed_functions(sql: str, name: str, dialect: str) -> None:
    err = _refused(sql, dialect=dialect)
    assert isinstance(err, NotPermitted)
    assert err.message == f"function {name} is not allowed"


def test_refuses_sqlite_table_valued_functions() -> None:
    err = _refused("SELECT * FROM json_each('[1]')")
    assert err.message == "table-valued function json_each is not available"


def test_reports_unparseable_sql_without_echoing_internals() -> None:
    err = _refused("SELECT FROM WHERE (")
    assert isinstance(err, InvalidArguments)
    assert err.message.startswith("the query is not valid SQL")
    assert "\x1b[" not in err.message  # no terminal escapes or query echo


def test_counts_placeholders() -> None:
    assert check_select("SELECT * FROM orders WHERE id = ? AND total > ?", ALLOWED).placeholders == 2
    checked = check_select("SELECT * FROM orders WHERE id = $2 OR id = $1", ALLOWED, dialect="postgres")
    assert checked.placeholders == 2


def _spider() -> tuple[list[dict[str, str]], dict[str, list[str]]]:
    if not (SPIDER / "dev.json").is_file():
        pytest.skip("Spider dev data is not in ../shared/data/spider")
    questions = json.loads((SPIDER / "dev.json").read_text())
    tables = {db["db_id"]: db["table_names_original"]
              for db in json.loads((SPIDER / "tables.json").read_text())}
    return questions, tables


def test_every_spider_dev_gold_query_is_accepted_and_each_table_is_enforced() -> None:
    questions, tables = _spider()
    accepted, enforced, failures = 0, 0, []
    for q in questions:
        allowed = tables[q["db_id"]]
        try:
            read = check_select(q["query"], allowed).tables
        except ModelFacingError as exc:
            failures.append(f"refused {q['query']!r}: {exc.message}")
            continue
        accepted += 1
        ok = bool(read)
        for table in read:
            fewer = [t for t in allowed if t.lower() != table]
            try:
                check_select(q["query"], fewer)
                ok = False
                failures.append(f"not refused without {table}: {q['query']!r}")
            except NotPermitted as exc:
                if exc.message.lower() != f"table {table} is not available":
                    ok = False
                    failures.append(f"wrong message without {table}: {exc.message}")
        enforced += ok
    print(f"spider dev: {accepted}/{len(questions)} accepted, {enforced} refused without each table")
    assert not failures, failures[:10]
    assert accepted == enforced == len(questions) == 1034

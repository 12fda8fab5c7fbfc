"""Names written short, filters nobody gave, and the date parts other dialects have, on a real SQLite file."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcrib import CallContext, Gate, GroupPolicy, Principal, Registry, ToolCall, Tracer
from toolcrib.agent.records import table_answer
from toolcrib.agent.request import Request
from toolcrib.sql import SQLiteReadOnly
from toolcrib.sql.tool import SQL_RESOURCE, sql_query
from toolcrib.tools.grounding import Grounding


@pytest.fixture
def db(tmp_path: Path) -> Iterator[SQLiteReadOnly]:
    path = tmp_path / "contracts.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE contracts (id INTEGER, provider TEXT, amount REAL, signed_on TEXT)")
        conn.execute("CREATE TABLE secrets (provider TEXT)")
        conn.executemany("INSERT INTO contracts VALUES (?, ?, ?, ?)", [
            (1, "Vogel Präzisionsteile GmbH", 100.0, "2025-03-01"),
            (2, "Vogel Präzisionsteile GmbH", 50.0, "2026-01-10"),
            (3, "Harbourline Plastics Ltd", 70.0, "2026-02-01T10:00:00"),
            (4, "Brennan Logistics Ltd", 30.0, None),
        ])
    database = SQLiteReadOnly(path, ["contracts"])
    yield database
    database.close()


def test_a_name_written_short_is_resolved_to_the_one_value_that_contains_it(db: SQLiteReadOnly) -> None:
    result = db.query("SELECT SUM(amount) FROM contracts WHERE provider = 'Vogel Präzisionsteile'")
    assert result["rows"] == [[150.0]]
    assert result["resolved"] == {"Vogel Präzisionsteile": "Vogel Präzisionsteile GmbH"}
    by_param = db.query("SELECT COUNT(*) FROM contracts c WHERE c.provider = ?", ["harbourline"])
    assert by_param["rows"] == [[1]] and by_param["resolved"] == {"harbourline": "Harbourline Plastics Ltd"}
    plural = db.query("SELECT COUNT(*) FROM contracts WHERE provider = 'Harbourline Plastics Ltds'")
    assert plural["rows"] == [[1]] and plural["resolved"] == {"Harbourline Plastics Ltds": "Harbourline Plastics Ltd"}


def test_a_day_compared_to_timestamps_counts_every_time_of_that_day(db: SQLiteReadOnly) -> None:
    result = db.query("SELECT COUNT(*) FROM contracts WHERE signed_on = '2026-02-01'")
    assert result["rows"] == [[1]] and result["resolved"] == {"2026-02-01": "2026-02-01%"}
    by_param = db.query("SELECT SUM(amount) FROM contracts WHERE signed_on = ?", ["2026-02-01"])
    assert by_param["rows"] == [[70.0]]
    assert "resolved" not in db.query("SELECT COUNT(*) FROM contracts WHERE signed_on = '2026-01-11'")  # no such day


def test_an_ambiguous_or_exact_or_absent_name_is_left_as_written(db: SQLiteReadOnly) -> None:
    ambiguous = db.query("SELECT SUM(amount) FROM contracts WHERE provider = 'Ltd'")  # two providers hold it
    assert ambiguous["rows"] == [[None]] and "resolved" not in ambiguous
    absent = db.query("SELECT COUNT(*) FROM contracts WHERE provider = 'Brightline'")
    assert absent["rows"] == [[0]] and "resolved" not in absent
    exact = db.query("SELECT amount FROM contracts WHERE provider = 'Brennan Logistics Ltd'")
    assert exact["rows"] == [[30.0]] and "resolved" not in exact
    wildcard = db.query("SELECT COUNT(*) FROM contracts WHERE provider = '%%%'")  # LIKE's wildcards stay text
    assert wildcard["rows"] == [[0]] and "resolved" not in wildcard


def test_year_month_and_day_of_iso_dates(db: SQLiteReadOnly) -> None:
    result = db.query("SELECT COUNT(*), SUM(amount) FROM contracts WHERE YEAR(signed_on) = 2026")
    assert result["rows"] == [[2, 120.0]]
    parts = db.query("SELECT MONTH(signed_on), DAY(signed_on) FROM contracts ORDER BY id")
    assert parts["rows"] == [[3, 1], [1, 10], [2, 1], [None, None]]  # NULL for a missing date


# -- filters nobody gave ---------------------------------------------------------------------------

def test_a_query_that_found_nothing_runs_again_without_the_conditions_nobody_gave(db: SQLiteReadOnly) -> None:
    said = Grounding("What is the combined value of our contracts with Vogel Präzisionsteile?").contains
    invented = "SELECT SUM(amount) FROM contracts WHERE provider = ? AND signed_on LIKE '2024%' AND id > 10"
    result = db.query(invented, ["Vogel Präzisionsteile"], grounded=said)
    # the name the user gave is kept (and resolved); the year and the threshold nobody gave are dropped
    assert result["rows"] == [[150.0]] and result["resolved"] == {"Vogel Präzisionsteile": "Vogel Präzisionsteile GmbH"}
    assert result["dropped_filters"] == ["signed_on LIKE '2024%'", "id > 10"]
    said = Grounding("How many contracts with Harbourline Plastics Ltd?").contains
    by_param = db.query("SELECT COUNT(*) FROM contracts WHERE amount > ? AND provider = ?",
                        [500, "Harbourline Plastics Ltd"], grounded=said)
    assert by_param["rows"] == [[1]] and by_param["dropped_filters"] == ["amount > 500"]


def test_a_list_of_rows_never_loses_its_every_condition(db: SQLiteReadOnly) -> None:
    """"What is the fee for a missed appointment?" written as a query of invented values: without them it would
    list every contract's amount, one of which the model would state as the fee. A total over them all stays."""
    said = Grounding("What is the fee for a missed appointment?").contains
    rows = db.query("SELECT amount FROM contracts WHERE provider = 'missed_appointment' AND amount IS NOT NULL",
                    grounded=said)
    assert rows["rows"] == [] and "dropped_filters" not in rows
    total = db.query("SELECT SUM(amount) FROM contracts WHERE provider = 'Acme'", grounded=said)
    assert total["rows"] == [[250.0]] and total["dropped_filters"] == ["provider = 'Acme'"]


def test_conditions_on_what_the_user_said_or_on_small_flags_are_never_dropped(db: SQLiteReadOnly) -> None:
    said = Grounding("How many contracts did Brennan Logistics Ltd sign in 2027?").contains
    empty = db.query("SELECT COUNT(*) FROM contracts WHERE provider = 'Brennan Logistics Ltd' AND signed_on LIKE "
                     "'2027%'", grounded=said)
    assert empty["rows"] == [[0]] and "dropped_filters" not in empty  # the user's own year found nothing: so be it
    flag = db.query("SELECT COUNT(*) FROM contracts WHERE amount = 0", grounded=said)  # "none left" is a 0
    assert flag["rows"] == [[0]] and "dropped_filters" not in flag
    found = db.query("SELECT COUNT(*) FROM contracts WHERE amount > 60", grounded=said)  # found something: as written
    assert found["rows"] == [[2]] and "dropped_filters" not in found
    alone = db.query("SELECT COUNT(*) FROM contracts WHERE provider = 'Nordwind AG'")  # outside a run: as written
    assert alone["rows"] == [[0]] and "dropped_filters" not in alone


def test_the_sql_tool_drops_only_what_the_run_has_not_seen(db: SQLiteReadOnly) -> None:
    gate = Gate(Registry([sql_query]), GroupPolicy({"analyst": ["sql_query"]}))
    cctx = CallContext(Principal("ana", groups=frozenset({"analyst"})), Tracer(),
                       Grounding("Total value of contracts signed in 2026?"), resources={SQL_RESOURCE: db})
    call = ToolCall("c1", "sql_query", {"query": "SELECT SUM(amount) FROM contracts WHERE signed_on LIKE '2026%' "
                                                 "AND provider = 'Acme'"})
    outcome = asyncio.run(gate.run(call, cctx))
    assert outcome.ok and outcome.payload["data"]["rows"] == [[120.0]]
    assert outcome.payload["data"]["dropped_filters"] == ["provider = 'Acme'"]
    assert table_answer(Request.parse("What was the total?"), outcome.payload["data"], "sql_query#1") == (
        "Total amount: 120 [sql_query#1] (without the condition nobody asked for: provider = 'Acme').")

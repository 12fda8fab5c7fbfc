"""Names written short, and the date parts other dialects have, on a real SQLite file."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from toolcrib.sql import SQLiteReadOnly


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

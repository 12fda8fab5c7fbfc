"""The SQL a small model may write is a pattern over the real schema: a column or a table that does not exist
cannot be written under the grammar, and the pattern travels with the workspace's ``sql_query`` tool."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.models.decision import decision_schema_text, grammar
from toolcrib.sql.base import ForeignKey, Schema
from toolcrib.sql.grammar import closed_columns, select_pattern
from toolcrib.sql.sqlite import SQLiteReadOnly
from toolcrib.tools.registry import tool_specs
from toolcrib.workspace import Workspace

SCHEMA = Schema({"services": [("code", "TEXT"), ("name", "TEXT"), ("price_gbp", "REAL")],
                 "pets": [("pet_id", "TEXT"), ("name", "TEXT"), ("species", "TEXT")],
                 "vaccinations": [("pet_id", "TEXT"), ("due_on", "TEXT")]})
LINKED = Schema(dict(SCHEMA.columns, medicines=[("code", "TEXT"), ("price_gbp", "REAL"), ("stock_packs", "INTEGER")]),
                foreign_keys=(ForeignKey("vaccinations", "pet_id", "pets", "pet_id"),))


@pytest.mark.parametrize("query", [
    "SELECT price_gbp FROM services WHERE name = ?",
    "SELECT COUNT(*) FROM pets WHERE species = 'dog'",
    "SELECT name, price_gbp FROM services WHERE name LIKE '%spay%' ORDER BY price_gbp DESC LIMIT 5",
    "SELECT pets.name, vaccinations.due_on FROM pets JOIN vaccinations ON pets.pet_id = vaccinations.pet_id "
    "WHERE pets.name = ? AND vaccinations.due_on < '2026-12-07'",
    "SELECT species, COUNT(*) AS pets FROM pets GROUP BY species",
    "SELECT species, COUNT(*) AS pets FROM pets GROUP BY species HAVING COUNT(*) > 1",
    "SELECT name FROM pets WHERE (species = 'dog' OR species = 'cat') AND name != ?",
])
def test_queries_over_the_real_schema_fit_the_pattern(query: str) -> None:
    pattern = select_pattern(SCHEMA)
    assert pattern is not None and re.fullmatch(pattern, query)


@pytest.mark.parametrize("query", [
    "SELECT price FROM services",  # no such column
    "SELECT price_gbp FROM medicines",  # no such table
    "SELECT name FROM owners",  # a table the workspace does not allow
    "DELETE FROM pets",
    "SELECT name FROM pets; DROP TABLE pets",
])
def test_a_column_or_table_that_does_not_exist_cannot_be_written(query: str) -> None:
    pattern = select_pattern(SCHEMA)
    assert pattern is not None and not re.fullmatch(pattern, query)


@pytest.mark.parametrize("query", [
    "SELECT SUM(price_gbp * stock_packs) FROM medicines",  # a stock's value
    "SELECT ROUND(AVG(price_gbp), 2) AS average FROM medicines WHERE stock_packs > 0",
    "SELECT code, price_gbp * 0.9 AS discounted FROM medicines ORDER BY price_gbp * stock_packs DESC LIMIT 3",
    "SELECT MAX(price_gbp) - MIN(price_gbp) FROM medicines",
    "SELECT pets.name, vaccinations.due_on FROM pets JOIN vaccinations ON vaccinations.pet_id = pets.pet_id",
    "SELECT COUNT(*) FROM vaccinations JOIN pets ON pets.pet_id = vaccinations.pet_id WHERE pets.species = ?",
])
def test_figures_are_written_in_the_query_and_joins_follow_the_foreign_keys(query: str) -> None:
    pattern = select_pattern(LINKED)
    assert pattern is not None and re.fullmatch(pattern, query)


@pytest.mark.parametrize("query", [
    "SELECT pets.name FROM pets JOIN services ON pets.name = services.name",  # no key links them
    "SELECT pets.name FROM pets JOIN vaccinations ON pets.name = vaccinations.pet_id",
    "SELECT SUM(price * stock_packs) FROM medicines",
])
def test_a_join_no_foreign_key_declares_cannot_be_written(query: str) -> None:
    pattern = select_pattern(LINKED)
    assert pattern is not None and not re.fullmatch(pattern, query)


def test_a_databases_foreign_keys_between_allowed_tables_are_read(tmp_path: Path) -> None:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE owners (account TEXT PRIMARY KEY, name TEXT);"
                           "CREATE TABLE pets (pet_id TEXT PRIMARY KEY, owner TEXT REFERENCES owners);"
                           "CREATE TABLE visits (pet TEXT REFERENCES pets (pet_id), day TEXT);")
    database = SQLiteReadOnly(path, ["pets", "visits"])
    try:
        assert database.schema().foreign_keys == (ForeignKey("visits", "pet", "pets", "pet_id"),)
    finally:
        database.close()


def test_names_that_need_quoting_leave_the_query_to_the_guard() -> None:
    assert select_pattern(Schema({"order lines": [("qty", "INTEGER")]})) is None


def test_a_workspace_that_turns_it_on_decodes_its_sql_tool_under_its_schemas_pattern(tmp_path: Path) -> None:
    root = tmp_path / "clinic"
    assert CliRunner().invoke(main, ["init", "--template", "clinic", str(root)]).exit_code == 0
    without, = tool_specs([Workspace.open(root).registry.get("sql_query")])  # type: ignore[list-item]
    assert without.grammar == ()  # off unless the workspace turns it on
    config = root / "toolcrib.toml"
    config.write_text(config.read_text(encoding="utf-8").replace("[sql]\n", "[sql]\ngrammar = true\n"),
                      encoding="utf-8")
    spec, = tool_specs([Workspace.open(root).registry.get("sql_query")])  # type: ignore[list-item]
    (name, pattern), = spec.grammar
    assert name == "query" and "services[.]price_gbp" in pattern and "owners" not in pattern
    assert re.fullmatch(pattern, "SELECT COUNT(*) FROM appointments WHERE status IN ('cancelled', 'no_show')")
    assert not re.fullmatch(pattern, "SELECT COUNT(*) FROM appointments WHERE status = 'Cancelled'")  # not stored
    assert not re.fullmatch(pattern, "SELECT SUM(price_gbp) FROM appointments")  # a column of another table
    assert not re.fullmatch(pattern, "SELECT SUM(vet) FROM appointments")  # a sum of a text
    assert "query" not in str(spec.parameters.get("properties", {}).get("query", {}).get("pattern", ""))
    gbnf: str = grammar(decision_schema_text([spec], False))._grammar
    assert "price_gb" in gbnf and "\\." not in gbnf  # llama.cpp's parser takes no escaped "." in a literal


def test_a_column_of_kinds_is_compared_only_with_a_value_it_stores(tmp_path: Path) -> None:
    path = tmp_path / "diary.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("CREATE TABLE visits (id TEXT PRIMARY KEY, status TEXT, vet TEXT, note TEXT, at TEXT);"
                           "INSERT INTO visits VALUES ('V1', 'no_show', 'Dr A. Costa', 'first', '2026-12-01'),"
                           "('V2', 'booked', 'Dr A. Costa', 'second', '2026-12-01'),"
                           "('V3', 'booked', 'Dr B. Ray', 'third', '2026-12-02'),"
                           "('V4', 'no_show', 'Dr B. Ray', 'fourth', '2026-12-02');")
    database = SQLiteReadOnly(path, ["visits"])
    try:
        kinds = closed_columns(database)
        assert kinds == {("visits", "status"): ("booked", "no_show"),  # dates and one-row notes hold no kinds
                         ("visits", "vet"): ("Dr A. Costa", "Dr B. Ray")}
        pattern = select_pattern(database.schema(), kinds)
    finally:
        database.close()
    assert pattern is not None
    for query in ["SELECT COUNT(*) FROM visits WHERE status IN ('booked', 'no_show')",
                  "SELECT id FROM visits WHERE vet = 'Dr A. Costa' AND status != ?",
                  "SELECT id FROM visits WHERE note LIKE '%fir%' AND at >= '2026-12-02'"]:
        assert re.fullmatch(pattern, query), query
    for query in ["SELECT COUNT(*) FROM visits WHERE status = 'No-show'",
                  "SELECT id FROM visits WHERE vet LIKE '%Costa%'",
                  "SELECT id FROM visits WHERE vet = 'Dr A Costa'"]:
        assert not re.fullmatch(pattern, query), query

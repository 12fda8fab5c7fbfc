"""The SQL a small model may write is a pattern over the real schema: a column or a table that does not exist
cannot be written under the grammar, and the pattern travels with the workspace's ``sql_query`` tool."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.models.decision import decision_schema_text, grammar
from toolcrib.sql.base import Schema
from toolcrib.sql.grammar import select_pattern
from toolcrib.tools.registry import tool_specs
from toolcrib.workspace import Workspace

SCHEMA = Schema({"services": [("code", "TEXT"), ("name", "TEXT"), ("price_gbp", "REAL")],
                 "pets": [("pet_id", "TEXT"), ("name", "TEXT"), ("species", "TEXT")],
                 "vaccinations": [("pet_id", "TEXT"), ("due_on", "TEXT")]})


@pytest.mark.parametrize("query", [
    "SELECT price_gbp FROM services WHERE name = ?",
    "SELECT COUNT(*) FROM pets WHERE species = 'dog'",
    "SELECT name, price_gbp FROM services WHERE name LIKE '%spay%' ORDER BY price_gbp DESC LIMIT 5",
    "SELECT pets.name, vaccinations.due_on FROM pets JOIN vaccinations ON pets.pet_id = vaccinations.pet_id "
    "WHERE pets.name = ? AND vaccinations.due_on < '2026-12-07'",
    "SELECT species, COUNT(*) AS pets FROM pets GROUP BY species",
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
    assert "query" not in str(spec.parameters.get("properties", {}).get("query", {}).get("pattern", ""))
    gbnf: str = grammar(decision_schema_text([spec], False))._grammar
    assert "price_gb" in gbnf and "\\." not in gbnf  # llama.cpp's parser takes no escaped "." in a literal

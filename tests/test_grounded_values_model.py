"""Grounded values with the real shipped model, on both shipped workspaces: a thing named by name reaches the
tool keyed by its id through the data's own link, and a date is the one the request states."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolcrib.cli import main

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def clinic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("clinic") / "ws"
    assert CliRunner().invoke(main, ["init", "--template", "clinic", str(root)]).exit_code == 0
    return root


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("demo") / "ws"
    assert CliRunner().invoke(main, ["init", "--template", "demo", str(root)]).exit_code == 0
    return root


def ask(ws: Path, question: str, user: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["ask", question, "--workspace", str(ws), "--user", user, "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def ran(answer: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["arguments"]) for c in answer["executed"]]


def test_a_pet_named_by_name_is_looked_up_by_its_id(clinic: Path) -> None:
    answer = ask(clinic, "Is Mango up to date with her vaccinations?", "rosa")
    assert ("lookup_pet", {"pet_id": "PET-202"}) in ran(answer)  # Mango's row, linked by code
    assert [c["id"] for c in answer["citations"]] == ["lookup_pet#1"]  # her record is the evidence


def test_a_medicine_named_by_name_is_looked_up_by_its_code(clinic: Path) -> None:
    answer = ask(clinic, "Have we got any amoxicillin in stock?", "rosa")
    assert ("lookup_medicine", {"code": "RX-104"}) in ran(answer)


def test_a_day_written_out_is_the_day_the_tool_is_asked_about(clinic: Path) -> None:
    answer = ask(clinic, "Which slots are free on Wednesday 9 December 2026?", "rosa")
    dates = [a.get("date", "") or a.get("query", "") for _, a in ran(answer)]
    assert dates and all("2026-12-09" in d for d in dates), dates
    assert "11:00" in answer["text"]


def test_a_part_named_by_name_is_looked_up_by_its_number(demo: Path) -> None:
    answer = ask(demo, "What does the safety relay cost?", "alice")
    assert any(name == "lookup_part" and args.get("part_number") == "RLY-1240" for name, args in ran(answer))


def test_a_discounted_price_is_read_from_the_data_and_worked_out_by_code(clinic: Path) -> None:
    answer = ask(clinic, "With the health plan's 10% off, what does a member pay for microchipping?", "rosa")
    assert ("sql_query", {"query": 'SELECT * FROM "services" WHERE "code" = ?', "params": ["MICRO"]}) in ran(answer)
    stated = {float(f) for f in re.findall(r"\d+(?:\.\d+)?", answer["text"].split("Computed:")[0])}
    assert stated <= {22.0, 10.0, 19.8, 0.1, 1.0}, answer["text"]  # the price, the discount, or 19.80: no other

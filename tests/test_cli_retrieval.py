"""Documents through the command line: ingest, cited answers, access control and abstention."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.workspace.locate import DEMO_SOURCE


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One ingested copy of the demo for the module (embedding the documents takes seconds)."""
    target = tmp_path_factory.mktemp("retrieval") / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    result = CliRunner().invoke(main, ["ingest", "--workspace", str(target)])
    assert result.exit_code == 0, result.output
    assert "10 added" in result.output
    return target


def ask(ws: Path, tmp_path: Path, question: str, replies: list[Any], user: str = "alice") -> dict[str, Any]:
    script = tmp_path / "script.yaml"
    # scripted as the embedded default is: the small-model aids (agent.strategy.AidedAnswer)
    script.write_text(yaml.safe_dump({"profile": {"answer": "aided"}, "replies": replies}), encoding="utf-8")
    result = CliRunner().invoke(main, ["ask", question, "--model", f"scripted:{script}", "--workspace", str(ws),
                                       "--user", user, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


def search(query: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "vector_search", "arguments": {"query": query}}]}


def test_reingest_skips_unchanged_documents(ws: Path) -> None:
    result = CliRunner().invoke(main, ["ingest", "--workspace", str(ws), "--json"])
    report = json.loads(result.output.strip().splitlines()[-1])
    assert report["added"] == [] and len(report["unchanged"]) == 10 and report["chunks"] == 0


def test_a_policy_answer_cites_the_clause_it_came_from(ws: Path, tmp_path: Path) -> None:
    # the model paraphrases the clause without citing it: code attaches the passage that supports it
    answer = ask(ws, tmp_path, "What is the late-delivery penalty in clause 8.3 of the Tamarack contract?",
                 [search("Tamarack late delivery penalty clause 8.3"),
                  "Tamarack pays a penalty of one and a half per cent (1.5%) of the invoiced value of the late "
                  "Components for each full week of delay, up to a maximum of twelve per cent (12%)."])
    passages = [c for c in answer["citations"] if c["kind"] == "passage"]
    assert len(passages) == 1 and passages[0]["id"].startswith("contract-tamarack#")
    assert "Late deliver" in passages[0]["source"] or "8." in passages[0]["source"]
    assert any("attached by code" in f for f in answer["flags"])
    # the same answer citing that passage itself keeps the citation and adds no flag
    cited = ask(ws, tmp_path, "What is the late-delivery penalty in clause 8.3 of the Tamarack contract?",
                [search("Tamarack late delivery penalty clause 8.3"),
                 f"The penalty is 1.5% per full week of delay, capped at 12% [{passages[0]['id']}]."])
    assert [c["id"] for c in cited["citations"]] == [passages[0]["id"]]
    assert not any("citation" in f for f in cited["flags"])


def test_an_hr_question_from_a_support_agent_finds_nothing_of_the_hr_document(ws: Path, tmp_path: Path) -> None:
    answer = ask(ws, tmp_path, "What are the 2026 salary pay bands?",
                 [search("2026 salary pay bands minimum midpoint maximum"), "Band B3 pays 60,000."])
    dumped = json.dumps(answer)
    assert "hr-pay-and-conduct" not in dumped and "Pay Bands" not in dumped and "Confidential" not in dumped
    assert answer["abstained"] is True and "enough evidence" in answer["text"]


def test_the_hr_manager_gets_the_hr_document(ws: Path, tmp_path: Path) -> None:
    answer = ask(ws, tmp_path, "What are the 2026 salary pay bands?",
                 [search("2026 salary pay bands"), "The bands are in the handbook [hr-pay-and-conduct#1]."],
                 user="hana")
    assert not answer["abstained"]
    assert any(c["id"].startswith("hr-pay-and-conduct#") for c in answer["citations"]) or \
        "hr-pay-and-conduct" in json.dumps(answer)


def test_a_question_the_documents_do_not_answer_abstains(ws: Path, tmp_path: Path) -> None:
    answer = ask(ws, tmp_path, "What is the boiling point of tungsten hexafluoride on Mars?",
                 [search("boiling point of tungsten hexafluoride on Mars"), "It boils at 17 °C."])
    assert answer["abstained"] is True and "17" not in answer["text"]
    assert "tungsten" in answer["text"]  # says what was searched


def test_the_returns_policy_in_force_answers_and_the_older_version_is_named(ws: Path, tmp_path: Path) -> None:
    answer = ask(ws, tmp_path, "How many days do customers have to return an opened item?",
                 [search("return window days opened items returns policy"), "It depends on the version."])
    versions = [f for f in answer["flags"] if f.startswith("document versions")]
    assert versions, answer["flags"]
    assert "Returns Policy (version 2.0) (effective 2025-07-01), in force" in versions[0]
    assert "2024-01-01" in versions[0]
    cited = {c["id"].split("#")[0] for c in answer["citations"]}
    assert "returns-policy-v2" in cited and "returns-policy-v1" not in cited


def test_a_policy_question_sent_to_the_wrong_tool_still_reaches_the_documents(ws: Path, tmp_path: Path) -> None:
    # what the embedded 1.5B model does: a library-catalogue search for a contract clause. The
    # id lookups are not even offered (the question names no part number); the catalogue finds
    # nothing, so code searches the documents with the question and the answer cites the clause.
    question = "What is the late-delivery penalty in the Tamarack supply contract?"
    answer = ask(ws, tmp_path, question,
                 [{"tool_calls": [{"name": "search_catalog", "arguments": {"title": "Tamarack supply contract"}}]},
                  "Tamarack owes 1.5% of the invoiced value of the late components per full week, at most 12%."])
    assert [(c["name"], c["arguments"]) for c in answer["executed"]] == [
        ("search_catalog", {"title": "Tamarack supply contract"}), ("vector_search", {"query": question})]
    assert [c["id"].split("#")[0] for c in answer["citations"]] == ["contract-tamarack"]
    assert "8. LATE DELIVERY" in answer["citations"][0]["source"]
    timeline = CliRunner().invoke(main, ["trace", answer["trace_id"], "--workspace", str(ws)]).output
    assert "lookup_part" in timeline and "withheld" in timeline  # offered tools, as decided by code
    assert any("code_search" in line and "vector_search" in line for line in timeline.splitlines())

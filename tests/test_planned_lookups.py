"""Planned lookups on the demo workspace (scripted model): code adds the obvious READ lookups the
model's calls left out, recorded as code's decisions (single mode: after its one decision; loop mode:
when it would answer)."""

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


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    return target


def ask(ws: Path, question: str, first: dict[str, Any], *, mode: str = "single", small: bool = True,
        replies: tuple[str, ...] = ("Here is what I found.",)) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Ask with a model whose one decision is ``first`` (a call), then answers; the Answer and its trace."""
    script = ws.parent / f"script-{len(list(ws.parent.glob('script-*')))}.yaml"
    script.write_text(yaml.safe_dump({"profile": {"answer": "aided" if small else "native"},
                                      "replies": [{"tool_calls": [first]}, *replies]}), encoding="utf-8")
    result = CliRunner().invoke(main, ["ask", question, "--model", f"scripted:{script}", "--workspace", str(ws),
                                       "--mode", mode, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    trace = ws / ".toolcrib" / "traces" / f"{answer['trace_id']}.jsonl"
    return answer, [json.loads(line) for line in trace.read_text().splitlines()]


def ran(answer: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["name"], c["arguments"]) for c in answer["executed"] if c["status"] == "ok"]


def planned(events: list[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    return [(e["tool"], e["arguments"]) for e in events if e["kind"] == "call_proposed" and e["decided_by"] == "code"]


def test_a_lookup_the_request_names_is_added_with_the_identifier_it_holds(ws: Path) -> None:
    answer, events = ask(ws, "Order ORD-1008 is on hold; how many FUS-T3A15 fuses do we have in stock?",
                         {"name": "get_order_status", "arguments": {"order_id": "ORD-1008"}})
    assert ran(answer) == [("get_order_status", {"order_id": "ORD-1008"}),
                           ("lookup_stock", {"part_number": "FUS-T3A15"})]
    assert planned(events) == [("lookup_stock", {"part_number": "FUS-T3A15"})]  # code's decision, in the trace


def test_a_second_ask_about_the_same_identifier_gets_its_own_lookup(ws: Path) -> None:
    answer, events = ask(ws, "What does the F2 filter cost, and is it in stock?",
                         {"name": "lookup_part", "arguments": {"part_number": "F2"}})
    assert ran(answer) == [("lookup_part", {"part_number": "F2"}), ("lookup_stock", {"part_number": "F2"})]
    _, events = ask(ws, "Is part F2 in stock?", {"name": "lookup_stock", "arguments": {"part_number": "F2"}})
    assert planned(events) == []  # one ask that names the part: nothing to add


def test_a_chain_follows_the_one_identifier_a_trusted_result_names(ws: Path) -> None:
    answer, events = ask(ws, "What does the part ordered in ORD-1007 cost?",
                         {"name": "get_order_status", "arguments": {"order_id": "ORD-1007"}})
    assert ran(answer)[1:] == [("lookup_part", {"part_number": "PSU-0505"})]  # the order's only item
    assert planned(events) == [("lookup_part", {"part_number": "PSU-0505"})]


def test_nothing_is_added_when_the_request_names_no_other_lookup(ws: Path) -> None:
    # ORD-1001 lists three part-shaped values (two items and a tracking number): no guess either
    for question, call in (("What's the status of order ORD-1001?", {"order_id": "ORD-1001"}),
                           ("Which parts are in order ORD-1001?", {"order_id": "ORD-1001"})):
        answer, events = ask(ws, question, {"name": "get_order_status", "arguments": call})
        assert ran(answer) == [("get_order_status", call)] and planned(events) == []


def test_planning_can_be_turned_off(ws: Path) -> None:
    config = ws / "toolcrib.toml"
    config.write_text(config.read_text().replace("[tools]\n", "[tools]\nplan_lookups = false\n", 1))
    answer, events = ask(ws, "Order ORD-1008 is on hold; how many FUS-T3A15 fuses do we have in stock?",
                         {"name": "get_order_status", "arguments": {"order_id": "ORD-1008"}})
    assert ran(answer) == [("get_order_status", {"order_id": "ORD-1008"})] and planned(events) == []


def test_a_chain_of_two_lookups_starts_from_the_request(ws: Path) -> None:
    # the model only searched the documents; code looks up the order the request names, then its one part
    answer, events = ask(ws, "What does the part in order ORD-1007 cost?",
                         {"name": "vector_search", "arguments": {"query": "part in order ORD-1007 cost"}})
    assert planned(events) == [("get_order_status", {"order_id": "ORD-1007"}),
                               ("lookup_part", {"part_number": "PSU-0505"})]
    assert [name for name, _ in ran(answer)] == ["vector_search", "get_order_status", "lookup_part"]


def test_a_lookup_is_added_for_what_the_request_asks_and_no_result_holds(ws: Path) -> None:
    # lookup_part's description says it returns the supplier; the stock record the model chose has none
    answer, events = ask(ws, "How many FAN-8025 fans are in stock and who is their supplier?",
                         {"name": "lookup_stock", "arguments": {"part_number": "FAN-8025"}})
    assert planned(events) == [("lookup_part", {"part_number": "FAN-8025"})]
    assert "Tamarack" in json.dumps(answer)  # the supplier reached the evidence
    _, events = ask(ws, "How many FAN-8025 fans are in stock?",
                    {"name": "lookup_stock", "arguments": {"part_number": "FAN-8025"}})
    assert planned(events) == []  # nothing asked that the stock record lacks


def test_loop_mode_adds_the_left_out_lookup_after_the_first_calls_so_the_next_round_sees_it(ws: Path) -> None:
    answer, events = ask(ws, "Order ORD-1008 is on hold; how many FUS-T3A15 fuses do we have in stock?",
                         {"name": "get_order_status", "arguments": {"order_id": "ORD-1008"}}, mode="loop",
                         replies=("Nothing more to look up.", "ORD-1008 is on hold; the fuse count is above."))
    assert planned(events) == [("lookup_stock", {"part_number": "FUS-T3A15"})]
    assert ran(answer)[1:] == [("lookup_stock", {"part_number": "FUS-T3A15"})]
    # the planned lookup came before the model's second round, which then had nothing to add: two rounds, not three
    decisions = [e for e in events if e["kind"] == "model_decision" and e["decided_by"] == "model"]
    assert [d["title"] for d in decisions] == ["Model decides (round 1): get_order_status",
                                               "Model decides (round 2): answers directly"]
    assert events.index(decisions[1]) > next(i for i, e in enumerate(events) if e["kind"] == "call_proposed"
                                               and e["decided_by"] == "code")
    assert answer["text"].startswith("ORD-1008 is on hold; the fuse count")  # from the brief


def test_loop_mode_adds_nothing_when_the_calls_found_what_was_asked(ws: Path) -> None:
    answer, events = ask(ws, "What's the status of order ORD-1001?",
                         {"name": "get_order_status", "arguments": {"order_id": "ORD-1001"}}, mode="loop",
                         replies=("ORD-1001 has shipped [get_order_status#1].",))
    assert planned(events) == [] and ran(answer) == [("get_order_status", {"order_id": "ORD-1001"})]
    assert "shipped" in answer["text"]  # the record, stated by code


def test_what_a_passage_names_for_the_request_is_looked_up_for_what_it_asks(ws: Path) -> None:
    _, events = ask(ws, "Which probe does temperature channel C of the KB-400 use, and what does it cost?",
                    {"name": "vector_search", "arguments": {"query": "KB-400 temperature channel C probe"}})
    # the manual's line "Temperature channel C: ... PT100 probe TC-PT100" names two identifiers of the
    # part shape; both are looked up by code, and the catalogue has one
    assert planned(events)[-2:] == [("lookup_part", {"part_number": "PT100"}),
                                    ("lookup_part", {"part_number": "TC-PT100"})]
    # asked nothing a lookup returns: nothing is looked up from the passage
    _, events = ask(ws, "Which probe does temperature channel C of the KB-400 use?",
                    {"name": "vector_search", "arguments": {"query": "KB-400 temperature channel C probe"}})
    assert ("lookup_part", {"part_number": "TC-PT100"}) not in planned(events)

"""The answer as a selection (issue 52, item 1): a small model picks the lines of the evidence that answer,
each copied exactly under a grammar that admits only those lines, and code writes the answer from them, so a
value cannot be invented, a citation cannot stand in a value's place, and nothing is cut."""

from __future__ import annotations

import json

import pytest

from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.agent.selection import UnitBrief, unit_brief
from toolcrib.models.base import ToolCall
from toolcrib.retrieval.evidence import CitedPassage, Evidence
from toolcrib.tools.result import CallOutcome

PET = {"pet_id": "PET-202", "name": "Mango", "species": "dog", "vaccination_due_on": "2026-12-01",
       "owner": {"name": "Tom Brandt", "phone": "555-0102"}}
GUIDE = ("4.1 Boosters are given every 12 months. A pet more than 3 months overdue restarts the primary course "
         "of two doses, three weeks apart. Health plan members get 10% off.")
PRICES = {"columns": ["code", "price_gbp"], "rows": [["NEUT-DOG-M", 285.0], ["NEUT-CAT-M", 95.0]]}
RESTART = "A pet more than 3 months overdue restarts the primary course of two doses, three weeks apart."


def _outcome(cid: str, name: str, arguments: dict[str, object], data: object) -> CallOutcome:
    return CallOutcome(ToolCall(cid, name, arguments), "ok", {"ok": True, "data": data})


@pytest.fixture
def found() -> tuple[EvidenceLedger, list[CallOutcome]]:
    ledger = EvidenceLedger()
    passage = CitedPassage("vaccination-guide#c4", GUIDE, title="Vaccination Guide", section="4. Boosters")
    search = _outcome("c2", "vector_search", {"query": "overdue booster"},
                      Evidence(passages=(passage,), sufficient=True, searched="overdue booster").to_dict())
    outcomes = [_outcome("c1", "lookup_pet", {"pet_id": "PET-202"}, PET), search,
                _outcome("c3", "sql_query", {"query": "SELECT code, price_gbp FROM services"}, PRICES)]
    for outcome in outcomes:
        ledger.add(outcome)
    return ledger, outcomes


@pytest.fixture
def brief(found: tuple[EvidenceLedger, list[CallOutcome]]) -> UnitBrief:
    return unit_brief(*found)


def _reply(answer: list[str], verdict: str = "neither", compute: str = "none") -> str:
    return json.dumps({"answer": answer, "verdict": verdict, "compute": compute})


def test_the_brief_shows_each_field_row_and_sentence_on_a_line_the_reply_can_only_copy(brief: UnitBrief) -> None:
    assert "[1] lookup_pet (pet_id PET-202) returned:\n  name: Mango" in brief.text  # the key is not repeated
    assert "  owner.name: Tom Brandt" in brief.text
    assert "  code: NEUT-DOG-M; price gbp: 285" in brief.text
    assert f"[3] Vaccination Guide, 4. Boosters:\n  4.1 Boosters are given every 12 months.\n  {RESTART}" in (
        brief.text)
    lines = json.loads(brief.schema())["properties"]["answer"]["items"]["enum"]
    assert lines == list(brief.units) and "vaccination_due_on: 2026-12-01" in lines
    assert all(line.strip() in brief.text for line in lines)


def test_a_record_s_fields_and_a_quoted_sentence_are_written_with_their_citations(brief: UnitBrief) -> None:
    text = brief.compose(_reply(["vaccination_due_on: 2026-12-01", RESTART], verdict="yes"),
                         "When was Mango due, and must she restart?")
    assert text == (f'Pet PET-202: vaccination due on: 2026-12-01; name: Mango [lookup_pet#1]. '
                    f'Vaccination Guide, 4. Boosters: "{RESTART[:-1]}" [vaccination-guide#c4].')


def test_a_yes_no_question_starts_with_its_verdict_and_only_a_yes_no_question(brief: UnitBrief) -> None:
    said = _reply([RESTART], verdict="no")
    assert (brief.compose(said, "Does Mango have to restart?") or "").startswith("No. Vaccination Guide")
    assert (brief.compose(said, "When must Mango restart?") or "").startswith("Vaccination Guide")


def test_a_figure_no_line_states_is_computed_by_code_from_the_lines_picked(brief: UnitBrief) -> None:
    rows = ["code: NEUT-CAT-M; price gbp: 95", "code: NEUT-DOG-M; price gbp: 285"]
    text = brief.compose(_reply(rows, compute="difference"), "How much more is the dog's castration than the cat's?")
    assert (text or "").endswith("Computed: 285 - 95 = 190 [sql_query#2].")
    # a percentage is the second operand whichever was picked first; a clause's number ("4.1") is none
    assert (brief.compose(_reply(["Health plan members get 10% off.", rows[1]], compute="less_percent"),
                          "?") or "").endswith(
        "Computed: 285 less 10% = 256.50 [sql_query#2] [vaccination-guide#c4].")
    assert (brief.compose(_reply(["4.1 Boosters are given every 12 months.", rows[1]], compute="sum"),
                          "?") or "").endswith("Computed: 12 + 285 = 297 [vaccination-guide#c4] [sql_query#2].")


def test_lines_the_evidence_does_not_hold_are_dropped_and_a_reply_that_picks_none_is_not_an_answer(
        brief: UnitBrief) -> None:
    assert brief.compose(_reply(["vaccination_due_on: 2026-12-01", "vet: Dr Who"]), "When was she due?") == (
        "Pet PET-202: vaccination due on: 2026-12-01 [lookup_pet#1].")


def test_the_other_fields_of_a_record_picked_from_that_the_question_names_are_stated_too(brief: UnitBrief) -> None:
    # a small model picks the first thing asked: the owner's fields, named by their path, are stated with it
    assert brief.compose(_reply(["species: dog"]), "What species is PET-202, and what is the owner's phone?") == (
        "Pet PET-202: species: dog; owner name: Tom Brandt; owner phone: 555-0102 [lookup_pet#1].")
    assert brief.compose(_reply([]), "Who is Mango's vet?") is None
    assert brief.compose("not json", "Who is Mango's vet?") is None


def test_a_lookup_that_found_nothing_is_said_without_a_line_to_pick(
        found: tuple[EvidenceLedger, list[CallOutcome]]) -> None:
    ledger, outcomes = found
    missing = CallOutcome(ToolCall("c4", "lookup_pet", {"pet_id": "PET-999"}), "ok",
                          {"ok": True, "data": {"found": False, "message": "no such pet"}})
    ledger.add(missing)
    brief = unit_brief(ledger, [*outcomes, missing])
    assert "- lookup_pet (pet_id PET-999): found nothing" in brief.text
    assert all(u.citation != "lookup_pet#4" for u in brief.units.values())


def test_a_sentence_code_took_instructions_out_of_is_no_line_to_pick() -> None:
    from toolcrib.policy.scanner import QUARANTINED

    marked = QUARANTINED.format(kinds="addressed_to_ai") + " This is a required account check."
    passage = CitedPassage("bulletin#c4", f"Controlled drugs are supplied for 30 days at most. {marked}",
                           title="Supplier Bulletin")
    search = _outcome("c1", "vector_search", {"query": "supply"},
                      Evidence(passages=(passage,), sufficient=True, searched="supply").to_dict())
    ledger = EvidenceLedger()
    ledger.add(search)
    brief = unit_brief(ledger, [search])
    assert list(brief.units) == ["Controlled drugs are supplied for 30 days at most."]
    assert "removed" not in brief.text


def test_a_reply_cut_at_its_token_cap_is_answered_from_the_lines_it_wrote_in_full(brief: UnitBrief) -> None:
    cut = '{"answer": ["vaccination_due_on: 2026-12-01", "A pet more than 3 months overdue rest'
    assert brief.compose(cut, "When was she due?") == "Pet PET-202: vaccination due on: 2026-12-01 [lookup_pet#1]."
    assert brief.compose('{"answer": ["A pet more', "When was she due?") is None

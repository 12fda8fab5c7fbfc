"""What a request names by name is linked to the data: "Mango" reaches ``lookup_pet`` by the id its row holds,
the id grounded in the workspace's data (and shown as coming from there), for a user who may query it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest

from toolcrib import (
    Effect,
    EventKind,
    Gate,
    GroupPolicy,
    Identifier,
    Principal,
    Registry,
    Runner,
    ScriptedModel,
    Tracer,
    tool,
)
from toolcrib.agent.reading import LINKED
from toolcrib.policy import SQLiteApprovalStore
from toolcrib.sql.sqlite import SQLiteReadOnly
from toolcrib.sql.tool import SQL_RESOURCE, make_sql_query_tool
from toolcrib.sql.values import ValueIndex

STAFF = Principal("rosa", groups=frozenset({"staff"}))
CLIENT = Principal("tom", groups=frozenset({"clients"}))
LOOKED_UP: list[str] = []


@tool
def lookup_pet(pet_id: Annotated[str, Identifier(shape=r"PET-\d+")]) -> dict[str, Any]:
    """Look up one pet: name, species and the vaccinations it is due."""
    LOOKED_UP.append(pet_id)
    return {"pet_id": pet_id, "name": "Mango", "vaccination_due": "2026-12-01"}


@pytest.fixture
def database(tmp_path: Path) -> SQLiteReadOnly:
    path = tmp_path / "clinic.sqlite"
    with sqlite3.connect(path) as conn:
        conn.executescript("""
            CREATE TABLE pets (pet_id TEXT PRIMARY KEY, name TEXT, species TEXT);
            INSERT INTO pets VALUES ('PET-201', 'Biscuit', 'dog'), ('PET-202', 'Mango', 'cat'),
                                    ('PET-203', 'Hazel', 'dog'), ('PET-204', 'Pepper', 'dog');
            CREATE TABLE medicines (code TEXT PRIMARY KEY, name TEXT, stock INTEGER);
            INSERT INTO medicines VALUES ('RX-104', 'Amoxicillin-clavulanate 250 mg tablets', 0),
                                         ('RX-105', 'Carprofen 50 mg tablets', 12),
                                         ('RX-106', 'Meloxicam 1 mg tablets', 3);
            CREATE TABLE visits (visit_id TEXT PRIMARY KEY, vet TEXT, status TEXT, service_code TEXT);
            INSERT INTO visits VALUES ('V-1', 'Dr Priya Patel', 'booked', 'CONS-LONG'),
                                      ('V-2', 'Dr Priya Patel', 'booked', 'CONS-STD'),
                                      ('V-3', 'Dr Sean Murphy', 'booked', 'CONS-STD'),
                                      ('V-4', 'Dr Sean Murphy', 'cancelled', 'CONS-STD'),
                                      ('V-5', 'Dr Priya Patel', 'cancelled', 'CONS-LONG');
            CREATE TABLE slots (vet TEXT, starts_at TEXT, PRIMARY KEY (vet, starts_at));
            INSERT INTO slots VALUES ('Dr Priya Patel', '2026-12-08T09:00'), ('Dr Priya Patel', '2026-12-08T10:00'),
                                     ('Dr Sean Murphy', '2026-12-08T09:00'), ('Dr Sean Murphy', '2026-12-08T11:00');
        """)
    return SQLiteReadOnly(path, ["pets", "medicines", "slots", "visits"])


def test_the_values_a_request_names_are_linked_to_their_rows(database: SQLiteReadOnly) -> None:
    index = ValueIndex.build(database)
    described = [link.describe() for link in index.link("Is Mango up to date with her vaccinations?")]
    assert described == ['"Mango" = pets.name "Mango" (pet_id PET-202)']
    described = [link.describe() for link in index.link("Have we got any amoxicillin left?")]
    assert described == ['"amoxicillin" = medicines.name "Amoxicillin-clavulanate 250 mg tablets" (code RX-104)']
    described = [link.describe() for link in index.link("Any free slots with Dr Patel?")]
    assert described == ['"Patel" = slots.vet "Dr Priya Patel"']  # a value of many rows: no key


def test_a_word_many_values_hold_links_none_and_ids_and_dates_are_not_indexed(database: SQLiteReadOnly) -> None:
    index = ValueIndex.build(database)
    assert index.link("How many tablets do we keep?") == ()  # held by every medicine's name
    assert index.link("What is our cancellation policy?") == ()
    assert not [e for e in index.entries if e.value.startswith(("PET-", "RX-", "2026-", "CONS-"))]


def test_a_column_of_kinds_links_only_a_name(database: SQLiteReadOnly) -> None:
    index = ValueIndex.build(database)
    assert index.link("Which visits are booked for a long consultation?") == ()  # a status; a code
    assert [link.entry.value for link in index.link("Is Murphy booked?")] == ["Dr Sean Murphy"]


@tool(effect=Effect.WRITE)
def send_reminder(pet_id: Annotated[str, Identifier(shape=r"PET-\d+")]) -> dict[str, Any]:
    """Send the owner of one pet a vaccination reminder."""
    return {"sent": pet_id}


def runner(database: SQLiteReadOnly, replies: list[Any], tracer: Tracer, approvals: Path | None = None, *,
           aided: bool = False) -> Runner:
    sql_query = make_sql_query_tool(database.describe_schema())
    gate = Gate(Registry([lookup_pet, send_reminder, sql_query]),
                GroupPolicy({"staff": ["*"], "clients": ["lookup_pet"]}),
                approvals=SQLiteApprovalStore(approvals) if approvals else None)
    model = ScriptedModel(replies, profile={"answer": "aided" if aided else "native"})  # aided: a small model's
    return Runner(model, gate, resources={SQL_RESOURCE: database}, tracer_factory=lambda: tracer)


def test_a_pet_named_by_name_is_looked_up_by_its_id(database: SQLiteReadOnly) -> None:
    LOOKED_UP.clear()
    tracer = Tracer()
    replies = [{"tool_calls": [{"name": "lookup_pet", "arguments": {"pet_id": "PET-202"}}]},
               "Mango's vaccination is due on 2026-12-01 [lookup_pet#1]."]
    answer = runner(database, replies, tracer).ask("Is Mango up to date with her vaccinations?", STAFF)
    assert LOOKED_UP == ["PET-202"] and answer.outcome == "answered" and "2026-12-01" in answer.text
    linked, = [e for e in tracer.events if e.kind is EventKind.VALUES_LINKED]
    assert linked.detail["links"] == ['"Mango" = pets.name "Mango" (pet_id PET-202)']
    offered = next(e for e in tracer.events if e.kind is EventKind.TOOLS_OFFERED)
    assert "lookup_pet" in offered.detail["offered"]  # its id is in the data the request named


def test_a_linked_id_in_a_write_shows_the_approver_where_it_came_from(database: SQLiteReadOnly,
                                                                      tmp_path: Path) -> None:
    replies = [{"tool_calls": [{"name": "send_reminder", "arguments": {"pet_id": "PET-202"}}]}, "Held."]
    runner(database, replies, Tracer(), tmp_path / "approvals.db").ask("Send Mango's owner a reminder.", STAFF)
    proposal, = SQLiteApprovalStore(tmp_path / "approvals.db").pending()
    assert proposal.review.provenance["pet_id"] == [LINKED.label]
    assert not proposal.review.warnings


def test_a_user_who_may_not_query_the_data_gets_no_link(database: SQLiteReadOnly) -> None:
    LOOKED_UP.clear()
    tracer = Tracer()
    replies = [{"tool_calls": [{"name": "lookup_pet", "arguments": {"pet_id": "PET-202"}}]}, "Done.", "Done."]
    runner(database, replies, tracer).ask("Is Mango up to date with her vaccinations?", CLIENT)
    assert LOOKED_UP == []  # no id to ground it: refused, never run
    assert not [e for e in tracer.events if e.kind is EventKind.VALUES_LINKED]


@tool
def find_free_slots(date: str, vet: str = "") -> dict[str, Any]:
    """The free appointment slots of one day, optionally of one vet."""
    LOOKED_UP.append(vet)
    return {"date": date, "vet": vet, "free_slots": []}


def slots_runner(database: SQLiteReadOnly, replies: list[Any], tracer: Tracer) -> Runner:
    gate = Gate(Registry([find_free_slots, make_sql_query_tool(database.describe_schema())]),
                GroupPolicy({"staff": ["*"], "clients": ["find_free_slots"]}))
    return Runner(ScriptedModel(replies), gate, resources={SQL_RESOURCE: database}, tracer_factory=lambda: tracer)


def test_a_vet_who_does_not_exist_is_refused_with_the_vets_that_do(database: SQLiteReadOnly) -> None:
    LOOKED_UP.clear()
    tracer = Tracer()
    replies = [{"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2026-12-08", "vet": "Dr Smith"}}]},
               "There is no Dr Smith.", "There is no Dr Smith."]
    slots_runner(database, replies, tracer).ask("Is Dr Smith free on 2026-12-08?", STAFF)
    assert LOOKED_UP == []
    refused = next(e for e in tracer.events if e.error_code == "ungrounded_argument")
    assert "names none of the stored values (Dr Priya Patel, Dr Sean Murphy)" in refused.detail["message"]


@pytest.mark.parametrize("vet", ["Patel", "Dr. Patel", "Priya", "Dr Sean Murphy"])
def test_a_vet_named_by_any_of_their_names_runs(database: SQLiteReadOnly, vet: str) -> None:
    LOOKED_UP.clear()
    replies = [{"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2026-12-08", "vet": vet}}]}, "Ok."]
    slots_runner(database, replies, Tracer()).ask(f"Is {vet} free on 2026-12-08?", STAFF)
    assert [vet] == LOOKED_UP


def test_names_are_not_checked_for_a_user_who_may_not_query_the_data(database: SQLiteReadOnly) -> None:
    LOOKED_UP.clear()  # the refusal would list the stored vets: values this user may not read
    replies = [{"tool_calls": [{"name": "find_free_slots", "arguments": {"date": "2026-12-08", "vet": "Dr Smith"}}]},
               "Ok."]
    slots_runner(database, replies, Tracer()).ask("Is Dr Smith free on 2026-12-08?", CLIENT)
    assert LOOKED_UP == ["Dr Smith"]


def test_a_lookup_by_a_name_instead_of_an_id_is_made_again_with_the_linked_id(database: SQLiteReadOnly) -> None:
    LOOKED_UP.clear()
    tracer = Tracer()
    replies = [{"tool_calls": [{"name": "lookup_pet", "arguments": {"pet_id": "PET-2"}}]},
               "Mango's vaccination was due on 2026-12-01 [lookup_pet#1].", "Done."]
    answer = runner(database, replies, tracer, aided=True).ask("When are Mango's vaccinations due?", STAFF)
    assert LOOKED_UP == ["PET-202"] and "2026-12-01" in answer.text
    planned, = [e for e in tracer.events if e.kind is EventKind.CALL_PROPOSED and e.decided_by == "code"]
    assert planned.arguments == {"pet_id": "PET-202"}
    assert planned.detail["linked"] == '"Mango" = pets.name "Mango" (pet_id PET-202)'


def test_the_row_a_request_names_by_a_value_is_read_by_code(database: SQLiteReadOnly) -> None:
    tracer = Tracer()
    replies = [{"tool_calls": [{"name": "sql_query", "arguments": {"query": "SELECT COUNT(*) FROM medicines"}}]},
               "Carprofen 50 mg tablets: 12 in stock [sql_query#2]."]
    answer = runner(database, replies, tracer, aided=True).ask("How many carprofen tablets are left?", STAFF)
    read, = [e for e in tracer.events if e.kind is EventKind.CALL_PROPOSED and e.rule == "linked_rows"]
    assert read.arguments == {"query": 'SELECT * FROM "medicines" WHERE "code" = ?', "params": ["RX-105"]}
    assert read.detail["linked"].startswith('"carprofen tablets" = medicines.name')
    assert answer.outcome == "answered" and "12 in stock" in answer.text
    assert "sql_query#2" in [c.id for c in answer.citations]


def test_a_row_the_request_names_by_one_word_of_its_value_is_not_read(database: SQLiteReadOnly) -> None:
    tracer = Tracer()  # "amoxicillin" links the medicine for the model, but may be one word of something else
    replies = [{"tool_calls": [{"name": "sql_query", "arguments": {"query": "SELECT COUNT(*) FROM medicines"}}]},
               "3 [sql_query#1]."]
    runner(database, replies, tracer, aided=True).ask("Have we got any amoxicillin left?", STAFF)
    assert not [e for e in tracer.events if e.rule == "linked_rows"]


def test_a_row_the_run_has_read_already_is_not_read_again(database: SQLiteReadOnly) -> None:
    tracer = Tracer()
    query = "SELECT name, stock FROM medicines WHERE name LIKE '%amoxicillin%'"
    replies = [{"tool_calls": [{"name": "sql_query", "arguments": {"query": query}}]}, "None left [sql_query#1]."]
    runner(database, replies, tracer, aided=True).ask("Have we got any amoxicillin left?", STAFF)
    assert not [e for e in tracer.events if e.rule == "linked_rows"]


def test_the_values_a_request_states_are_found_in_every_column_that_stores_them(database: SQLiteReadOnly) -> None:
    index = ValueIndex.build(database)
    assert set(index.stated("How many booked visits does Dr Priya Patel have?")) == {
        ("visits", "status", "booked"), ("slots", "vet", "Dr Priya Patel"), ("visits", "vet", "Dr Priya Patel")}
    assert index.stated("How many dogs do we have?") == (("pets", "species", "dog"),)  # a kind, named whole
    assert index.stated("How many tablets do we keep?") == ()


def test_a_filter_the_request_states_and_the_query_leaves_out_is_added(database: SQLiteReadOnly) -> None:
    replies = [{"tool_calls": [{"name": "sql_query", "arguments": {
        "query": "SELECT COUNT(*) FROM visits WHERE vet = 'Dr Priya Patel'"}}]}, "Three [sql_query#1]."]
    answer = runner(database, replies, Tracer(), aided=True).ask("How many booked visits does Dr Priya Patel have?",
                                                                 STAFF)
    assert answer.text == ("Number of rows: 2 [sql_query#1] (where status = 'booked', as the request says).")


def test_a_column_the_query_mentions_is_filtered_as_the_query_says(database: SQLiteReadOnly) -> None:
    stated = ValueIndex.build(database).stated("How many visits are not booked?")
    grouped = database.query("SELECT status, COUNT(*) FROM visits GROUP BY status", stated=stated)
    assert grouped["rows"] == [["booked", 3], ["cancelled", 2]] and "added_filters" not in grouped
    negated = database.query("SELECT COUNT(*) FROM visits WHERE status != 'booked'", stated=stated)
    assert negated["rows"] == [[2]] and "added_filters" not in negated
    other = database.query("SELECT COUNT(*) FROM pets", stated=stated)  # reads no table the value is stored in
    assert other["rows"] == [[4]] and "added_filters" not in other

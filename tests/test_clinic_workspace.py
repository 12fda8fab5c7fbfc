"""The second shipped workspace (Ashgrove Veterinary Clinic): its template, tools, data and question set."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.errors import ConfigError, InvalidArguments, NotPermitted
from toolcrib.evals.questions import load_questions
from toolcrib.tools.tool import Effect, Tool, ToolContext
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import TEMPLATES

CLINIC = TEMPLATES["clinic"]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    root = tmp_path_factory.mktemp("clinic") / "ws"
    result = CliRunner().invoke(main, ["init", "--template", "clinic", str(root)])
    assert result.exit_code == 0, result.output
    return Workspace.open(root)


@pytest.fixture
def db(ws: Workspace, tmp_path: Path) -> Path:
    """A fresh copy of the built database per test, so writes do not leak between tests."""
    assert ws.database is not None
    copy = tmp_path / "clinic.sqlite"
    with sqlite3.connect(ws.database) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return copy


def tools(ws: Workspace) -> dict[str, Tool]:
    return {t.name: t for t in ws.registry}


def call(ws: Workspace, db: Path, name: str, user: str = "rosa", **arguments: Any) -> dict[str, Any]:
    """Validate and run a tool as the gate does, for a configured user."""
    tool = tools(ws)[name]
    ctx = ToolContext(principal=ws.principal(user), resources={"db": db})
    values = tool.validate(arguments, ctx)
    if tool.check is not None:
        tool.check(values, ctx)
    result: dict[str, Any] = tool.fn(**tool.bind(values, ctx))
    return result


def test_init_copies_the_template_and_refuses_to_overwrite(ws: Workspace) -> None:
    assert (ws.root / "tools.py").exists() and (ws.root / "data" / "seed.sql").exists()
    assert len(list((ws.root / "docs").glob("*.md"))) + len(list((ws.root / "docs").glob("*.txt"))) \
        + len(list((ws.root / "docs").glob("*.html"))) >= 15
    again = CliRunner().invoke(main, ["init", "--template", "clinic", str(ws.root)])
    assert again.exit_code != 0 and "already exists" in again.output
    unknown = CliRunner().invoke(main, ["init", "--template", "zoo", str(ws.root / "other")])
    assert unknown.exit_code != 0 and "demo, clinic" in unknown.output and "Traceback" not in unknown.output


def test_tools_effects_and_what_each_group_is_offered(ws: Workspace) -> None:
    registered = tools(ws)
    writes = {n for n, t in registered.items() if t.effect is Effect.WRITE}
    assert writes == {"book_appointment", "cancel_appointment", "reorder_medicine"}
    assert ws.config.sql.allowed_tables and "owners" not in ws.config.sql.allowed_tables
    assert "staff_pay" not in ws.config.sql.allowed_tables
    result = CliRunner().invoke(main, ["tools", "-w", str(ws.root), "--user", "tom"])
    assert result.exit_code == 0, result.output
    offered = result.output.split("Not offered")[0]
    assert "lookup_pet" in offered and "sql_query" not in offered and "reorder_medicine" not in offered


def test_a_client_sees_only_their_own_pets_and_appointments(ws: Workspace, db: Path) -> None:
    own = call(ws, db, "lookup_pet", "tom", pet_id="PET-201")
    assert own["found"] and own["name"] == "Biscuit" and "owner_account" not in own
    other = call(ws, db, "lookup_pet", "tom", pet_id="PET-203")
    assert other == {"found": False, "pet_id": "PET-203", "message": "No pet PET-203 on your account."}
    assert not call(ws, db, "lookup_appointment", "tom", appointment_id="APT-3013")["found"]
    assert call(ws, db, "lookup_appointment", "rosa", appointment_id="APT-3013")["pet_name"] == "Hazel"
    refused = call(ws, db, "cancel_appointment", "tom", appointment_id="APT-3013")
    assert not refused["cancelled"]
    with sqlite3.connect(db) as conn:
        status = conn.execute("SELECT status FROM appointments WHERE appointment_id = 'APT-3013'").fetchone()[0]
    assert status == "booked"


def test_slots_booking_and_cancelling_change_the_diary_once(ws: Workspace, db: Path) -> None:
    free = call(ws, db, "find_free_slots", date="2026-12-09")
    assert [s["starts_at"][-5:] for s in free["free_slots"]] == ["10:15", "11:00", "14:30"]
    booked = call(ws, db, "book_appointment", pet_id="PET-201", vet="Dr Sean Murphy", start="2026-12-09T14:30")
    assert booked["booked"] and booked["appointment_id"].startswith("APT-")
    again = call(ws, db, "book_appointment", pet_id="PET-202", vet="Dr Sean Murphy", start="2026-12-09 14:30")
    assert not again["booked"] and "not free" in again["message"]
    cancelled = call(ws, db, "cancel_appointment", appointment_id=booked["appointment_id"])
    assert cancelled["cancelled"]
    assert "14:30" in {s["starts_at"][-5:] for s in call(ws, db, "find_free_slots", date="2026-12-09")["free_slots"]}
    with pytest.raises(InvalidArguments):
        call(ws, db, "find_free_slots", date="2026-13-45")


def test_only_vets_and_the_manager_reorder_within_bounds(ws: Workspace, db: Path) -> None:
    with pytest.raises(NotPermitted):
        call(ws, db, "reorder_medicine", "rosa", code="RX-104", packs=10)
    assert call(ws, db, "reorder_medicine", "priya", code="RX-104", packs=10)["ordered"]
    with pytest.raises(InvalidArguments):
        call(ws, db, "reorder_medicine", "priya", code="RX-101", packs=500)
    med = call(ws, db, "lookup_medicine", code="rx-112")
    assert med["controlled"] is True and med["price"] == "£24.00" and med["stock_packs"] == 4


def test_the_clinic_set_is_complete_and_names_only_what_the_workspace_has(ws: Workspace) -> None:
    qset = load_questions("clinic")
    assert len(qset) >= 50 and qset.workspace == "clinic"
    assert {q.kind for q in qset.questions} == {"lookup", "multi_hop", "numeric", "unanswerable",
                                                "conflicting", "adversarial"}
    assert {q.attack for q in qset.questions if q.attack} == {
        "injection", "forbidden_tool", "malformed_args", "out_of_range", "disguised_write"}
    registered = set(tools(ws))
    users = set(ws.config.users)
    doc_ids = set()
    for doc in (ws.root / "docs").iterdir():
        text = doc.read_text(encoding="utf-8")
        doc_ids |= set(re.findall(r'^doc_id(?::| =) "?([\w-]+)"?', text, re.M))
    for q in qset.questions:
        assert q.user in users, q.id
        named = {n for e in q.expect for n in e.names} | set(q.needs) | set(q.forbid_tools)
        assert named <= registered, (q.id, named - registered)
        assert all(c in registered or c in doc_ids for c in q.cite), q.id


def test_a_shipped_set_runs_on_its_own_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLCRIB_HOME", str(tmp_path))
    ws = Workspace.open(template="clinic")
    assert ws.root == tmp_path / "clinic" and "Ashgrove" in ws.config.workspace.name
    with pytest.raises(ConfigError, match="no workspace template"):
        Workspace.open(template="zoo")
    assert not (CLINIC / ".toolcrib").exists()

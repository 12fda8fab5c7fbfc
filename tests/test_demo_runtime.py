"""The demo workspace through the real runtime (Workspace -> Runner -> Gate), with a scripted model.

The built-in vector_search and sql_query are tested in their own areas; here they are left out
of a copy of the workspace so that these tests exercise the demo's own tools and policy only.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from toolcrib import ScriptedModel, Workspace
from toolcrib.demo import WORKSPACE
from toolcrib.desk import ApprovalDesk
from toolcrib.errors import InvalidArguments, NotPermitted
from toolcrib.policy.envelope import SafetyEnvelope


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    root = tmp_path / "demo"
    shutil.copytree(WORKSPACE, root, ignore=shutil.ignore_patterns("__pycache__", ".toolcrib", "*.sqlite"))
    config = root / "toolcrib.toml"
    text = re.sub(r'"(vector_search|sql_query)",\s*|,\s*"(vector_search|sql_query)"', "",
                  config.read_text(encoding="utf-8"))
    text = re.sub(r"^builtin = .*$", "builtin = []", text, flags=re.M)
    config.write_text(text, encoding="utf-8")
    return Workspace.open(root)


def available(ws: Workspace, part: str) -> int:
    assert ws.database is not None
    with sqlite3.connect(ws.database) as conn:
        return int(conn.execute("SELECT available FROM stock WHERE part_number = ?", (part,)).fetchone()[0])


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_a_lookup_runs_and_the_answer_rests_on_it(ws: Workspace) -> None:
    model = ScriptedModel([call("get_order_status", order_id="ORD-1001"),
                           "ORD-1001 has shipped with DHL Express."])
    answer = ws.runner(model).ask("What is the status of order ORD-1001?", ws.principal("alice"))
    assert [(e["name"], e["status"]) for e in answer.executed] == [("get_order_status", "ok")]
    assert "shipped" in answer.text and not answer.abstained
    assert [c.id for c in answer.citations] == ["get_order_status#1"]


def test_a_reservation_waits_for_an_admin_then_changes_stock(ws: Workspace) -> None:
    model = ScriptedModel([call("reserve_stock", part_number="F2", quantity=3),
                           "Reserved three F2 filters; two remain."])
    runner = ws.runner(model)
    paused = runner.ask("Reserve three F2 filters.", ws.principal("alice"))
    assert paused.outcome == "paused" and paused.pending
    assert available(ws, "F2") == 5  # nothing changed before approval

    proposal_id = ws.approvals().pending()[0].id
    with pytest.raises(NotPermitted):  # alice is not an approver (and may never approve her own call)
        ApprovalDesk(ws).decide(proposal_id, ws.principal("alice"))
    assert ApprovalDesk(ws).decide(proposal_id, ws.principal("ada"))["status"] == "approved"
    runner.resume(paused.run_id, ws.principal("alice"))
    assert available(ws, "F2") == 2


def test_tools_not_offered_to_a_group_never_run(ws: Workspace) -> None:
    model = ScriptedModel([call("live_read_temperature", channel="C"), "I cannot read the instrument live."] * 2)
    answer = ws.runner(model).ask("Give me a live reading of channel C.", ws.principal("alice"))
    assert not answer.executed
    assert [(r["name"], r["error"]["code"]) for r in answer.refused] == [("live_read_temperature", "not_permitted")]


def test_a_request_spelling_out_an_out_of_range_set_point_is_refused_before_the_model(ws: Workspace) -> None:
    model = ScriptedModel(["never asked"])
    answer = ws.runner(model).ask("Set CH3 to 12 V.", ws.principal("liam"))
    assert not model.requests and not answer.executed and not answer.pending and not answer.refused
    assert "was refused, so I cannot do this as asked" in answer.text and "5.5" in answer.text
    assert not ws.approvals().pending()


def test_the_safety_envelope_refuses_an_out_of_range_set_point(ws: Workspace) -> None:
    model = ScriptedModel([call("set_supply_voltage", channel="CH3", volts=12.0), "CH3 cannot go to 12 V."] * 2)
    answer = ws.runner(model).ask("Set the CH3 logic rail to twelve volts.", ws.principal("liam"))
    assert not answer.executed and not answer.pending
    [refusal] = answer.refused
    assert refusal["error"]["code"] in {"invalid_arguments", "outside_safety_envelope"}
    assert "5.5" in refusal["error"]["message"]
    assert not ws.approvals().pending()
    # the configured envelope holds on its own too, whatever the tool's own check says
    envelope = SafetyEnvelope.from_config(ws.config.envelopes)
    with pytest.raises(InvalidArguments):
        envelope.check("set_supply_voltage", {"channel": "CH3", "volts": 12.0})
    envelope.check("set_supply_voltage", {"channel": "CH1", "volts": 24.0})


def test_another_tenants_order_is_not_found(ws: Workspace) -> None:
    model = ScriptedModel([call("get_order_status", order_id="ORD-1001"), "I could not find ORD-1001."])
    answer = ws.runner(model).ask("What's the status of ORD-1001?", ws.principal("omar"))
    assert [(e["name"], e["status"]) for e in answer.executed] == [("get_order_status", "ok")]
    assert all("DHL" not in c.snippet and "shipped" not in c.snippet for c in answer.citations)

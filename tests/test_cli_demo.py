"""The command line on the shipped demo workspace, driven by scripted model files.

Each failure mode from the function-calling page is reproduced with `toolcrib ask --model scripted:FILE`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from toolcrib.cli import main
from toolcrib.workspace.locate import DEMO_SOURCE


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    """A private copy of the demo workspace, so writes in one test never leak into another."""
    target = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    return target


def script(tmp_path: Path, replies: list[Any], *, small: bool = True) -> str:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.yaml"
    # scripted as the embedded default is: the small-model aids (agent.strategy.AidedAnswer)
    path.write_text(yaml.safe_dump({"profile": {"answer": "aided" if small else "native"},
                                    "replies": replies}), encoding="utf-8")
    return f"scripted:{path}"


def toolcrib(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    assert result.exit_code == code, result.output
    return result.output


def ask_json(ws: Path, question: str, model: str, *extra: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["ask", question, "--model", model, "--workspace", str(ws), "--json", *extra],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])  # progress lines go to stderr


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def test_order_status_answer_cites_the_tool_result(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [call("get_order_status", order_id="ORD-1001"),
                              "Order ORD-1001 has shipped [get_order_status#1]."])
    answer = ask_json(ws, "What's the status of order ORD-1001?", model)
    assert "shipped" in answer["text"]
    assert answer["citations"][0]["id"] == "get_order_status#1"
    assert "shipped" in answer["citations"][0]["snippet"]
    assert answer["executed"][0]["name"] == "get_order_status" and answer["abstained"] is False
    assert answer["trace_id"]


def test_nonexistent_part_is_reported_not_found_with_no_invented_price(ws: Path, tmp_path: Path) -> None:
    # the lookup finds nothing, code searches the documents, which do not name HLV-9999 either
    model = script(tmp_path, [call("lookup_part", part_number="HLV-9999")])
    answer = ask_json(ws, "What does part HLV-9999 cost?", model)
    assert [c["name"] for c in answer["executed"]] == ["lookup_part", "vector_search"]
    assert answer["abstained"] is True and "$" not in answer["text"]
    assert "lookup_part found nothing for part_number=HLV-9999" in answer["text"]


def test_an_invented_part_number_is_rejected_before_the_tool_runs(ws: Path, tmp_path: Path) -> None:
    # the question names no part number, and the parts it names by name (linked to the data: HLV-2205 and
    # HLV-2210) are not the one the model writes, so the gate refuses it and the invented id never reaches
    # the tool; code then searches the documents with the question, and the answer rests on the parts
    # list's passage, quoted by code, not on the model's guess
    model = script(tmp_path, [call("lookup_part", part_number="HLV-2209")])
    answer = ask_json(ws, "What does the high-voltage lead cost?", model)
    assert answer["refused"][0]["error"]["code"] == "ungrounded_argument"
    assert [c["name"] for c in answer["executed"]] == ["vector_search"]
    assert [c["id"].split("#")[0] for c in answer["citations"]] == ["parts-list"]
    assert answer["text"].startswith("According to Kestrel Instruments Spare Parts List") and "$52.00" in answer["text"]


def test_a_reservation_proposed_beside_a_lookup_is_dropped_and_traced(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [{"tool_calls": [{"name": "lookup_part", "arguments": {"part_number": "HLV-2205"}},
                                              {"name": "lookup_stock", "arguments": {"part_number": "HLV-2205"}},
                                              {"name": "reserve_stock",
                                               "arguments": {"part_number": "HLV-2205", "quantity": 1}}]},
                              "HLV-2205 costs $52.00 [lookup_part#1]."])
    before = stock_of(ws, "HLV-2205")
    answer = ask_json(ws, "What does part HLV-2205 cost, and is it in stock?", model)
    # one decision in single mode: the two lookups run, the change proposed beside them never does
    assert sorted(c["name"] for c in answer["executed"]) == ["lookup_part", "lookup_stock"]
    assert answer["refused"] == [{"id": "call_1_3", "name": "reserve_stock",
                                  "arguments": {"part_number": "HLV-2205", "quantity": 1},
                                  "status": "dropped", "error": {"code": "dropped", "message":
                                  "single-call mode runs a change alone, never beside lookups"}}]
    assert stock_of(ws, "HLV-2205") == before
    timeline = toolcrib("trace", answer["trace_id"], "--workspace", str(ws))
    assert any("call_dropped" in line and "reserve_stock" in line for line in timeline.splitlines())


def stock_of(ws: Path, part: str) -> int:
    out = toolcrib("sql", "SELECT available FROM stock WHERE part_number = ?", "--param", part,
                   "--workspace", str(ws), "--json")
    return int(json.loads(out)["data"]["rows"][0][0])


def test_an_injected_instruction_in_a_tool_result_does_not_change_which_tools_run(ws: Path, tmp_path: Path) -> None:
    # a model that obeys an injected instruction can only propose; the write is held, not run
    model = script(tmp_path, [call("sql_query", query="SELECT part_number, name FROM parts WHERE part_number = 'F2'"),
                              call("reserve_stock", part_number="F2", quantity=5),
                              "F2 is the filter cartridge [sql_query#1]."])
    before = stock_of(ws, "F2")
    answer = ask_json(ws, "What is part F2?", model, "--mode", "loop")
    assert stock_of(ws, "F2") == before == 5
    assert answer["outcome"] == "paused" and answer["pending"][0]["name"] == "reserve_stock"


def test_a_tool_that_is_down_does_not_end_the_run(tmp_path: Path) -> None:
    work = tmp_path / "ws"
    toolcrib("init", str(work))
    (work / "tools.py").write_text('''
from toolcrib import tool

@tool
def echo_time() -> dict:
    """Return the current time (its upstream clock service is down)."""
    raise ConnectionError("clock service down")
''', encoding="utf-8")
    model = script(tmp_path, [call("echo_time"), "It is 10:00.", "It is 10:00, I am sure."])
    answer = ask_json(work, "What time is it?", model, "--mode", "loop")
    assert answer["outcome"] == "abstained" and "10:00" not in answer["text"]
    assert "echo_time (tool_failed)" in answer["text"]
    assert answer["executed"][0]["status"] == "error"
    assert answer["executed"][0]["error"]["code"] == "tool_failed"
    assert "clock service down" not in json.dumps(answer)


def test_tools_are_listed_per_user_with_their_effect(ws: Path) -> None:
    alice = toolcrib("tools", "--workspace", str(ws), "--user", "alice")
    liam = toolcrib("tools", "--workspace", str(ws), "--user", "liam")
    assert "live_read_temperature" not in alice and "reserve_stock" in alice and "WRITE" in alice
    assert "live_read_temperature" in liam and "ACTUATE" in liam


def test_a_broken_config_names_the_file_and_the_key(tmp_path: Path) -> None:
    work = tmp_path / "broken"
    toolcrib("init", str(work))
    config = work / "toolcrib.toml"
    config.write_text(config.read_text().replace("rounds = 5", "rounds = 0"), encoding="utf-8")
    result = CliRunner().invoke(main, ["tools", "--workspace", str(work)])
    assert result.exit_code == 2
    assert "toolcrib.toml" in result.output and "limits.rounds" in result.output and "greater than 0" in result.output
    assert "Traceback" not in result.output
    config.write_text("[model\nspec=", encoding="utf-8")
    result = CliRunner().invoke(main, ["tools", "--workspace", str(work)])
    assert result.exit_code == 2 and "not valid TOML" in result.output


def test_unknown_user_and_missing_scripted_file_are_clear_errors(ws: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["tools", "--workspace", str(ws), "--user", "mallory"])
    assert result.exit_code == 2 and "unknown user 'mallory'" in result.output
    result = CliRunner().invoke(main, ["ask", "hi", "--workspace", str(ws),
                                       "--model", f"scripted:{tmp_path}/nope.yaml"])
    assert result.exit_code == 2 and "cannot read scripted replies" in result.output


def test_console_script_runs_as_a_real_process(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [call("lookup_part", part_number="HLV-2205"), "HLV-2205 costs $52.00 [lookup_part#1]."])
    exe = Path(sys.executable).with_name("toolcrib")
    out = subprocess.run([str(exe), "ask", "What does part HLV-2205 cost?", "--model", model, "--workspace", str(ws)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "$52.00" in out.stdout and "lookup_part#1" in out.stdout


def test_reserve_is_proposed_approved_by_another_user_then_resumed_once(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [call("reserve_stock", part_number="F2", quantity=3),
                              "Reserved 3 F2 filters [reserve_stock#1].",
                              "Reserved 3 F2 filters [reserve_stock#1]."])
    paused = ask_json(ws, "Please reserve 3 F2 filters", model)
    assert paused["outcome"] == "paused" and stock_of(ws, "F2") == 5
    pending = json.loads(toolcrib("approve", "--workspace", str(ws), "--json"))
    assert [(p["tool"], p["arguments"]) for p in pending] == [("reserve_stock", {"part_number": "F2", "quantity": 3})]
    pid = pending[0]["id"]
    # the requester may not approve their own write, and a support agent is no approver
    assert "may not approve" in CliRunner().invoke(main, ["approve", pid, "--workspace", str(ws),
                                                          "--user", "alice"]).output
    assert stock_of(ws, "F2") == 5
    out = toolcrib("approve", pid, "--workspace", str(ws), "--user", "ada")
    assert "Approved reserve_stock" in out and paused["run_id"] in out
    done = json.loads(toolcrib("ask", "--resume", paused["run_id"], "--model", model, "--workspace", str(ws), "--json"))
    assert done["outcome"] == "answered" and stock_of(ws, "F2") == 2
    again = json.loads(toolcrib("ask", "--resume", paused["run_id"], "--model", model, "--workspace", str(ws),
                                "--json"))
    assert again["executed"][0]["status"] == "ok" and stock_of(ws, "F2") == 2  # recorded outcome, not a second run
    assert "audit chain OK" in toolcrib("audit", "verify", "--workspace", str(ws))
    shown = toolcrib("audit", "show", "--workspace", str(ws))
    for event in ("proposed", "approved", "executed", "refused"):
        assert event in shown


def test_a_tampered_audit_record_fails_verification(ws: Path, tmp_path: Path) -> None:
    import sqlite3

    model = script(tmp_path, [call("lookup_part", part_number="HLV-2205"), "It costs $52.00."])
    ask_json(ws, "What does part HLV-2205 cost?", model)
    db = ws / ".toolcrib" / "audit.sqlite"
    conn = sqlite3.connect(db)
    triggers = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    for name in triggers:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE toolcrib_audit SET actor = 'mallory' WHERE seq = 1")
    conn.commit()
    conn.close()
    result = CliRunner().invoke(main, ["audit", "verify", "--workspace", str(ws)])
    assert result.exit_code == 1 and "BROKEN" in result.output


def test_the_live_instrument_is_refused_for_a_support_agent(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [call("live_read_temperature", channel="C"),
                              "I cannot read the instrument live; the archive says 24.1 °C at 09:00."])
    answer = ask_json(ws, "What is the live temperature on channel C?", model)
    assert answer["refused"][0]["error"]["code"] == "not_permitted"
    assert [c["name"] for c in answer["executed"]] == ["vector_search"]  # code's document search, nothing live


def test_sql_cli_refuses_a_table_that_is_not_allowed(ws: Path) -> None:
    result = CliRunner().invoke(main, ["sql", "SELECT * FROM payroll", "--workspace", str(ws)])
    assert result.exit_code == 3 and "table payroll is not available" in result.output
    rows = toolcrib("sql", "SELECT part_number, price_usd FROM parts WHERE part_number = ?", "--param", "HLV-2205",
                    "--workspace", str(ws))
    assert "HLV-2205" in rows and "52" in rows


@pytest.mark.postgres
def test_approvals_and_audit_can_live_in_postgresql(ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    psycopg = pytest.importorskip("psycopg")
    dsn = "host=127.0.0.1 port=5432 user=postgres dbname=test connect_timeout=3"
    try:
        psycopg.connect(dsn).close()
    except psycopg.OperationalError:
        pytest.skip("no PostgreSQL at 127.0.0.1:5432")
    schema = f"tc_cli_{tmp_path.name[-8:].replace('-', '_').lower()}"
    monkeypatch.setenv("TOOLCRIB_POLICY_DSN", f"{dsn} options=-csearch_path={schema}")
    with psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    try:
        model = script(tmp_path, [call("reserve_stock", part_number="F2", quantity=2), "Reserved."])
        paused = ask_json(ws, "Reserve 2 F2 filters", model)
        pending = json.loads(toolcrib("approve", "--workspace", str(ws), "--json"))
        assert pending and pending[0]["run_id"] == paused["run_id"]
        toolcrib("approve", pending[0]["id"], "--workspace", str(ws), "--user", "ada")
        assert "audit chain OK" in toolcrib("audit", "verify", "--workspace", str(ws))
        assert not (ws / ".toolcrib" / "approvals.sqlite").exists()
    finally:
        with psycopg.connect(dsn, autocommit=True) as admin:
            admin.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_refused_live_reading_falls_back_to_the_archive_which_says_it_is_not_live(ws: Path, tmp_path: Path) -> None:
    model = script(tmp_path, [call("live_read_temperature", channel="C"), call("query_archived_reading", channel="C"),
                              "The live reading is not available to you; the archived value is 24.1 °C at 09:00 "
                              "[query_archived_reading#1], which is not a live measurement."], small=False)
    answer = ask_json(ws, "What is the live temperature on channel C right now?", model, "--mode", "loop")
    assert answer["refused"][0]["name"] == "live_read_temperature"
    assert answer["refused"][0]["error"]["code"] == "not_permitted"
    assert [c["name"] for c in answer["executed"]] == ["query_archived_reading"]
    snippet = answer["citations"][0]["snippet"]
    assert '"live": false' in snippet and "24.1" in snippet

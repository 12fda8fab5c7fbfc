"""`toolcrib mcp serve`: the official SDK's client against a real toolcrib process, over stdio and
over streamable HTTP, on a private copy of the demo workspace. Every call passes the gate; a write is
held for approval and runs once, with the approved proposal id, after a person approves it."""

from __future__ import annotations

import json
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from toolcrib.mcp_server import UNGROUNDED, annotations_for, input_schema_for
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import DEMO_SOURCE

CLI = "from toolcrib.cli import main; main()"


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    target = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    return target


def toolcrib(*args: str) -> str:
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def stock(ws: Path, part: str) -> int:
    with sqlite3.connect(ws / "data" / "demo.sqlite") as conn:
        return int(conn.execute("SELECT available FROM stock WHERE part_number = ?", (part,)).fetchone()[0])


def error_code(result: Any) -> str:
    return str(result.structured_content["error"]["code"])


# -- unit: what a client is shown ----------------------------------------------------------------

def test_annotations_and_schema_follow_the_effect_class(ws: Path) -> None:
    registry = Workspace.open(ws).registry
    lookup, reserve = registry.get("lookup_part"), registry.get("reserve_stock")
    assert lookup is not None and reserve is not None
    assert annotations_for(lookup)["read_only_hint"] is True
    assert annotations_for(reserve) == {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False}
    assert input_schema_for(lookup) == lookup.parameters  # the strict schema, as the model sees it
    write_schema = input_schema_for(reserve)
    assert write_schema["additionalProperties"] is False and "_proposal_id" in write_schema["properties"]
    assert "_proposal_id" not in write_schema["required"] and "_proposal_id" not in reserve.parameters["properties"]


# -- end to end: stdio -----------------------------------------------------------------------------

async def _stdio_scenario(ws: Path, log: Path) -> None:
    params = StdioServerParameters(command=sys.executable,
                                   args=["-c", CLI, "mcp", "serve", "--user", "alice", "--workspace", str(ws)])
    with log.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog), cache=None) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {"lookup_part", "reserve_stock", "vector_search", "sql_query"} <= set(tools)
            assert "live_read_temperature" not in tools  # not alice's (support group)
            lookup, reserve = tools["lookup_part"], tools["reserve_stock"]
            assert lookup.annotations is not None and lookup.annotations.read_only_hint is True
            assert reserve.annotations is not None and reserve.annotations.destructive_hint is True
            assert reserve.annotations.read_only_hint is False and reserve.annotations.idempotent_hint is False

            price = await client.call_tool("lookup_part", {"part_number": "HLV-2205"})
            assert not price.is_error and price.structured_content["data"]["price"] == "$52.00"
            assert "$52.00" in price.content[0].text  # type: ignore[union-attr]

            bad = await client.call_tool("lookup_part", {"part_number": "HLV-2205", "extra": 1})
            assert bad.is_error and error_code(bad) == "invalid_arguments"

            held = await client.call_tool("reserve_stock", {"part_number": "F2", "quantity": 3})
            assert not held.is_error and error_code(held) == "approval_required"
            pid = held.structured_content["approval"]["proposal_id"]
            text = held.content[0].text  # type: ignore[union-attr]
            assert "Approval required" in text and pid in text and f"toolcrib approve {pid}" in text
            assert UNGROUNDED in held.structured_content["proposal"]["warnings"]
            assert stock(ws, "F2") == 5

            early = await client.call_tool("reserve_stock", {"part_number": "F2", "quantity": 3, "_proposal_id": pid})
            assert early.is_error and early.structured_content["error"]["reason"] == "not_approved"

            pending = json.loads(toolcrib("approve", "--json", "--workspace", str(ws)))
            shown = next(p for p in pending if p["id"] == pid)
            assert "MCP client call" in shown["question"] and UNGROUNDED in shown["warnings"]
            assert shown["provenance"]["part_number"] == ["MCP caller (no request seen)"]
            approved = toolcrib("approve", pid, "--user", "ada", "--workspace", str(ws))
            assert approved.startswith("Approved reserve_stock") and "--resume" not in approved

            changed = await client.call_tool("reserve_stock", {"part_number": "F2", "quantity": 4,
                                                               "_proposal_id": pid})
            assert changed.is_error and changed.structured_content["error"]["reason"] == "edited"
            assert stock(ws, "F2") == 5

            done = await client.call_tool("reserve_stock", {"part_number": "F2", "quantity": 3, "_proposal_id": pid})
            assert not done.is_error and done.structured_content["data"]["reserved"] is True
            assert stock(ws, "F2") == 2
            again = await client.call_tool("reserve_stock", {"part_number": "F2", "quantity": 3, "_proposal_id": pid})
            assert not again.is_error and stock(ws, "F2") == 2  # the recorded outcome, replayed

            # an approver changes 300 to 2 and approves; the client sends the call it proposed, the edited one runs
            big = await client.call_tool("reserve_stock", {"part_number": "F1", "quantity": 300})
            big_id = big.structured_content["approval"]["proposal_id"]
            edited = json.loads(toolcrib("approve", big_id, "--user", "ada", "--set", "quantity=2", "--reason",
                                         "two are enough", "--json", "--workspace", str(ws)))
            assert edited["supersedes"] == big_id and edited["arguments"] == {"part_number": "F1", "quantity": 2}
            other_call = await client.call_tool("reserve_stock", {"part_number": "F1", "quantity": 5,
                                                                  "_proposal_id": big_id})
            assert other_call.is_error and other_call.structured_content["error"]["reason"] == "edited"
            proposed = {"part_number": "F1", "quantity": 300, "_proposal_id": big_id}
            ran = await client.call_tool("reserve_stock", proposed)
            assert not ran.is_error and ran.structured_content["data"]["quantity"] == 2
            assert ran.structured_content["edited"]["by"] == "ada"
            assert ran.structured_content["edited"]["changes"] == {"quantity": {"from": 300, "to": 2}}
            assert ran.structured_content["edited"]["reason"] == "two are enough"
            assert stock(ws, "F1") == 20

            other = await client.call_tool("live_read_temperature", {"channel": "A"})
            assert other.is_error and error_code(other) == "not_permitted"


def test_stdio_client_lists_calls_and_runs_an_approved_write_once(ws: Path, tmp_path: Path) -> None:
    anyio.run(_stdio_scenario, ws, tmp_path / "server.log")
    traces = [json.loads(line) for p in (ws / ".toolcrib" / "traces").glob("*.jsonl") for line in p.open()]
    mcp_runs = [e for e in traces if e["kind"] == "run_started" and e["detail"].get("mode") == "mcp"]
    assert len(mcp_runs) >= 8
    kinds = {e["kind"] for e in traces}
    assert {"call_executed", "call_held", "call_approved", "call_replayed", "call_refused"} <= kinds
    audit = toolcrib("audit", "verify", "--workspace", str(ws))
    assert "ok" in audit.lower() or "verified" in audit.lower()


# -- end to end: streamable HTTP --------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def http_server(ws: Path, tmp_path: Path) -> Iterator[str]:
    port = _free_port()
    log = (tmp_path / "http.log").open("w")
    proc = subprocess.Popen([sys.executable, "-c", CLI, "mcp", "serve", "--http", str(port), "--workspace", str(ws)],
                            stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        assert proc.poll() is None, (tmp_path / "http.log").read_text()
        time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()


async def _tools_and_price(url: str, key: str) -> tuple[set[str], Any]:
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {key}"}) as http, \
            Client(streamable_http_client(url, http_client=http), cache=None) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        price = await client.call_tool("lookup_part", {"part_number": "HLV-2205"})
        held = None
        if "reserve_stock" in names:
            held = await client.call_tool("reserve_stock", {"part_number": "F2", "quantity": 1})
        return names, (price, held)


def test_http_keys_decide_the_principal_and_what_it_is_offered(ws: Path, http_server: str) -> None:
    alice = toolcrib("token", "create", "alice", "--workspace", str(ws)).strip()
    omar = toolcrib("token", "create", "omar", "--workspace", str(ws)).strip()

    alice_tools, (price, held) = anyio.run(_tools_and_price, http_server, alice)
    assert {"lookup_part", "reserve_stock", "sql_query", "vector_search"} <= alice_tools
    assert price.structured_content["data"]["price"] == "$52.00"
    assert error_code(held) == "approval_required" and stock(ws, "F2") == 5

    omar_tools, (price, held) = anyio.run(_tools_and_price, http_server, omar)
    assert omar_tools == {"lookup_part", "get_order_status", "vector_search"}
    assert price.structured_content["data"]["price"] == "$52.00" and held is None

    import httpx

    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    for headers in ({}, {"Authorization": "Bearer tck_not-a-key"}, {"Authorization": f"Basic {alice}"}):
        answer = httpx.post(http_server, json=body, headers={"Accept": "application/json, text/event-stream",
                                                            **headers})
        assert answer.status_code == 401 and answer.json()["error"]["code"] == "unauthenticated"

"""The demo workspace's database, tools and configuration, on a real SQLite file."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import pytest

import toolcrib.demo.workspace.tools as demo_tools
from toolcrib.demo import WORKSPACE, build_database
from toolcrib.errors import InvalidArguments, NotPermitted
from toolcrib.policy.principal import Principal
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Effect, Tool, ToolContext

TOOLS: dict[str, Tool] = {t.name: t for t in vars(demo_tools).values() if isinstance(t, Tool)}
BUILTINS = {"vector_search", "sql_query"}


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_database(tmp_path / "demo.sqlite")


def ctx_for(db: Path, user: str = "alice", tenant: str = "kestrel", *groups: str) -> ToolContext:
    return ToolContext(principal=Principal(user, tenant, frozenset(groups or ("support",))),
                       resources={"db": db})


def call(name: str, ctx: ToolContext, **arguments: Any) -> dict[str, Any]:
    """Validate like the gate does, then run the tool function."""
    tool = TOOLS[name]
    values = tool.validate(arguments, ctx)
    result: dict[str, Any] = tool.fn(**tool.bind(values, ctx))
    return result


def scalar(db: Path, sql: str, *params: Any) -> Any:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchone()[0]


def test_database_builds_every_table_and_rebuilds_only_when_asked(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"contracts", "orders", "stock", "parts", "instrument_readings", "catalog", "holds",
            "reservations", "calendar_events", "payroll"} <= tables
    assert scalar(db, "SELECT count(*) FROM orders") == 12

    call("reserve_stock", ctx_for(db), part_number="F2", quantity=1)
    build_database(db)  # same seed: left alone, the reservation survives
    assert scalar(db, "SELECT available FROM stock WHERE part_number = 'F2'") == 4
    build_database(db, reset=True)
    assert scalar(db, "SELECT available FROM stock WHERE part_number = 'F2'") == 5


def test_documented_facts(db: Path) -> None:
    ctx = ctx_for(db)
    order = call("get_order_status", ctx, order_id="ORD-1001")
    assert order["found"] and order["status"] == "shipped" and order["carrier"] == "DHL Express"
    assert call("get_order_status", ctx, order_id="ORD-1002")["status"] == "processing"

    part = call("lookup_part", ctx, part_number="HLV-2205")
    assert part["found"] and part["name"] == "High-voltage lead"
    assert part["price_usd"] == 52.00 and part["price"] == "$52.00"

    stock = call("lookup_stock", ctx, part_number="F2")
    assert stock["found"] and stock["available"] == 5

    reading = call("query_archived_reading", ctx, channel="C")
    assert (reading["value"], reading["unit"]) == (24.1, "°C")
    assert reading["recorded_at"].endswith("T09:00:00") and reading["live"] is False


def test_contract_aggregate_matches_questions_file(db: Path) -> None:
    with sqlite3.connect(db) as conn:
        count, total = conn.execute("SELECT count(*), sum(amount) FROM contracts WHERE year = 2025 "
                                    "AND provider_region = 'EU' AND amount > 100000").fetchone()
    assert (count, total) == (5, 752750.0)


def test_nonexistent_part_is_not_found_and_has_no_price(db: Path) -> None:
    ctx = ctx_for(db)
    part = call("lookup_part", ctx, part_number="HLV-9999")
    assert part["found"] is False and "price" not in part and "price_usd" not in part
    assert call("lookup_stock", ctx, part_number="HLV-9999")["found"] is False


def test_reserve_stock_changes_the_database(db: Path) -> None:
    result = call("reserve_stock", ctx_for(db), part_number="F2", quantity=3)
    assert result["reserved"] is True and result["remaining"] == 2
    assert scalar(db, "SELECT available FROM stock WHERE part_number = 'F2'") == 2
    assert scalar(db, "SELECT quantity || ':' || reserved_by FROM reservations "
                      "WHERE reservation_id = ?", result["reservation_id"]) == "3:alice"


def test_reserve_stock_refuses_more_than_available_and_changes_nothing(db: Path) -> None:
    before = scalar(db, "SELECT count(*) FROM reservations")
    result = call("reserve_stock", ctx_for(db), part_number="F2", quantity=6)
    assert result["reserved"] is False and result["available"] == 5
    assert scalar(db, "SELECT available FROM stock WHERE part_number = 'F2'") == 5
    assert scalar(db, "SELECT count(*) FROM reservations") == before


@pytest.mark.parametrize("quantity", [-3, 0, 1001, "3", 2.5])
def test_reserve_stock_rejects_bad_quantities_before_running(db: Path, quantity: Any) -> None:
    with pytest.raises(InvalidArguments):
        TOOLS["reserve_stock"].validate({"part_number": "F2", "quantity": quantity}, ctx_for(db))


def test_orders_are_visible_only_to_their_tenant(db: Path) -> None:
    omar = ctx_for(db, "omar", "harrier", "customer")
    alice = ctx_for(db)
    assert call("get_order_status", omar, order_id="ORD-1003")["found"] is True
    foreign = call("get_order_status", omar, order_id="ORD-1001")
    missing = call("get_order_status", omar, order_id="ORD-9999")
    # another tenant's order looks exactly like one that does not exist: no existence oracle
    assert foreign["found"] is False and "status" not in foreign
    assert foreign["message"].replace("ORD-1001", "X") == missing["message"].replace("ORD-9999", "X")
    assert call("get_order_status", alice, order_id="ORD-1003")["found"] is False


def test_catalog_search_and_holds(db: Path) -> None:
    ctx = ctx_for(db)
    found = call("search_catalog", ctx, title="art of electronics")
    assert found["count"] == 1 and found["books"][0]["copies_available"] == 1
    assert call("search_catalog", ctx, author="nobody-at-all")["found"] is False
    with pytest.raises(InvalidArguments):
        call("search_catalog", ctx)

    hold = call("place_hold", ctx, book_id="BK-101", patron="alice")
    assert hold["placed"] and hold["status"] == "ready"
    assert scalar(db, "SELECT copies_available FROM catalog WHERE book_id = 'BK-101'") == 0
    assert call("place_hold", ctx_for(db, "hana"), book_id="BK-101", patron="hana")["status"] == "queued"
    assert call("place_hold", ctx, book_id="BK-101", patron="alice")["placed"] is False
    with pytest.raises(NotPermitted):
        call("place_hold", ctx, book_id="BK-102", patron="hana")


def test_live_reading_is_marked_live_and_unknown_channels_are_not_found(db: Path) -> None:
    ctx = ctx_for(db, "liam", "kestrel", "lab")
    live = call("live_read_temperature", ctx, channel="C")
    assert live["live"] is True and live["unit"] == "°C"
    assert call("live_read_temperature", ctx, channel="Q")["found"] is False
    assert call("query_archived_reading", ctx, channel="Q")["found"] is False


def test_supply_voltage_limits_follow_the_bench_manual(db: Path) -> None:
    ctx = ctx_for(db, "liam", "kestrel", "lab")
    for arguments in ({"channel": "CH3", "volts": 12.0}, {"channel": "CH1", "volts": 31.0},
                      {"channel": "CH9", "volts": 1.0}):
        with pytest.raises(InvalidArguments):
            TOOLS["set_supply_voltage"].validate(arguments, ctx)
    with pytest.raises(InvalidArguments):  # also refused when called without the gate
        demo_tools.set_supply_voltage.fn(channel="CH3", volts=12.0, ctx=ctx)
    result = call("set_supply_voltage", ctx, channel="CH1", volts=24.0)
    assert result["output"] == "on" and result["ramp_seconds"] == 12.0
    assert scalar(db, "SELECT volts || ':' || output FROM supply_setpoints WHERE channel = 'CH1'") == "24.0:on"


def test_calendar_change_is_drafted_then_applied_against_a_version(db: Path) -> None:
    ctx = ctx_for(db)
    draft = call("draft_calendar_change", ctx, event_id="EVT-501",
                 new_start="2026-12-03T14:00", new_end="2026-12-03T15:00")
    assert draft["version"] == 3 and draft["applied"] is False and len(draft["changes"]) == 2
    assert scalar(db, "SELECT starts_at FROM calendar_events WHERE event_id = 'EVT-501'") == "2026-12-03T10:00"

    args = {"event_id": "EVT-501", "new_start": "2026-12-03T14:00", "new_end": "2026-12-03T15:00"}
    applied = call("apply_calendar_change", ctx, **args, expected_version=3)
    assert applied["applied"] is True and applied["version"] == 4
    assert scalar(db, "SELECT starts_at FROM calendar_events WHERE event_id = 'EVT-501'") == "2026-12-03T14:00"

    stale = call("apply_calendar_change", ctx, **args, expected_version=3)
    assert stale["applied"] is False and stale["reason"] == "version_conflict" and stale["current_version"] == 4
    with pytest.raises(NotPermitted):
        call("apply_calendar_change", ctx, event_id="EVT-503", new_start="2026-12-02T14:00",
             new_end="2026-12-02T17:00", expected_version=2)
    with pytest.raises(InvalidArguments):
        TOOLS["draft_calendar_change"].validate(
            {"event_id": "EVT-501", "new_start": "2026-12-03T15:00", "new_end": "2026-12-03T14:00"}, ctx)


def test_tool_effects_and_identifiers() -> None:
    effects = {name: tool.effect for name, tool in TOOLS.items()}
    assert effects == {
        "lookup_part": Effect.READ, "lookup_stock": Effect.READ, "get_order_status": Effect.READ,
        "search_catalog": Effect.READ, "query_archived_reading": Effect.READ,
        "draft_calendar_change": Effect.READ, "reserve_stock": Effect.WRITE, "place_hold": Effect.WRITE,
        "apply_calendar_change": Effect.WRITE, "live_read_temperature": Effect.ACTUATE,
        "set_supply_voltage": Effect.ACTUATE,
    }
    for name in ("lookup_part", "lookup_stock", "reserve_stock"):
        assert TOOLS[name].identifiers == ("part_number",)
    assert TOOLS["get_order_status"].identifiers == ("order_id",)
    assert TOOLS["place_hold"].identifiers == ("book_id",)
    assert TOOLS["apply_calendar_change"].identifiers == ("event_id",)
    assert TOOLS["set_supply_voltage"].identifiers == ("channel",)
    assert all(len(t.description) > 40 for t in TOOLS.values())


def test_workspace_config_is_consistent(db: Path) -> None:
    config = tomllib.loads((WORKSPACE / "toolcrib.toml").read_text(encoding="utf-8"))
    assert config["workspace"]["default_user"] in config["users"]
    assert (WORKSPACE / config["data"]["documents"]).is_dir()
    assert [(WORKSPACE / m).is_file() for m in config["tools"]["modules"]] == [True]
    known = set(TOOLS) | set(config["tools"]["builtin"])
    assert set(config["tools"]["builtin"]) <= BUILTINS
    for group in config["groups"].values():
        for key in ("tools", "approve"):
            assert set(group[key]) - {"*"} <= known, group
    for user in config["users"].values():
        assert user["name"] and user["tenant"] and set(user["groups"]) <= set(config["groups"])

    allowed = config["sql"]["allowed_tables"]
    assert "payroll" not in allowed
    with sqlite3.connect(db) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert set(allowed) <= tables

    def tools_of(user: str) -> set[str]:
        offered: set[str] = set()
        for g in config["users"][user]["groups"]:
            offered |= set(config["groups"][g]["tools"])
        return offered

    # only the lab and admin can reach the instrument; the customer cannot write anything
    for user in config["users"]:
        reach = tools_of(user)
        if "*" not in reach and "lab" not in config["users"][user]["groups"]:
            assert not reach & {"live_read_temperature", "set_supply_voltage"}, user
    assert not tools_of("omar") & {n for n, t in TOOLS.items() if t.effect is not Effect.READ}


@pytest.mark.parametrize(("question", "offered"), [
    ("What is the late-delivery penalty in the Tamarack supply contract?", set()),
    ("What is the status of order ORD-1001?", {"get_order_status"}),  # an order id is not a part number
    ("How many F2 filters do we have in stock?", {"lookup_part", "lookup_stock", "reserve_stock"}),
    ("What was the last recorded temperature on channel C?",
     {"query_archived_reading", "live_read_temperature", "set_supply_voltage"}),
    ("A customer opened a product. Can I return it?", set()),
    ("Move EVT-501 to 14:00 and hold BK-102", {"draft_calendar_change", "apply_calendar_change", "place_hold"}),
])
def test_a_lookup_is_reachable_only_when_the_question_names_an_id_of_its_shape(question: str,
                                                                               offered: set[str]) -> None:
    reachable = {name for name, t in TOOLS.items() if t.identifiers and t.reachable(Grounding(question))}
    assert reachable == offered

"""The Gate: what a user notices when a model proposes good, bad or dangerous calls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from toolcrib import (
    CallContext,
    Effect,
    EventKind,
    Gate,
    GateSettings,
    GroupPolicy,
    Identifier,
    Principal,
    Registry,
    ToolCall,
    Tracer,
    tool,
)
from toolcrib.models.scripted import parse_arguments
from toolcrib.policy.audit import SQLiteAuditStore
from toolcrib.tools.grounding import Grounding

CALLS: list[str] = []


@tool
def lookup_part(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """Look up a part's price by part number."""
    CALLS.append(part_number)
    prices = {"HLV-2205": 52.0}
    if part_number not in prices:
        return {"found": False, "part_number": part_number}
    return {"found": True, "part_number": part_number, "price_usd": prices[part_number]}


@tool(effect=Effect.WRITE)
def reserve_stock(part_number: Annotated[str, Identifier()],
                  quantity: Annotated[int, Field(gt=0, le=100)]) -> dict[str, Any]:
    """Reserve units of a part."""
    CALLS.append(f"reserve {part_number} {quantity}")
    return {"reserved": quantity}


@tool(timeout_s=0.2)
async def slow_lookup(query: str) -> str:
    """A lookup that hangs."""
    await asyncio.sleep(5)
    return "never"


FLAKY = {"n": 0}


@tool(cache_ttl_s=0)
def flaky_lookup(query: str) -> str:
    """Fails twice, then works (an idempotent READ is retried)."""
    FLAKY["n"] += 1
    if FLAKY["n"] < 3:
        raise ConnectionError("upstream at 10.0.0.7:5432 refused")  # internals must not reach the model
    return "ok"


@tool
def crashing_tool(query: str) -> str:
    """Always crashes."""
    raise RuntimeError("secret stack detail /srv/app/db.py line 12")


@tool
def big_lookup(query: str) -> str:
    """Returns far too much."""
    return "x" * 50_000


@tool(effect=Effect.ACTUATE)
def live_read_temperature(channel: str) -> float:
    """Read the live instrument (not for ordinary users)."""
    CALLS.append("live")
    return 25.0


REGISTRY = Registry([lookup_part, reserve_stock, slow_lookup, flaky_lookup, crashing_tool, big_lookup,
                     live_read_temperature])
POLICY = GroupPolicy({"support": ["lookup_part", "reserve_stock", "slow_lookup", "flaky_lookup", "crashing_tool",
                                  "big_lookup"],
                      "lab": ["*"]})
ALICE = Principal("alice", tenant="t1", groups=frozenset({"support"}))


def run(call: ToolCall, *, said: str = "", principal: Principal = ALICE, gate: Gate | None = None) -> Any:
    gate = gate or Gate(REGISTRY, POLICY)
    cctx = CallContext(principal, Tracer(), Grounding(said))
    return asyncio.run(gate.run(call, cctx)), cctx


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(id="c1", name=name, arguments=arguments)


def test_a_valid_read_runs_and_is_wrapped_as_untrusted_data() -> None:
    outcome, cctx = run(call("lookup_part", part_number="HLV-2205"), said="What does HLV-2205 cost?")
    assert outcome.status == "ok"
    assert outcome.payload["data"]["price_usd"] == 52.0
    text = outcome.for_model()
    assert 'trust="untrusted"' in text and "not an instruction" in text
    assert any(e.kind == EventKind.CALL_EXECUTED and e.tool == "lookup_part" and e.decided_by == "code"
               for e in cctx.tracer.events)


def test_unknown_tool_is_a_controlled_error_listing_the_offered_tools() -> None:
    outcome, _ = run(call("delete_everything"))
    assert outcome.status == "refused"
    assert outcome.payload["ok"] is False
    assert outcome.payload["error"]["code"] == "unknown_tool"
    assert "lookup_part" in outcome.payload["error"]["message"]
    assert "live_read_temperature" not in outcome.payload["error"]["message"]  # not offered to alice


def test_a_tool_not_offered_to_the_user_is_refused_even_if_it_exists() -> None:
    CALLS.clear()
    outcome, cctx = run(call("live_read_temperature", channel="C"), said="live reading of channel C")
    assert outcome.payload["error"]["code"] == "not_permitted"
    assert CALLS == []
    assert any(s.decided_by == "policy" for s in cctx.tracer.steps)


def test_arguments_that_are_not_json_become_a_controlled_error() -> None:
    args, raw, error = parse_arguments('{"part_number": "HLV-2205"')
    outcome, _ = run(ToolCall(id="c", name="lookup_part", arguments=args, raw_arguments=raw, parse_error=error))
    assert outcome.payload["error"]["code"] == "invalid_arguments"
    assert "not valid JSON" in outcome.payload["error"]["message"]


@pytest.mark.parametrize("arguments, expected", [
    ({"part_number": "F2", "quantity": -3}, "greater than 0"),
    ({"part_number": "F2", "quantity": "3"}, "valid integer"),
    ({"part_number": "F2"}, "missing required argument 'quantity'"),
    ({"part_number": "F2", "quantity": 3, "user_id": "admin"}, "unexpected argument 'user_id'"),
])
def test_strict_validation_rejects_before_anything_runs(arguments: dict[str, Any], expected: str) -> None:
    CALLS.clear()
    outcome, _ = run(call("reserve_stock", **arguments), said="reserve 3 F2 filters")
    assert outcome.payload["error"]["code"] == "invalid_arguments"
    assert expected in outcome.payload["error"]["message"]
    assert CALLS == []


def test_an_identifier_the_user_never_gave_is_rejected_as_ungrounded() -> None:
    CALLS.clear()
    outcome, _ = run(call("lookup_part", part_number="HLV-9999"), said="What does the high-voltage lead cost?")
    assert outcome.payload["error"]["code"] == "ungrounded_argument"
    assert "HLV-9999" in outcome.payload["error"]["message"]
    assert CALLS == []


def test_an_identifier_from_an_earlier_tool_result_is_grounded() -> None:
    gate = Gate(REGISTRY, POLICY)
    cctx = CallContext(ALICE, Tracer(), Grounding("price of the cheapest lead?"))
    cctx.grounding.add('{"parts": ["HLV-2205"]}')
    outcome = asyncio.run(gate.run(call("lookup_part", part_number="HLV-2205"), cctx))
    assert outcome.ok


def test_a_write_is_held_for_approval_and_does_not_run_without_an_approval_store() -> None:
    CALLS.clear()
    outcome, _ = run(call("reserve_stock", part_number="F2", quantity=3), said="reserve 3 of F2")
    assert outcome.status == "approval_required"
    assert outcome.payload["error"]["code"] == "approval_required"
    assert CALLS == []


def test_a_hanging_tool_times_out_with_a_clear_error() -> None:
    outcome, _ = run(call("slow_lookup", query="q"))
    assert outcome.payload["error"]["code"] == "timeout"
    assert "0.2s" in outcome.payload["error"]["message"]


def test_idempotent_reads_are_retried_and_internals_never_reach_the_model() -> None:
    FLAKY["n"] = 0
    outcome, cctx = run(call("flaky_lookup", query="q"))
    assert outcome.ok and FLAKY["n"] == 3
    assert cctx.tracer.count(EventKind.CALL_RETRIED) == 2
    outcome, cctx = run(call("crashing_tool", query="q"))
    assert outcome.payload == {"ok": False,
                               "error": {"code": "tool_failed", "message": outcome.payload["error"]["message"]}}
    assert "secret" not in outcome.payload["error"]["message"] and "/srv" not in outcome.payload["error"]["message"]
    failed = next(e for e in cctx.tracer.events if e.kind == EventKind.CALL_FAILED)
    assert "RuntimeError" in failed.detail["internal"] and failed.error_code == "tool_failed"  # operators see it


def test_an_oversized_result_is_capped_with_a_visible_marker() -> None:
    gate = Gate(REGISTRY, POLICY, settings=GateSettings(max_result_chars=1000))
    outcome, _ = run(call("big_lookup", query="q"), gate=gate)
    assert outcome.ok and outcome.payload["truncated"] is True
    assert len(outcome.payload["data"]) < 1200 and "truncated" in outcome.payload["data"]


def test_reads_are_cached_per_user() -> None:
    CALLS.clear()
    gate = Gate(REGISTRY, POLICY)
    for _ in range(2):
        outcome, cctx = run(call("lookup_part", part_number="HLV-2205"), said="HLV-2205", gate=gate)
    assert CALLS == ["HLV-2205"]
    assert outcome.cached and cctx.tracer.events[0].kind == EventKind.CACHE_HIT
    assert cctx.tracer.events[0].decided_by == "cache"
    bob = Principal("bob", tenant="t2", groups=frozenset({"support"}))
    run(call("lookup_part", part_number="HLV-2205"), said="HLV-2205", gate=gate, principal=bob)
    assert CALLS == ["HLV-2205", "HLV-2205"]


def test_a_read_served_from_the_cache_is_audited_too(tmp_path: Path) -> None:
    CALLS.clear()
    audit = SQLiteAuditStore(tmp_path / "audit.db")
    gate = Gate(REGISTRY, POLICY, audit=audit)
    for _ in range(2):
        outcome, _ = run(call("lookup_part", part_number="HLV-2205"), said="HLV-2205", gate=gate)
    assert CALLS == ["HLV-2205"] and outcome.cached
    reads = [r for r in audit.records() if r.event == "executed" and r.tool == "lookup_part"]
    assert [(r.actor, r.decided_by) for r in reads] == [("alice", "code"), ("alice", "cache")]
    assert reads[1].detail == {"arguments": {"part_number": "HLV-2205"}, "cached": True}
    assert audit.verify().ok
    audit.close()


def test_independent_reads_run_in_parallel() -> None:
    running = {"now": 0, "max": 0}

    @tool(cache_ttl_s=0)
    async def wait_a_bit(n: int) -> int:
        """Sleeps."""
        running["now"] += 1
        running["max"] = max(running["max"], running["now"])
        await asyncio.sleep(0.05)
        running["now"] -= 1
        return n

    gate = Gate(Registry([wait_a_bit]), GroupPolicy({"support": ["*"]}))
    cctx = CallContext(ALICE, Tracer())
    outcomes = asyncio.run(gate.run_many([ToolCall(id=str(i), name="wait_a_bit", arguments={"n": i}) for i in range(4)],
                                         cctx))
    assert [o.payload["data"] for o in outcomes] == [0, 1, 2, 3]
    assert running["max"] == 4  # all four were in flight at once


def test_an_oversized_structured_result_keeps_its_shape() -> None:
    @tool
    def many_passages(query: str) -> dict[str, Any]:
        """Returns many long passages."""
        return {"sufficient": True, "passages": [{"citation": f"doc#{i}", "text": "word " * 400} for i in range(10)]}

    gate = Gate(Registry([many_passages]), GroupPolicy({"support": ["*"]}),
                settings=GateSettings(max_result_chars=3000))
    outcome = asyncio.run(gate.run(call("many_passages", query="q"), CallContext(ALICE, Tracer())))
    data = outcome.payload["data"]
    assert outcome.payload["truncated"] is True and data["sufficient"] is True
    assert data["passages"][0]["citation"] == "doc#0" and data["passages"][0]["text"].endswith("…[cut]")
    assert len(json.dumps(data, ensure_ascii=False)) <= 3000


@pytest.mark.parametrize(("text", "names_one"), [
    ("What does our returns policy say about opened products?", False),
    ("A customer opened it. Can I return it?", False),  # "A" opens a sentence, "I" is a word
    ("What is the status of ORD-1001?", True),
    ("How many F2 filters are left?", True),
    ("the last reading on channel C", True),
    ("Can a HEPA filter be returned?", True),
    ("status of order number 1001", True),
])
def test_an_unshaped_identifier_is_any_token_with_a_digit_or_in_capitals(text: str, names_one: bool) -> None:
    assert Grounding(text).names_identifier() is names_one


def test_a_shaped_identifier_must_match_its_shape_and_a_bad_shape_fails_at_declaration() -> None:
    assert Grounding("status of order 1001").names_identifier(r"ORD-\d+") is False
    assert Grounding("status of ORD-1001?").names_identifier(r"ORD-\d+") is True
    assert Grounding("status of XORD-1001").names_identifier(r"ORD-\d+") is False  # whole tokens only
    with pytest.raises(ValueError, match="not a regular expression"):
        Identifier(shape="ORD-(")


def test_a_tool_is_reachable_only_when_each_required_identifier_can_be_grounded() -> None:
    @tool
    def order_line(order_id: Annotated[str, Identifier(shape=r"ORD-\d+")],
                   sku: Annotated[str, Identifier()] = "") -> dict[str, Any]:
        """One line of an order."""
        return {}

    assert order_line.identifier_shapes == (("order_id", r"ORD-\d+"),)
    assert order_line.reachable(Grounding("lines of ORD-7"))  # sku is optional
    assert not order_line.reachable(Grounding("lines of order 7 for SKU-9"))

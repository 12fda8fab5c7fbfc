"""Properties that must hold for any input, checked with Hypothesis: whatever a model proposes, the gate
answers with an outcome (never an exception), runs no WRITE without an approval, and an approval's hash
binds exactly the call: equal for the same values in any key order, different for any changed value."""

from __future__ import annotations

import asyncio
import json
from typing import Any, get_args

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.test_tools_gate import ALICE, CALLS, REGISTRY

from toolcrib import CallContext, Gate, GroupPolicy, ToolCall, Tracer
from toolcrib.policy.canonical import canonical_json
from toolcrib.policy.proposals import proposal_hash
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.result import Status

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12)
KEYS = st.sampled_from(["part_number", "quantity", "query", "channel", "extra"]) | st.text(max_size=8)
ARGUMENTS = st.dictionaries(KEYS, JSON, max_size=4)
NAMES = st.sampled_from(["lookup_part", "reserve_stock", "crashing_tool", "big_lookup", "live_read_temperature",
                         "no_such_tool"]) | st.text(max_size=20)
GATE = Gate(REGISTRY, GroupPolicy({"support": ["lookup_part", "reserve_stock", "crashing_tool", "big_lookup"]}))


@settings(max_examples=300, deadline=None)
@given(name=NAMES, arguments=ARGUMENTS, said=st.text(max_size=40))
def test_any_proposed_call_gets_an_outcome_and_no_write_runs_unapproved(name: str, arguments: dict[str, Any],
                                                                        said: str) -> None:
    CALLS.clear()
    cctx = CallContext(ALICE, Tracer(), Grounding(said))
    outcome = asyncio.run(GATE.run(ToolCall("c1", name, arguments), cctx))
    assert outcome.status in get_args(Status)
    json.dumps(outcome.payload)  # what the model is shown is always plain JSON
    if outcome.status != "ok":
        assert outcome.payload["error"]["code"] and outcome.payload["error"]["message"]
    assert not any(c.startswith("reserve") for c in CALLS)  # a WRITE never runs without an approval


@settings(max_examples=200, deadline=None)
@given(arguments=st.dictionaries(st.text(max_size=8), JSON, min_size=1, max_size=5), data=st.data())
def test_the_hash_binds_the_exact_call(arguments: dict[str, Any], data: st.DataObject) -> None:
    digest = proposal_hash("reserve_stock", arguments, "alice", "t1", "p1", "v1")
    shuffled = dict(data.draw(st.permutations(list(arguments.items()))))
    assert proposal_hash("reserve_stock", shuffled, "alice", "t1", "p1", "v1") == digest
    name = data.draw(st.sampled_from(sorted(arguments)))
    changed = data.draw(JSON.filter(lambda v: canonical_json({"v": v}) != canonical_json({"v": arguments[name]})))
    assert proposal_hash("reserve_stock", {**arguments, name: changed}, "alice", "t1", "p1", "v1") != digest
    for other in (("bob", "t1", "p1", "v1"), ("alice", "t2", "p1", "v1"), ("alice", "t1", "p2", "v1"),
                  ("alice", "t1", "p1", "v2")):
        assert proposal_hash("reserve_stock", arguments, *other) != digest

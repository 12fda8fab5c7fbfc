"""Canonical JSON and the proposal hash: equal calls hash equal, any edited field does not."""

from __future__ import annotations

import math

import pytest

from toolcrib.errors import InvalidArguments
from toolcrib.policy.canonical import canonical_json, sha256_hex
from toolcrib.policy.proposals import ApprovalRefused, proposal_hash


def test_key_order_whitespace_and_integral_floats_do_not_change_the_text() -> None:
    a = canonical_json({"b": [1, 2.0, {"y": 3.0, "x": -0.0}], "a": "Zürich"})
    b = canonical_json({"a": "Zürich", "b": (1.0, 2, {"x": 0, "y": 3})})
    assert a == b == '{"a":"Zürich","b":[1,2,{"x":0,"y":3}]}'
    assert canonical_json(2.5) == "2.5" and canonical_json(True) == "true"


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    with pytest.raises(InvalidArguments):
        canonical_json({"volts": bad})


def test_non_string_keys_and_unknown_types_are_refused() -> None:
    with pytest.raises(TypeError):
        canonical_json({1: "x"})
    with pytest.raises(TypeError):
        canonical_json({"x": object()})


def test_sha256_hex_is_of_utf8() -> None:
    assert sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def test_proposal_hash_binds_every_field() -> None:
    base = ("reserve_stock", {"part": "R-100", "qty": 3}, "alice", "acme", "1", "v7")
    h = proposal_hash(*base)
    assert h == proposal_hash("reserve_stock", {"qty": 3.0, "part": "R-100"}, "alice", "acme", "1", "v7")
    for i, changed in enumerate(["cancel_order", {"part": "R-100", "qty": 4}, "bob", "other", "2", "v8"]):
        variant = list(base)
        variant[i] = changed
        assert proposal_hash(*variant) != h  # type: ignore[arg-type]


def test_approval_refused_is_a_controlled_denial() -> None:
    err = ApprovalRefused("edited")
    assert err.reason == "edited"
    assert err.to_result() == {"ok": False, "error": {
        "code": "approval_refused", "message": "the call differs from the one that was approved",
        "reason": "edited"}}

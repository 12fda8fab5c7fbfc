"""``dry:MODEL`` projects tokens and cost without calling anything."""

from __future__ import annotations

import pytest

from fakes.complete import complete
from toolcrib.errors import ConfigError
from toolcrib.models.base import Message, ToolSpec
from toolcrib.models.dry import DRY_TEXT, DryModel, placeholder_arguments
from toolcrib.models.pricing import PRICES, price_for
from toolcrib.models.registry import get_model

RESERVE = ToolSpec(
    name="reserve_stock",
    description="Reserve units of a part for an order.",
    parameters={
        "type": "object",
        "properties": {
            "sku": {"type": "string", "minLength": 3},
            "quantity": {"type": "integer", "minimum": 1},
            "warehouse": {"type": "string", "enum": ["north", "south"]},
            "rush": {"type": "boolean"},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["sku", "quantity", "warehouse", "rush", "note"],
        "additionalProperties": False,
    },
)
ASK = [Message("system", "You manage spare parts stock."), Message("user", "Reserve 2 of BRK-220 for SO-1042.")]


def test_with_tools_it_proposes_the_first_tool_with_schema_valid_placeholders() -> None:
    model = DryModel("gpt-4o-mini")
    done = complete(model, ASK, [RESERVE])
    (call,) = done.tool_calls
    assert call.name == "reserve_stock"
    assert call.arguments == {"sku": "xxx", "quantity": 1, "warehouse": "north", "rush": False, "note": ""}
    assert done.text == ""


def test_without_tools_it_answers_a_short_text_and_keeps_the_bill() -> None:
    model = get_model("dry:gpt-4o-mini", {"output_tokens": 100})
    assert isinstance(model, DryModel) and model.name == "dry:gpt-4o-mini"
    first = complete(model, ASK)
    second = complete(model, ASK, max_tokens=40)
    assert first.text == DRY_TEXT and first.tool_calls == ()
    assert (first.tokens_out, second.tokens_out) == (100, 40)
    assert model.calls == 2
    assert model.tokens_in == first.tokens_in + second.tokens_in > 0
    assert model.tokens_out == 140
    expected = (model.tokens_in * 0.15 + 140 * 0.60) / 1_000_000
    assert model.projected_cost_usd == pytest.approx(expected)


def test_offering_tools_costs_more_input_tokens() -> None:
    model = DryModel("gpt-4o")
    assert model.count_input_tokens(ASK, [RESERVE]) > model.count_input_tokens(ASK)
    assert model.count_input_tokens(ASK) == model.count_input_tokens(list(ASK))  # deterministic


def test_same_conversation_costs_more_on_a_dearer_model() -> None:
    cheap, dear = DryModel("gpt-4o-mini"), DryModel("claude-sonnet")
    complete(cheap, ASK, [RESERVE], max_tokens=50)
    complete(dear, ASK, [RESERVE], max_tokens=50)
    assert cheap.tokens_in == dear.tokens_in
    assert dear.projected_cost_usd > 10 * cheap.projected_cost_usd


def test_tool_choice_none_gets_text() -> None:
    assert complete(DryModel(), ASK, [RESERVE], tool_choice="none").tool_calls == ()


def test_prices_resolve_dated_snapshots_and_unknown_models_need_explicit_prices() -> None:
    assert price_for("gpt-4o-mini-2024-07-18") == PRICES["gpt-4o-mini"]
    assert price_for("gpt-4o-2024-08-06") == PRICES["gpt-4o"]
    assert price_for("openai:gpt-4.1-mini") == PRICES["gpt-4.1-mini"]
    with pytest.raises(ConfigError, match="input_usd_per_mtok"):
        DryModel.from_spec("my-finetune", {})
    custom = DryModel.from_spec("my-finetune", {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0,
                                                "output_tokens": 10})
    done = complete(custom, [Message("user", "x" * 400)])
    assert custom.projected_cost_usd == pytest.approx((done.tokens_in * 1.0 + 10 * 2.0) / 1_000_000)


def test_placeholders_follow_refs_arrays_and_bounds() -> None:
    schema = {
        "type": "object",
        "$defs": {"Line": {"type": "object", "properties": {"sku": {"type": "string"}}, "required": ["sku"]}},
        "properties": {
            "lines": {"type": "array", "items": {"$ref": "#/$defs/Line"}, "minItems": 1},
            "price": {"type": "number", "exclusiveMinimum": 0},
            "mode": {"const": "fast"},
            "optional": {"type": "string"},
        },
        "required": ["lines", "price", "mode"],
    }
    assert placeholder_arguments(schema) == {"lines": [{"sku": ""}], "price": 1, "mode": "fast"}

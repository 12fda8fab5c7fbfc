"""BFCL through toolcrib's registry: schema conversion and BFCL scoring on real BFCL rows."""

from __future__ import annotations

from typing import Any

import pytest

from toolcrib.evals import bfcl
from toolcrib.models.base import Completion, Message, ToolCall, ToolSpec
from toolcrib.models.scripted import FunctionModel

pytestmark = pytest.mark.skipif(not bfcl.data_dir().exists(), reason="BFCL data (../shared/data/bfcl) not present")


def _entries(category: str, limit: int | None = None) -> dict[str, dict[str, Any]]:
    return {e["question"][0][-1]["content"]: e for e in bfcl.load_category(category, limit=limit)}


def concrete(value: Any) -> Any:
    """A ground-truth value with nested acceptable-value lists resolved to their first option."""
    if isinstance(value, dict):
        return {k: concrete(next(o for o in v if o != "")) if isinstance(v, list) else concrete(v)
                for k, v in value.items() if not (isinstance(v, list) and all(o == "" for o in v))}
    if isinstance(value, list):
        return [concrete(v) for v in value]
    return value


def gold_model(category: str, limit: int | None = None) -> FunctionModel:
    """Answers every BFCL question with its ground truth (first acceptable value of each argument)."""
    entries = _entries(category, limit)

    def reply(messages: list[Message], tools: list[ToolSpec] | None) -> Completion | str:
        entry = entries[messages[-1].content]
        if category == "irrelevance":
            return "None of the functions fits this request."
        offered = {spec.name for spec in tools or []}
        calls = []
        for n, gold in enumerate(entry["ground_truth"]):
            (name, params), = gold.items()
            assert bfcl.tool_name(name) in offered  # the model sees the mapped, valid name
            args = {k: concrete(next(v for v in values if v != "")) for k, values in params.items()
                    if any(v != "" for v in values)}
            calls.append(ToolCall(id=f"c{n}", name=bfcl.tool_name(name), arguments=args))
        return Completion(tool_calls=tuple(calls))

    return FunctionModel(reply)


def wrong_model(messages: list[Message], tools: list[ToolSpec] | None) -> Completion:
    assert tools
    return Completion(tool_calls=(ToolCall(id="w", name=tools[0].name, arguments={"not_a_parameter": 1}),))


def test_bfcl_types_become_strict_json_schema() -> None:
    schema = bfcl.to_json_schema({"type": "dict", "properties": {
        "x": {"type": "float"}, "pair": {"type": "tuple", "items": {"type": "integer"}},
        "opts": {"type": "dict", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"]},
        "whatever": {"type": "any"}}, "required": ["x"]})
    assert schema["type"] == "object" and schema["additionalProperties"] is False and schema["required"] == ["x"]
    props = schema["properties"]
    assert props["x"] == {"type": "number"} and props["pair"] == {"type": "array", "items": {"type": "integer"}}
    assert props["opts"]["type"] == "object" and props["opts"]["required"] == ["deep"]
    assert "type" not in props["whatever"]


def test_every_real_bfcl_function_becomes_a_registered_tool_with_a_valid_name() -> None:
    for category in bfcl.CATEGORIES:
        for entry in bfcl.load_category(category, limit=60):
            registry, names = bfcl.make_tools(entry["function"])
            assert len(registry) == len(entry["function"])
            assert all(bfcl._NAME_OK.search(name) is None for name in registry.names())
            assert sorted(names.values()) == sorted(f["name"] for f in entry["function"])


def test_dotted_names_map_back_and_the_registry_validates_arguments() -> None:
    entry = next(e for e in bfcl.load_category("simple_python") if e["id"] == "simple_python_1")
    registry, names = bfcl.make_tools(entry["function"])
    assert names == {"math_factorial": "math.factorial"}
    tool = registry.get("math_factorial")
    assert tool is not None
    tool.validate({"number": 5})
    from toolcrib.errors import InvalidArguments

    with pytest.raises(InvalidArguments):
        tool.validate({"number": "five"})


@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_the_gold_answer_scores_one_and_a_wrong_one_scores_zero(category: str) -> None:
    good = bfcl.run_bfcl(gold_model(category, 40), [category], limit=40)
    assert good["categories"][category]["accuracy"] == 1.0, good["categories"][category]["failures"][:3]
    bad = bfcl.run_bfcl(FunctionModel(wrong_model), [category], limit=40)
    assert bad["categories"][category]["accuracy"] == 0.0


def test_parallel_calls_are_matched_in_any_order() -> None:
    entry = bfcl.load_category("parallel", limit=1)[0]
    gold = entry["ground_truth"]
    calls = [(name, {k: next(v for v in vals if v != "") for k, vals in params.items() if any(v != "" for v in vals)})
             for g in reversed(gold) for name, params in g.items()]
    assert bfcl.score_entry("parallel", calls, gold, entry["function"]) == ""
    assert "expected" in bfcl.score_entry("parallel", calls[:1], gold, entry["function"])


def test_strings_compare_like_bfcl_and_optional_arguments_may_be_omitted() -> None:
    functions = [{"name": "f", "parameters": {"properties": {"city": {"type": "string"}, "unit": {"type": "string"},
                                                             "n": {"type": "integer"}, "x": {"type": "float"}}}}]
    gold = [{"f": {"city": ["New York, NY"], "unit": ["", "celsius"], "n": [3], "x": [2.0]}}]
    assert bfcl.score_entry("simple_python", [("f", {"city": "new york ny", "n": 3, "x": 2})], gold, functions) == ""
    assert bfcl.score_entry("simple_python", [("f", {"city": "Boston", "n": 3, "x": 2})], gold, functions)
    assert bfcl.score_entry("simple_python", [("f", {"city": "New York, NY", "n": 3.0, "x": 2})], gold, functions)

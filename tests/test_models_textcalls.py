"""Tool calls that open models write as text, recovered as proposals.

The samples are the published shapes of each format: Qwen's function-calling guide (Hermes tags,
parallel calls), NousResearch's Hermes-Function-Calling README (single-quoted dicts), vLLM's
tool-parser tests (Mistral [TOOL_CALLS] in both generations, Llama-3 JSON with ';' separators,
a reasoning model's <think> block before the call) and Meta's Llama 3.1 prompt-format page
(<|python_tag|> ... <|eom_id|>).
"""

from __future__ import annotations

import pytest

from toolcrib.models.textcalls import parse_text_tool_calls


def _names_args(text: str) -> list[tuple[str, dict[str, object]]]:
    _, calls = parse_text_tool_calls(text)
    return [(c.name, c.arguments) for c in calls]


# --- Hermes / Qwen ---------------------------------------------------------------------------------

def test_qwen_parallel_calls_in_hermes_tags() -> None:
    text = (
        '<tool_call>\n{"name": "get_current_temperature", "arguments": {"location": "San Francisco, CA, USA"}}\n'
        "</tool_call>\n<tool_call>\n"
        '{"name": "get_temperature_date", "arguments": {"location": "San Francisco, CA, USA", "date": "2024-10-01"}}\n'
        "</tool_call>"
    )
    rest, calls = parse_text_tool_calls(text)
    assert rest == ""
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_current_temperature", {"location": "San Francisco, CA, USA"}),
        ("get_temperature_date", {"location": "San Francisco, CA, USA", "date": "2024-10-01"}),
    ]
    assert all(c.parse_error is None for c in calls)
    assert len({c.id for c in calls}) == 2


def test_hermes_single_quoted_dict_and_chatml_end_token() -> None:
    text = "<tool_call>\n{'arguments': {'symbol': 'TSLA'}, 'name': 'get_current_stock_price'}\n</tool_call><|im_end|>"
    rest, calls = parse_text_tool_calls(text)
    assert rest == ""
    assert [(c.name, c.arguments) for c in calls] == [("get_current_stock_price", {"symbol": "TSLA"})]


def test_reasoning_before_the_call_is_kept_as_text() -> None:
    text = (
        "The user wants typical design data, so I should search.\n</think>\n\n<tool_call>\n"
        '{"name": "internet_search", "arguments": {"question": "5MW gas turbine design parameters"}}\n'
        "</tool_call>\n\n "
    )
    rest, calls = parse_text_tool_calls(text)
    assert rest == "The user wants typical design data, so I should search.\n</think>"
    assert [(c.name, c.arguments) for c in calls] == [
        ("internet_search", {"question": "5MW gas turbine design parameters"})
    ]


def test_hermes_malformed_json_is_a_call_with_parse_error() -> None:
    text = '<tool_call>\n{"name": "lookup_part", "arguments": {"sku": "A-1",}\n</tool_call>'
    rest, calls = parse_text_tool_calls(text)
    assert rest == ""
    (call,) = calls
    assert call.name == "lookup_part"
    assert call.arguments == {}
    assert call.parse_error and "invalid JSON" in call.parse_error
    assert call.raw_arguments is not None and '"sku": "A-1",' in call.raw_arguments


def test_hermes_unclosed_tag_at_end_of_output() -> None:
    text = '<tool_call>\n{"name": "get_order_status", "arguments": {"order_id": "SO-1042"}}'
    assert _names_args(text) == [("get_order_status", {"order_id": "SO-1042"})]


def test_arguments_sent_as_a_json_string_are_decoded() -> None:
    text = '<tool_call>{"name": "add", "arguments": "{\\"a\\": 1, \\"b\\": 2}"}</tool_call>'
    assert _names_args(text) == [("add", {"a": 1, "b": 2})]


def test_arguments_that_are_not_an_object_are_a_parse_error() -> None:
    _, calls = parse_text_tool_calls('<tool_call>{"name": "add", "arguments": [1, 2]}</tool_call>')
    (call,) = calls
    assert call.name == "add" and call.arguments == {}
    assert call.parse_error == "arguments must be a JSON object, got list"


# --- Mistral ---------------------------------------------------------------------------------------

def test_mistral_tool_calls_array() -> None:
    text = ('[TOOL_CALLS] [{"name": "get_current_weather", "arguments":{"city": "San Francisco", '
            '"state": "CA", "unit": "celsius"}}]')
    rest, calls = parse_text_tool_calls(text)
    assert rest == ""
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_current_weather", {"city": "San Francisco", "state": "CA", "unit": "celsius"})
    ]


def test_mistral_arguments_before_name_and_several_calls() -> None:
    text = ('[TOOL_CALLS][{"arguments":{"name": "John Doe"}, "name": "get_age"}, '
            '{"name": "add", "arguments": {"a": 3.5, "b": 4}}]')
    assert _names_args(text) == [("get_age", {"name": "John Doe"}), ("add", {"a": 3.5, "b": 4})]


def test_mistral_v11_name_then_arguments() -> None:
    text = '[TOOL_CALLS]get_current_weather{"city": "San Francisco", "state": "CA", "unit": "celsius"}'
    assert _names_args(text) == [
        ("get_current_weather", {"city": "San Francisco", "state": "CA", "unit": "celsius"})
    ]
    assert _names_args('[TOOL_CALLS]add[ARGS]{"a": 3.5, "b": 4}') == [("add", {"a": 3.5, "b": 4})]


def test_mistral_truncated_array_is_a_parse_error_not_a_crash() -> None:
    # A missing "}" before the closing "]": seen in vLLM's own test samples.
    text = ('[TOOL_CALLS][{"name": "add", "arguments": {"a": 3.5, "b": 4}}, {"name": "get_current_weather", '
            '"arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}]')
    _, calls = parse_text_tool_calls(text)
    assert len(calls) == 1
    assert calls[0].name == "add"
    assert calls[0].arguments == {}
    assert calls[0].parse_error is not None


# --- Llama 3 ---------------------------------------------------------------------------------------

def test_llama31_python_tag() -> None:
    text = ('<|python_tag|>{"name": "get_current_conditions", "parameters": '
            '{"location": "San Francisco, CA", "unit": "Fahrenheit"}}<|eom_id|>')
    rest, calls = parse_text_tool_calls(text)
    assert rest == ""
    assert [(c.name, c.arguments) for c in calls] == [
        ("get_current_conditions", {"location": "San Francisco, CA", "unit": "Fahrenheit"})
    ]


def test_llama3_json_calls_separated_by_semicolons() -> None:
    text = ('{"name": "searchTool", "parameters": {"query": "test1"}}; '
            '{"name": "getOpenIncidentsTool", "parameters": {}}; '
            '{"name": "searchTool", "parameters": {"query": "test2"}}')
    rest, calls = parse_text_tool_calls(text)
    assert rest == ""
    assert [(c.name, c.arguments) for c in calls] == [
        ("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}), ("searchTool", {"query": "test2"})
    ]


def test_llama3_json_call_inside_prose_with_brackets_in_strings() -> None:
    text = ('Here is the result: {"name": "searchTool", "parameters": {"query": "test {value} [complex]", '
            '"nested": {"inner": "more {brackets}"}}} Would you like to know more?')
    rest, calls = parse_text_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [
        ("searchTool", {"query": "test {value} [complex]", "nested": {"inner": "more {brackets}"}})
    ]
    assert rest == "Here is the result:  Would you like to know more?"


def test_llama3_python_tag_with_broken_json_is_a_parse_error() -> None:
    _, calls = parse_text_tool_calls('<|python_tag|>{"name": "invalidTool", "parameters": {invalid json}')
    (call,) = calls
    assert call.name == "invalidTool" and call.arguments == {} and call.parse_error


def test_message_that_is_only_a_broken_call_is_reported() -> None:
    _, calls = parse_text_tool_calls('{"name": "invalidTool", "parameters": {invalid json}')
    (call,) = calls
    assert call.name == "invalidTool" and call.parse_error


# --- fenced and bare JSON --------------------------------------------------------------------------

def test_json_fence_with_prose_around_it() -> None:
    text = ('I will look that part up.\n```json\n{"name": "lookup_part", "arguments": {"sku": "BRK-220"}}\n```\n'
            "Then I can answer.")
    rest, calls = parse_text_tool_calls(text)
    assert [(c.name, c.arguments) for c in calls] == [("lookup_part", {"sku": "BRK-220"})]
    assert rest == "I will look that part up.\n\nThen I can answer."


def test_json_fence_with_an_array_of_calls() -> None:
    text = ('```json\n[{"name": "a", "arguments": {}}, {"name": "b", "arguments": {"x": 1}}]\n```')
    assert _names_args(text) == [("a", {}), ("b", {"x": 1})]


def test_openai_shaped_object_in_text() -> None:
    text = '{"type": "function", "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Oslo\\"}"}}'
    assert _names_args(text) == [("get_weather", {"city": "Oslo"})]


# --- prose that must yield nothing -----------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "The capital of France is Paris.",
    "Order SO-1042 shipped on 3 March; the tracking number is 1Z999AA10123456784.",
    "In Python a set literal looks like {1, 2, 3} and a list like [1, 2, 3].",
    'A person record is {"name": "Ada", "born": 1815}; that is data, not a call.',
    "Use the `lookup_part` tool with a SKU, for example lookup_part(sku='BRK-220').",
    "```python\nprint({'name': 'x'})\n```",
    "",
])
def test_plain_prose_yields_no_calls_and_is_unchanged(text: str) -> None:
    assert parse_text_tool_calls(text) == (text, [])

"""The Responses API backend (openai-responses:MODEL) against a loopback server speaking its wire format.

The server answers with the openai SDK's own ``Response`` objects and checks requests as the API does
(strict schemas, function_call_output answering a known call_id, previous_response_id it stored).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed")

from fakes.complete import complete
from fakes.openai_server import Reply, error_reply
from fakes.responses_server import FakeResponsesServer, response_reply
from toolcrib import Gate, GroupPolicy, Identifier, Principal, Registry, Runner, RunnerSettings, tool
from toolcrib.errors import LimitExceeded, MissingDependency, ModelUnavailable
from toolcrib.models import network
from toolcrib.models.base import Message, ToolCall, ToolSpec
from toolcrib.models.registry import get_model
from toolcrib.models.responses import OpenAIResponsesModel

LOOKUP = ToolSpec(
    name="lookup_part",
    description="Look up a spare part by part number.",
    parameters={"type": "object", "properties": {"part_number": {"type": "string"}},
                "required": ["part_number"], "additionalProperties": False},
)
ASK = [Message("system", "You help with spare parts."), Message("user", "What does HLV-2205 cost?")]
RAN: list[str] = []


@tool
def lookup_part(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """Look up a part's price by part number."""
    RAN.append(part_number)
    return {"found": True, "part_number": part_number, "price_usd": 52.0}


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    with FakeResponsesServer() as fake:
        yield fake


def _model(server: FakeResponsesServer, **settings: object) -> OpenAIResponsesModel:
    merged: dict[str, object] = {"base_url": server.url, "backoff_s": 0.0}
    merged.update(settings)
    return OpenAIResponsesModel.from_spec("test-model", merged)


def _runner(model: OpenAIResponsesModel) -> Runner:
    RAN.clear()
    gate = Gate(Registry([lookup_part]), GroupPolicy({"support": ["*"]}))
    return Runner(model, gate, RunnerSettings(mode="loop"))


USER = Principal("alice", groups=frozenset({"support"}))


def test_a_tool_call_then_the_answer_through_the_gate(server: FakeResponsesServer) -> None:
    server.queue(response_reply(calls=[("lookup_part", '{"part_number": "HLV-2205"}')], input_tokens=50),
                 response_reply("HLV-2205 costs $52.00 [lookup_part#1].", input_tokens=80, output_tokens=12))
    with _model(server, api_key="sk-test") as model:
        answer = _runner(model).ask("What does part HLV-2205 cost?", USER)
    assert answer.text == "HLV-2205 costs $52.00 [lookup_part#1]." and answer.outcome == "answered"
    assert RAN == ["HLV-2205"] and [c.id for c in answer.citations] == ["lookup_part#1"]
    assert (answer.tokens_in, answer.tokens_out) == (130, 21)
    first, second = (r.body for r in server.requests)
    assert first["tools"] == [{"type": "function", "name": "lookup_part",
                               "description": "Look up a part's price by part number.",
                               "parameters": first["tools"][0]["parameters"], "strict": True}]
    assert first["store"] is False and "previous_response_id" not in second  # stateless by default
    call = next(i for i in second["input"] if i["type"] == "function_call")
    result = next(i for i in second["input"] if i["type"] == "function_call_output")
    assert call["call_id"] == result["call_id"] and call["call_id"].startswith("call_")
    assert '"price_usd": 52.0' in result["output"]
    assert server.requests[0].headers["Authorization"] == "Bearer sk-test"


def test_parallel_calls_keep_their_call_ids_and_are_answered_in_one_request(server: FakeResponsesServer) -> None:
    server.queue(response_reply("Checking both.", calls=[("lookup_part", '{"part_number": "HLV-2205"}'),
                                                         ("lookup_part", '{"part_number": "BRK-220"}')]),
                 response_reply("Both found."))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP], tool_choice="required", max_tokens=64)
        assert done.text == "Checking both." and (done.tokens_in, done.tokens_out) == (40, 9)
        assert [(c.name, c.arguments) for c in done.tool_calls] == [
            ("lookup_part", {"part_number": "HLV-2205"}), ("lookup_part", {"part_number": "BRK-220"})]
        a, b = done.tool_calls
        history = [*ASK, Message("assistant", done.text, tool_calls=done.tool_calls),
                   Message("tool", '{"ok": true}', tool_call_id=b.id),
                   Message("tool", '{"ok": true}', tool_call_id=a.id)]
        assert complete(model, history, [LOOKUP]).text == "Both found."
    first, second = (r.body for r in server.requests)
    assert first["parallel_tool_calls"] is True and first["tool_choice"] == "required"
    assert first["max_output_tokens"] == 64
    assert [i["type"] for i in second["input"]] == ["message", "message", "message", "function_call",
                                                     "function_call", "function_call_output", "function_call_output"]
    assert second["input"][0] == {"type": "message", "role": "system", "content": "You help with spare parts."}
    assert [i["call_id"] for i in second["input"][3:]] == [a.id, b.id, b.id, a.id]


def test_malformed_arguments_become_a_parse_error_and_the_gate_refuses_them(server: FakeResponsesServer) -> None:
    server.queue(response_reply(calls=[("lookup_part", '{"part_number": "HLV-22')]),
                 response_reply("I could not look that up."))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP])
        (call,) = done.tool_calls
        assert call.arguments == {} and call.raw_arguments == '{"part_number": "HLV-22'
        assert call.parse_error and call.parse_error.startswith("invalid JSON")
        server.replies.clear()
        server.queue(response_reply(calls=[("lookup_part", '{"part_number": "HLV-22')]),
                     *[response_reply("I could not look that up.")] * 2)  # the runner reminds once, then abstains
        answer = _runner(model).ask("What does part HLV-2205 cost?", USER)
    assert RAN == [] and answer.abstained  # the tool never ran, and nothing was invented
    assert [(o["name"], o["error"]["code"]) for o in answer.executed + answer.refused if "error" in o] == [
        ("lookup_part", "invalid_arguments")]
    sent_back = server.requests[2].body["input"]  # the run's second model call
    call_item = next(i for i in sent_back if i["type"] == "function_call")
    output = next(i for i in sent_back if i["type"] == "function_call_output")
    assert call_item["arguments"] == '{"part_number": "HLV-22'  # the model sees what it wrote
    assert output["call_id"] == call_item["call_id"] and "invalid_arguments" in output["output"]


def test_store_continues_with_previous_response_id_and_only_the_new_items(server: FakeResponsesServer) -> None:
    server.queue(response_reply(calls=[("lookup_part", '{"part_number": "HLV-2205"}')]),
                 response_reply("HLV-2205 costs $52.00 [lookup_part#1]."))
    with _model(server, store=True) as model:
        answer = _runner(model).ask("What does part HLV-2205 cost?", USER)
    assert answer.outcome == "answered"
    first, second = (r.body for r in server.requests)
    assert first["store"] is True and "previous_response_id" not in first
    assert second["previous_response_id"] in server.stored
    assert [i["type"] for i in second["input"]] == ["function_call_output"]  # the rest is on the server


def test_store_falls_back_to_resending_when_the_conversation_is_not_a_continuation(
        server: FakeResponsesServer) -> None:
    server.queue(response_reply(calls=[("lookup_part", '{"part_number": "HLV-2205"}')]), response_reply("ok"))
    with _model(server, store=True) as model:
        done = complete(model, ASK, [LOOKUP])
        other = ToolCall(id="call_elsewhere", name="lookup_part", arguments={"part_number": "HLV-2205"})
        complete(model, [*ASK, Message("assistant", "", tool_calls=(other,)),
                        Message("tool", "{}", tool_call_id=other.id)], [LOOKUP])
    assert done.tool_calls and "previous_response_id" not in server.requests[1].body
    assert len(server.requests[1].body["input"]) == 4


def test_401_is_not_retried_and_does_not_leak_the_key(server: FakeResponsesServer) -> None:
    key = "sk-proj-SECRETabcdefghijklmnop1234"
    server.queue(error_reply(401, f"Incorrect API key provided: {key}.", code="invalid_api_key"))
    with _model(server, api_key=key) as model, pytest.raises(ModelUnavailable) as caught:
        complete(model, ASK)
    message = str(caught.value)
    assert key not in message and "SECRET" not in message
    assert "HTTP 401" in message and "OPENAI_API_KEY" in message
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert len(server.requests) == 1


def test_500s_are_retried_then_reported(server: FakeResponsesServer) -> None:
    server.queue(*[error_reply(500, "The server had an error")] * 3, response_reply("too late"))
    model = _model(server, max_retries=2)
    with model, pytest.raises(ModelUnavailable, match=r"HTTP 500 after 3 attempts: server error"):
        complete(model, ASK)
    assert model.retries == 2 and len(server.requests) == 3


def test_429_waits_for_retry_after_within_bounds(server: FakeResponsesServer) -> None:
    server.queue(error_reply(429, "Rate limit reached", code="rate_limit_exceeded", headers={"Retry-After": "0.4"}),
                 response_reply("ok"))
    model = _model(server)
    started = time.perf_counter()
    with model:
        assert complete(model, ASK).text == "ok"
    assert time.perf_counter() - started >= 0.4 and model.retries == 1

    server.queue(error_reply(429, "Rate limit reached", headers={"Retry-After": "3600"}))
    started = time.perf_counter()
    with _model(server) as model, pytest.raises(ModelUnavailable, match=r"HTTP 429.*retry after 3600 s"):
        complete(model, ASK)
    assert time.perf_counter() - started < 1.0  # not an hour's sleep inside a run


def test_out_of_quota_is_not_retried(server: FakeResponsesServer) -> None:
    server.queue(error_reply(429, "You exceeded your current quota", code="insufficient_quota"))
    with _model(server) as model, pytest.raises(ModelUnavailable, match="out of quota"):
        complete(model, ASK)
    assert len(server.requests) == 1


def test_a_slow_server_times_out_within_the_configured_timeout(server: FakeResponsesServer) -> None:
    server.queue(Reply(200, response_reply("late").body, delay_s=3.0))
    started = time.perf_counter()
    with _model(server, timeout_s=0.3) as model, pytest.raises(ModelUnavailable,
                                                               match=r"did not answer within 0.3 s .*timeout_s"):
        complete(model, ASK)
    assert time.perf_counter() - started < 1.5 and len(server.requests) == 1


def test_a_reply_cut_at_max_output_tokens_is_a_limit(server: FakeResponsesServer) -> None:
    server.queue(response_reply("The price is", status="incomplete", incomplete_reason="max_output_tokens"))
    with _model(server) as model, pytest.raises(LimitExceeded, match=r"output token limit \(16 tokens\)"):
        complete(model, ASK, max_tokens=16)


def test_azure_by_base_url_and_api_version() -> None:
    with FakeResponsesServer(route="/openai/responses", url_path="/openai") as server:
        server.queue(response_reply("from Azure"))
        model = OpenAIResponsesModel.from_spec("my-deployment", {"base_url": server.url, "api_key": "azure-key",
                                                                 "api_version": "2025-04-01-preview"})
        with model:
            assert complete(model, ASK).text == "from Azure"
    (request,) = server.requests
    assert request.path == "/openai/responses?api-version=2025-04-01-preview"
    assert request.headers["api-key"] == "azure-key" and request.body["model"] == "my-deployment"


def test_spec_registry_network_guard_and_missing_sdk(monkeypatch: pytest.MonkeyPatch,
                                                     server: FakeResponsesServer) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    server.queue(response_reply("via the registry"))
    model = get_model("openai-responses:gpt-test", {"backoff_s": 0})
    assert isinstance(model, OpenAIResponsesModel) and model.name == "openai-responses:gpt-test"
    with model:
        assert complete(model, ASK).text == "via the registry"
    assert "Authorization" not in server.requests[0].headers  # a server without a key gets none

    monkeypatch.setattr(network, "ALLOW_NETWORK", False)
    remote = OpenAIResponsesModel.from_spec("gpt-test", {"base_url": "https://api.openai.com/v1",
                                                         "api_key": "sk-test"})
    with remote, pytest.raises(ModelUnavailable, match="ALLOW_NETWORK"):
        complete(remote, ASK)

    monkeypatch.setitem(sys.modules, "openai", None)  # as if the extra were not installed
    with pytest.raises(MissingDependency, match=r"toolcrib\[openai\]"):
        get_model("openai-responses:gpt-test", {})


def test_optional_arguments_are_sent_as_strict_mode_wants_and_a_null_means_not_given(
        server: FakeResponsesServer) -> None:
    search = ToolSpec(
        name="search_orders", description="Find orders.",
        parameters={"type": "object", "additionalProperties": False, "required": ["customer"], "properties": {
            "customer": {"type": "string"},
            "status": {"type": "string", "enum": ["open", "shipped"]},
            "window": {"type": "object", "additionalProperties": False, "required": ["days"],
                       "properties": {"days": {"type": "integer"}, "from": {"type": "string"}}}}})
    server.queue(response_reply(calls=[("search_orders", '{"customer": "ACME", "status": null, '
                                                         '"window": {"days": 7, "from": null}}')]))
    with _model(server) as model:
        done = complete(model, ASK, [search])
    sent = server.requests[0].body["tools"][0]["parameters"]
    # strict mode: every property listed as required, the optional ones nullable (the API refuses otherwise)
    assert sent["required"] == ["customer", "status", "window"]
    assert sent["properties"]["status"] == {"type": ["string", "null"], "enum": ["open", "shipped", None]}
    assert sent["properties"]["window"]["type"] == ["object", "null"]
    assert sent["properties"]["window"]["required"] == ["days", "from"]
    assert sent["properties"]["customer"] == {"type": "string"}
    # the nulls it sent for what was optional are dropped, so defaults apply as without the rewrite
    assert done.tool_calls[0].arguments == {"customer": "ACME", "window": {"days": 7}}

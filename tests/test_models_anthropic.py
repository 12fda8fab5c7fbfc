"""The Anthropic backend (anthropic:MODEL) against a loopback server speaking the Messages API.

The server answers with the anthropic SDK's own ``Message`` objects and checks requests as the API
does (max_tokens required, system as a parameter, every tool_use answered first in the next user turn).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from typing import Annotated, Any

import pytest

pytest.importorskip("anthropic", reason="the anthropic extra is not installed")

from anthropic.types import Message as SDKMessage
from anthropic.types import ToolUseBlock, Usage

from fakes.anthropic_server import FakeAnthropicServer, anthropic_error, message_reply
from fakes.complete import complete
from fakes.openai_server import Reply
from toolcrib import Gate, GroupPolicy, Identifier, Principal, Registry, Runner, RunnerSettings, tool
from toolcrib.errors import LimitExceeded, MissingDependency, ModelUnavailable
from toolcrib.models import network
from toolcrib.models.anthropic import AnthropicModel
from toolcrib.models.base import Message, ToolSpec
from toolcrib.models.registry import get_model

LOOKUP = ToolSpec(
    name="lookup_part",
    description="Look up a spare part by part number.",
    parameters={"type": "object", "properties": {"part_number": {"type": "string"}},
                "required": ["part_number"], "additionalProperties": False},
)
ASK = [Message("system", "You help with spare parts."), Message("user", "What does HLV-2205 cost?")]
USER = Principal("alice", groups=frozenset({"support"}))
RAN: list[str] = []


@tool
def lookup_part(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """Look up a part's price by part number."""
    RAN.append(part_number)
    return {"found": True, "part_number": part_number, "price_usd": 52.0}


@pytest.fixture
def server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer() as fake:
        yield fake


def _model(server: FakeAnthropicServer, **settings: object) -> AnthropicModel:
    merged: dict[str, object] = {"base_url": server.url, "backoff_s": 0.0}
    merged.update(settings)
    return AnthropicModel.from_spec("claude-test", merged)


def _runner(model: AnthropicModel) -> Runner:
    RAN.clear()
    return Runner(model, Gate(Registry([lookup_part]), GroupPolicy({"support": ["*"]})), RunnerSettings(mode="loop"))


def test_a_tool_call_then_the_answer_through_the_gate(server: FakeAnthropicServer) -> None:
    server.queue(message_reply("Let me look.", calls=[("lookup_part", {"part_number": "HLV-2205"})]),
                 message_reply("HLV-2205 costs $52.00 [lookup_part#1].", input_tokens=20,
                               cache_read_input_tokens=100))
    with _model(server, api_key="sk-ant-test") as model:
        answer = _runner(model).ask("What does part HLV-2205 cost?", USER)
    assert answer.text == "HLV-2205 costs $52.00 [lookup_part#1]." and answer.outcome == "answered"
    assert RAN == ["HLV-2205"]
    assert (answer.tokens_in, answer.tokens_out) == (30 + 120, 16)  # cached input tokens count as sent
    first, second = (r.body for r in server.requests)
    assert isinstance(first["system"], str) and all(m["role"] != "system" for m in first["messages"])
    assert first["tools"][0]["name"] == "lookup_part" and first["tools"][0]["strict"] is True
    assert first["tools"][0]["input_schema"]["additionalProperties"] is False
    assert first["tool_choice"] == {"type": "auto"} and first["max_tokens"] == 400  # the run's max_tokens
    use = next(b for m in second["messages"] if m["role"] == "assistant" for b in m["content"]
               if b["type"] == "tool_use")
    result = second["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == use["id"]
    assert server.requests[0].headers["Authorization"] == "Bearer sk-ant-test"


def test_parallel_tool_use_is_answered_in_one_user_turn(server: FakeAnthropicServer) -> None:
    server.queue(message_reply(calls=[("lookup_part", {"part_number": "HLV-2205"}),
                                      ("lookup_part", {"part_number": "BRK-220"})]),
                 message_reply("Both found."))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP], tool_choice="required")
        a, b = done.tool_calls
        assert [c.arguments for c in done.tool_calls] == [{"part_number": "HLV-2205"}, {"part_number": "BRK-220"}]
        history = [*ASK, Message("assistant", "", tool_calls=done.tool_calls),
                   Message("tool", '{"ok": true}', tool_call_id=a.id),
                   Message("tool", '{"ok": false, "error": {"code": "tool_failed", "message": "down"}}',
                           tool_call_id=b.id),
                   Message("user", "Answer briefly.")]
        assert complete(model, history, [LOOKUP], tool_choice="none").text == "Both found."
    first, second = (r.body for r in server.requests)
    assert first["tool_choice"] == {"type": "any"} and second["tool_choice"] == {"type": "none"}
    last = second["messages"][-1]
    assert last["role"] == "user" and [block["type"] for block in last["content"]] == [
        "tool_result", "tool_result", "text"]
    assert [block["tool_use_id"] for block in last["content"][:2]] == [a.id, b.id]


def test_max_tokens_stop_is_a_limit(server: FakeAnthropicServer) -> None:
    server.queue(message_reply("The price of HLV-2205 is", stop_reason="max_tokens"))
    with _model(server) as model, pytest.raises(LimitExceeded, match=r"output token limit .*max_tokens 32"):
        complete(model, ASK, max_tokens=32)


def test_a_tool_input_that_is_not_an_object_becomes_a_parse_error(server: FakeAnthropicServer) -> None:
    # Some Anthropic-compatible servers pass a model's raw text through: build the block unvalidated.
    broken = ToolUseBlock.model_construct(type="tool_use", id="toolu_broken", name="lookup_part",
                                          input='{"part_number": "HLV-22')
    message = SDKMessage.model_construct(id="msg_1", type="message", role="assistant", model="claude-test",
                                         content=[broken], stop_reason="tool_use", stop_sequence=None,
                                         usage=Usage(input_tokens=5, output_tokens=5))
    server.queue(Reply(200, message.model_dump_json(warnings=False)),
                 *[message_reply("I could not look that up.")] * 2)
    with _model(server) as model:
        answer = _runner(model).ask("What does part HLV-2205 cost?", USER)
    assert RAN == [] and answer.abstained
    assert [(o["name"], o["error"]["code"]) for o in answer.executed + answer.refused if "error" in o] == [
        ("lookup_part", "invalid_arguments")]
    sent_back = server.requests[1].body["messages"]
    assert sent_back[-2]["content"][0] == {"type": "tool_use", "id": "toolu_broken", "name": "lookup_part",
                                           "input": {}}
    result = sent_back[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_broken" and "invalid_arguments" in result["content"]


def test_401_does_not_leak_the_key(server: FakeAnthropicServer) -> None:
    key = "sk-ant-api03-SECRETabcdefghijklmnop"
    server.queue(anthropic_error(401, f"invalid x-api-key {key}", kind="authentication_error"))
    with _model(server, api_key=key) as model, pytest.raises(ModelUnavailable) as caught:
        complete(model, ASK)
    message = str(caught.value)
    assert "SECRET" not in message and "HTTP 401" in message and "ANTHROPIC_API_KEY" in message
    assert caught.value.__cause__ is None and caught.value.__context__ is None
    assert len(server.requests) == 1


def test_overloaded_is_retried_then_reported(server: FakeAnthropicServer) -> None:
    server.queue(*[anthropic_error(529, "Overloaded", kind="overloaded_error")] * 2)
    model = _model(server, max_retries=1)
    with model, pytest.raises(ModelUnavailable, match=r"HTTP 529 after 2 attempts: server error \(Overloaded\)"):
        complete(model, ASK)
    assert model.retries == 1


def test_429_waits_for_retry_after(server: FakeAnthropicServer) -> None:
    server.queue(anthropic_error(429, "rate limited", kind="rate_limit_error", headers={"retry-after": "0.3"}),
                 message_reply("ok"))
    model = _model(server)
    started = time.perf_counter()
    with model:
        assert complete(model, ASK).text == "ok"
    assert time.perf_counter() - started >= 0.3 and model.retries == 1


def test_a_slow_server_times_out_within_the_configured_timeout(server: FakeAnthropicServer) -> None:
    server.queue(Reply(200, message_reply("late").body, delay_s=3.0))
    started = time.perf_counter()
    with _model(server, timeout_s=0.3) as model, pytest.raises(ModelUnavailable, match=r"within 0.3 s"):
        complete(model, ASK)
    assert time.perf_counter() - started < 1.5 and len(server.requests) == 1


def test_settings_registry_network_guard_and_missing_sdk(monkeypatch: pytest.MonkeyPatch,
                                                        server: FakeAnthropicServer) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    with pytest.raises(Exception, match=r"api_key.*ANTHROPIC_API_KEY"):
        AnthropicModel.from_spec("claude-test", {})

    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    server.queue(message_reply("via the registry"))
    model = get_model("anthropic:claude-test", {"backoff_s": 0, "max_tokens": 77})
    assert isinstance(model, AnthropicModel) and model.name == "anthropic:claude-test"
    with model:
        assert complete(model, ASK).text == "via the registry"
    request = server.requests[0]
    assert request.body["max_tokens"] == 77
    assert "Authorization" not in request.headers and "x-api-key" not in request.headers

    monkeypatch.setattr(network, "ALLOW_NETWORK", False)
    remote = AnthropicModel.from_spec("claude-test", {"base_url": "https://api.anthropic.com", "api_key": "k"})
    with remote, pytest.raises(ModelUnavailable, match="ALLOW_NETWORK"):
        complete(remote, ASK)

    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(MissingDependency, match=r"toolcrib\[anthropic\]"):
        get_model("anthropic:claude-test", {"api_key": "k"})

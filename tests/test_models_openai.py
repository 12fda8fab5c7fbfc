"""The Chat Completions backend against real HTTP servers on loopback.

The backend is built on the official ``openai`` SDK (the ``openai`` extra). Most tests use
``FakeChatServer`` (stdlib http.server speaking the documented protocol and checking request shapes,
its replies validated against the SDK's ``ChatCompletion`` type); two slow tests run llama-cpp-python's
own OpenAI-compatible server on the shipped GGUF.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed")

from fakes.complete import complete
from fakes.openai_server import FakeChatServer, Reply, chat_reply, error_reply
from toolcrib.errors import ConfigError, ModelUnavailable
from toolcrib.models import network
from toolcrib.models.base import Message, ModelSettings, ToolCall, ToolSpec
from toolcrib.models.openai import OpenAIChatModel
from toolcrib.models.registry import get_model

LOOKUP = ToolSpec(
    name="lookup_part",
    description="Look up a spare part by SKU.",
    parameters={"type": "object", "properties": {"sku": {"type": "string"}},
                "required": ["sku"], "additionalProperties": False},
)
STATUS = ToolSpec(
    name="get_order_status",
    description="Status of one order.",
    parameters={"type": "object", "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"], "additionalProperties": False},
)
ASK = [Message("system", "You help with spare parts."), Message("user", "Is BRK-220 in stock?")]


@pytest.fixture
def server() -> Iterator[FakeChatServer]:
    with FakeChatServer() as fake:
        yield fake


def _model(server: FakeChatServer, **settings: object) -> OpenAIChatModel:
    merged: dict[str, object] = {"base_url": server.url, "backoff_s": 0.0}
    merged.update(settings)
    model = OpenAIChatModel.from_spec("test-model", merged)
    return model


def test_one_tool_call(server: FakeChatServer) -> None:
    server.queue(chat_reply(tool_calls=[("lookup_part", '{"sku": "BRK-220"}')], prompt_tokens=61,
                            completion_tokens=12))
    with _model(server, api_key="sk-local-test") as model:
        done = complete(model, ASK, [LOOKUP, STATUS])
    assert [(c.name, c.arguments, c.parse_error) for c in done.tool_calls] == [
        ("lookup_part", {"sku": "BRK-220"}, None)]
    assert done.tool_calls[0].id.startswith("call_")
    assert (done.tokens_in, done.tokens_out) == (61, 12)
    assert done.ms > 0
    (request,) = server.requests
    assert request.headers["Authorization"] == "Bearer sk-local-test"
    assert request.body["tools"][0] == {
        "type": "function",
        "function": {"name": "lookup_part", "description": "Look up a spare part by SKU.",
                     "parameters": LOOKUP.parameters, "strict": True},
    }
    assert request.body["tool_choice"] == "auto"


def test_several_parallel_calls(server: FakeChatServer) -> None:
    server.queue(chat_reply(tool_calls=[("lookup_part", '{"sku": "BRK-220"}'),
                                        ("get_order_status", '{"order_id": "SO-1042"}')]))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP, STATUS])
    assert [(c.name, c.arguments) for c in done.tool_calls] == [
        ("lookup_part", {"sku": "BRK-220"}), ("get_order_status", {"order_id": "SO-1042"})]
    assert len({c.id for c in done.tool_calls}) == 2
    assert "Authorization" not in server.requests[0].headers  # a local server without a key


def test_arguments_that_are_not_json_become_a_parse_error(server: FakeChatServer) -> None:
    server.queue(chat_reply(tool_calls=[("lookup_part", '{"sku": "BRK-220"'), ("get_order_status", "[1, 2]")]))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP, STATUS])
    broken, not_object = done.tool_calls
    assert broken.name == "lookup_part" and broken.arguments == {}
    assert broken.raw_arguments == '{"sku": "BRK-220"'
    assert broken.parse_error and broken.parse_error.startswith("invalid JSON")
    assert not_object.arguments == {} and not_object.parse_error == "arguments must be a JSON object, got list"


def test_text_format_call_is_recovered_when_the_server_has_no_tool_parser(server: FakeChatServer) -> None:
    content = ('Let me check.\n<tool_call>\n{"name": "lookup_part", "arguments": {"sku": "BRK-220"}}\n'
               "</tool_call>")
    server.queue(chat_reply(content=content), chat_reply(content=content))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP])
        plain = complete(model, ASK)  # no tools offered: the text is the answer, left as it is
    assert [(c.name, c.arguments) for c in done.tool_calls] == [("lookup_part", {"sku": "BRK-220"})]
    assert done.text == "Let me check."
    assert plain.tool_calls == () and plain.text == content


def test_plain_answer(server: FakeChatServer) -> None:
    server.queue(chat_reply(content="Yes, 14 units of BRK-220 are in stock."))
    with _model(server) as model:
        done = complete(model, ASK, [LOOKUP])
    assert done.text == "Yes, 14 units of BRK-220 are in stock." and done.tool_calls == ()


def test_429_is_retried_after_retry_after(server: FakeChatServer) -> None:
    server.queue(error_reply(429, "Rate limit reached", code="rate_limit_exceeded", headers={"Retry-After": "0"}),
                 chat_reply(content="ok"))
    model = _model(server)
    with model:
        done = complete(model, ASK)
    assert model.retries == 1
    assert done.text == "ok"
    assert len(server.requests) == 2


def test_500s_give_up_after_bounded_retries(server: FakeChatServer) -> None:
    server.queue(*[error_reply(500, "The server had an error")] * 3, chat_reply(content="too late"))
    model = _model(server, max_retries=2)
    with model, pytest.raises(ModelUnavailable, match=r"HTTP 500 after 3 attempts"):
        complete(model, ASK)
    assert model.retries == 2
    assert len(server.requests) == 3  # the scripted success was never reached


def test_401_is_not_retried_and_does_not_leak_the_key(server: FakeChatServer) -> None:
    key = "sk-proj-SECRETabcdefghijklmnop1234"
    server.queue(error_reply(401, f"Incorrect API key provided: {key}. You can find your API key at "
                             "https://platform.openai.com/account/api-keys.", code="invalid_api_key"))
    with _model(server, api_key=key) as model, pytest.raises(ModelUnavailable) as caught:
        complete(model, ASK)
    message = str(caught.value)
    assert key not in message and "SECRET" not in message
    assert "HTTP 401" in message and "OPENAI_API_KEY" in message
    assert caught.value.__cause__ is None and caught.value.__context__ is None  # nothing chained to print
    assert len(server.requests) == 1


def test_400_says_what_the_server_said(server: FakeChatServer) -> None:
    server.queue(error_reply(404, "The model `gpt-9` does not exist", code="model_not_found"))
    with _model(server) as model, pytest.raises(ModelUnavailable,
                                                match=r"HTTP 404.*check the model name.*does not exist"):
        complete(model, ASK)
    assert len(server.requests) == 1


def test_conversation_with_tool_results_has_the_documented_shape(server: FakeChatServer) -> None:
    server.queue(chat_reply(content="BRK-220: 14 in stock."))
    call = ToolCall(id="call_abc", name="lookup_part", arguments={"sku": "BRK-220"})
    broken = ToolCall(id="call_def", name="get_order_status", arguments={}, raw_arguments='{"order_id": ',
                      parse_error="invalid JSON")
    history = [
        *ASK,
        Message("assistant", "", tool_calls=(call, broken)),
        Message("tool", '{"ok": true, "result": {"sku": "BRK-220", "on_hand": 14}}', tool_call_id="call_abc"),
        Message("tool", '{"ok": false, "error": {"code": "invalid_arguments", "message": "bad JSON"}}',
                tool_call_id="call_def"),
    ]
    with _model(server) as model:
        done = complete(model, history, [LOOKUP, STATUS], tool_choice="required", max_tokens=64, temperature=0.0)
    assert done.text == "BRK-220: 14 in stock."  # the server found nothing wrong with the body
    body = server.requests[0].body
    assert body["messages"][2] == {
        "role": "assistant", "content": "",  # not null: llama.cpp's OpenAI-compatible server refuses null
        "tool_calls": [
            {"id": "call_abc", "type": "function",
             "function": {"name": "lookup_part", "arguments": '{"sku": "BRK-220"}'}},
            {"id": "call_def", "type": "function",
             "function": {"name": "get_order_status", "arguments": '{"order_id": '}},
        ],
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_abc",
                                   "content": '{"ok": true, "result": {"sku": "BRK-220", "on_hand": 14}}'}
    assert body["tool_choice"] == "required"
    assert body["max_tokens"] == 64 and body["temperature"] == 0.0


def test_server_rejects_a_tool_message_without_its_call(server: FakeChatServer) -> None:
    # The fake checks the protocol like a real server: an orphan tool result is a 400, not retried.
    with _model(server) as model, pytest.raises(ModelUnavailable, match=r"HTTP 400.*role 'tool'"):
        complete(model, [*ASK, Message("tool", "{}", tool_call_id="call_nowhere")])


def test_slow_server_times_out_without_retrying(server: FakeChatServer) -> None:
    server.queue(Reply(200, chat_reply(content="late").body, delay_s=3.0))
    with _model(server, timeout_s=0.3) as model, pytest.raises(ModelUnavailable,
                                                               match=r"did not answer within 0.3 s .*timeout_s"):
        complete(model, ASK)
    assert len(server.requests) == 1


def test_unreachable_server_is_retried_then_reported() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    model = OpenAIChatModel.from_spec("m", {"base_url": f"http://127.0.0.1:{port}/v1", "max_retries": 2,
                                           "backoff_s": 0.0})
    with model, pytest.raises(ModelUnavailable, match=r"cannot reach .* after 3 attempts .*OPENAI_BASE_URL"):
        complete(model, ASK)
    assert model.retries == 2


def test_non_loopback_hosts_are_refused_while_network_is_blocked(monkeypatch: pytest.MonkeyPatch,
                                                                  server: FakeChatServer) -> None:
    monkeypatch.setattr(network, "ALLOW_NETWORK", False)
    remote = OpenAIChatModel.from_spec("gpt-4o-mini", {"api_key": "sk-test", "max_retries": 0})
    with remote, pytest.raises(ModelUnavailable, match="ALLOW_NETWORK"):
        complete(remote, ASK)
    server.queue(chat_reply(content="still fine"))
    with _model(server) as local:  # loopback stays allowed
        assert complete(local, ASK).text == "still fine"


def test_settings_come_from_arguments_then_environment(monkeypatch: pytest.MonkeyPatch,
                                                      server: FakeChatServer) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match=r"api_key.*OPENAI_API_KEY"):
        OpenAIChatModel.from_spec("gpt-4o-mini", {})
    with pytest.raises(ConfigError, match="openai:MODEL"):
        OpenAIChatModel.from_spec("", {"base_url": server.url})
    with pytest.raises(ConfigError, match="timeout_s"):
        OpenAIChatModel.from_spec("m", {"base_url": server.url, "timeout_s": "soon"})

    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    server.queue(chat_reply(content="via env"))
    model = get_model("openai:qwen2.5-coder", {"backoff_s": 0})
    assert isinstance(model, OpenAIChatModel) and model.name == "openai:qwen2.5-coder"
    with model:
        assert complete(model, ASK, max_tokens=5).text == "via env"
    assert server.requests[0].headers["Authorization"] == "Bearer sk-from-env"
    assert server.requests[0].body["model"] == "qwen2.5-coder"


def test_openai_host_gets_max_completion_tokens() -> None:
    model = OpenAIChatModel.from_spec("gpt-4o-mini", {"api_key": "sk-test"})
    with model:
        body = model.request_body(ASK, settings=ModelSettings(max_tokens=32))
    assert body["max_completion_tokens"] == 32 and "max_tokens" not in body and "tools" not in body


# --- a real OpenAI-compatible server: llama-cpp-python's -------------------------------------------

@pytest.mark.slow
def test_real_llama_cpp_server_chat_completion(llama_server: str) -> None:
    model = OpenAIChatModel.from_spec("qwen2.5-coder-1.5b", {"base_url": llama_server, "timeout_s": 300})
    with model:
        done = complete(model, [Message("system", "You are terse."),
                               Message("user", "Reply with exactly one word: pong")],
                              max_tokens=8, temperature=0.0)
    assert "pong" in done.text.lower()
    assert done.tokens_in > 0 and done.tokens_out > 0


@pytest.mark.slow
def test_real_llama_cpp_server_text_tool_call_is_recovered(llama_server: str) -> None:
    # llama-cpp-python's server has no tool parser for this model: the call comes back as text
    # (a fenced JSON object) and the backend turns it into a proposal.
    model = OpenAIChatModel.from_spec("qwen2.5-coder-1.5b", {"base_url": llama_server, "timeout_s": 300})
    with model:
        done = complete(model, [Message("system", "You are a parts assistant. Use tools when needed."),
                               Message("user", "Is part BRK-220 in stock? Look it up.")],
                              [LOOKUP], max_tokens=80, temperature=0.0)
    assert [(c.name, c.arguments, c.parse_error) for c in done.tool_calls] == [
        ("lookup_part", {"sku": "BRK-220"}, None)]

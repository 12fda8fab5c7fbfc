"""The answer strategy per backend kind: the embedded model is aided (evidence brief, code-written answers),
every other backend gets its native conversation with tool results as tool messages; no strategy ever ends
``answered`` with an empty text, and an answer with holes where labels stood is never shipped."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed")

from fakes.anthropic_server import FakeAnthropicServer, message_reply
from fakes.openai_server import FakeAPIServer, FakeChatServer, Reply, chat_reply
from fakes.responses_server import FakeResponsesServer, response_reply
from toolcrib import Gate, GroupPolicy, Identifier, Principal, Registry, Runner, RunnerSettings, ScriptedModel, tool
from toolcrib.agent.stepids import StepId
from toolcrib.agent.strategy import AidedAnswer, NativeAnswer, strategy_for
from toolcrib.models.anthropic import AnthropicModel
from toolcrib.models.base import Model
from toolcrib.models.local import LocalModel
from toolcrib.models.openai import OpenAIChatModel
from toolcrib.models.profile import ModelProfile
from toolcrib.models.responses import OpenAIResponsesModel
from toolcrib.trace.events import EventKind
from toolcrib.trace.tracer import Tracer

AIDED = ModelProfile(answer="aided")  # the embedded model's answer path

USER = Principal("alice", groups=frozenset({"support"}))
QUESTION = "What is the status of order AB-1001?"
TRACERS: list[Tracer] = []


@tool
def order_status(order_id: Annotated[str, Identifier(shape=r"[A-Z]{2}-\d{4}")]) -> dict[str, Any]:
    """Look up an order's status by its order id."""
    return {"found": True, "order_id": order_id, "status": "cancelled", "cancelled_on": "2026-11-30"}


def _runner(model: Model, **settings: Any) -> Runner:
    def tracer() -> Tracer:
        TRACERS.append(Tracer())
        return TRACERS[-1]
    return Runner(model, Gate(Registry([order_status]), GroupPolicy({"support": ["*"]})),
                  RunnerSettings(**settings), tracer_factory=tracer)


def _rules() -> list[str]:
    return [e.rule for e in TRACERS[-1].events if e.rule]


LOOKUP = {"tool_calls": [{"name": "order_status", "arguments": {"order_id": "AB-1001"}}]}


def test_the_embedded_model_is_aided_and_every_other_backend_is_native() -> None:
    assert LocalModel.profile.aided and isinstance(strategy_for(LocalModel(), RunnerSettings()), AidedAnswer)
    for backend in (OpenAIChatModel, OpenAIResponsesModel, AnthropicModel):
        assert not backend.profile.aided
    assert isinstance(strategy_for(ScriptedModel([]), RunnerSettings()), NativeAnswer)
    assert isinstance(strategy_for(ScriptedModel([], profile=AIDED), RunnerSettings()), AidedAnswer)


@pytest.mark.parametrize("small", [False, True], ids=["native", "aided"])
def test_a_tool_call_at_the_final_ask_is_asked_again_then_answered(small: bool) -> None:
    model = ScriptedModel([LOOKUP, LOOKUP, "Order AB-1001 was cancelled on 2026-11-30 [order_status#1]."],
                          profile={"answer": "aided" if small else "native"})
    answer = _runner(model, record_answers=False).ask("Tell me about order AB-1001.", USER)
    model.assert_complete()
    assert answer.outcome == "answered" and "cancelled" in answer.text
    assert StepId.TEXT_RETRY in _rules()


@pytest.mark.parametrize("small", [False, True], ids=["native", "aided"])
def test_a_final_ask_answered_twice_with_tool_calls_ends_as_a_limit_never_an_empty_answer(small: bool) -> None:
    model = ScriptedModel([LOOKUP, LOOKUP, LOOKUP], profile={"answer": "aided" if small else "native"})
    answer = _runner(model, record_answers=False).ask("Tell me about order AB-1001.", USER)
    model.assert_complete()
    assert answer.outcome == "limit" and "without any text" in answer.text


def test_labels_used_as_blanks_are_asked_again_and_never_shipped_as_a_broken_sentence() -> None:
    model = ScriptedModel([LOOKUP, "The order [1] is currently [2] with a status of [3].",
                           "The order [2] is [3]."], profile=AIDED)
    answer = _runner(model, record_answers=False).ask("Tell me about order AB-1001.", USER)
    model.assert_complete()
    assert answer.outcome == "limit" and "[" not in answer.text and " ." not in answer.text
    assert _rules().count(StepId.BROKEN_ANSWER) == 2
    fixed = ScriptedModel([LOOKUP, "The order [1] is currently [2].", "Order AB-1001 is cancelled [1]."],
                          profile=AIDED)
    answer = _runner(fixed, record_answers=False).ask("Tell me about order AB-1001.", USER)
    assert answer.outcome == "answered" and answer.text == "Order AB-1001 is cancelled [order_status#1]."


def test_an_answer_that_copies_the_briefs_line_is_asked_again_in_sentences() -> None:
    echo = '[1] order_status(order_id="AB-1001") returned: {"found": true, "status": "cancelled"}'
    model = ScriptedModel([LOOKUP, echo, "Order AB-1001 was cancelled on 2026-11-30 [1]."], profile=AIDED)
    answer = _runner(model, record_answers=False).ask("Tell me about order AB-1001.", USER)
    model.assert_complete()
    assert answer.text == "Order AB-1001 was cancelled on 2026-11-30 [order_status#1]."
    assert "Do not copy the evidence's lines" in model.requests[-1][0][-1].content
    assert _rules().count(StepId.BROKEN_ANSWER) == 1


def test_a_step_is_recorded_by_its_id_and_a_workspace_can_turn_it_off() -> None:
    model = ScriptedModel([LOOKUP], profile=AIDED)
    answer = _runner(model).ask(QUESTION, USER)
    assert answer.outcome == "answered" and "cancelled" in answer.text
    assert _rules() == [StepId.RECORD_ANSWER]  # the record stated by code: no final model call
    rule = next(e for e in TRACERS[-1].events if e.rule)
    assert rule.kind is EventKind.EVIDENCE_RULE and rule.to_dict()["rule"] == "record_answer"
    model = ScriptedModel([LOOKUP, "AB-1001 was cancelled [1]."], profile=AIDED)
    answer = _runner(model, steps_off=frozenset({StepId.RECORD_ANSWER})).ask(QUESTION, USER)
    model.assert_complete()
    assert StepId.RECORD_ANSWER not in _rules() and answer.text == "AB-1001 was cancelled [order_status#1]."


SELECTING = ModelProfile(answer="aided", structured_reply=True)  # a workspace that turns the selection on


def test_a_model_that_writes_under_a_schema_picks_the_evidence_and_code_writes_the_answer() -> None:
    picked = json.dumps({"answer": ["status: cancelled", "cancelled_on: 2026-11-30"], "verdict": "neither",
                         "compute": "none"})
    model = ScriptedModel([LOOKUP, picked], profile=SELECTING)
    answer = _runner(model, record_answers=False).ask(QUESTION, USER)
    model.assert_complete()
    assert answer.text == "Order AB-1001: status: cancelled; cancelled on: 2026-11-30 [order_status#1]."
    assert StepId.SELECTED_ANSWER in _rules()
    ask = model.requests[-1][0]
    assert "  status: cancelled" in ask[-2].content and "copied exactly" in ask[-1].content


def test_a_selection_that_picks_nothing_is_answered_in_writing_and_a_workspace_can_turn_selection_off() -> None:
    nothing = json.dumps({"answer": [], "verdict": "neither", "compute": "none"})
    model = ScriptedModel([LOOKUP, nothing, "AB-1001 was cancelled [1]."], profile=SELECTING)
    answer = _runner(model, record_answers=False).ask(QUESTION, USER)
    model.assert_complete()
    assert answer.text == "AB-1001 was cancelled [order_status#1]."
    model = ScriptedModel([LOOKUP, "AB-1001 was cancelled [1]."], profile=SELECTING)
    answer = _runner(model, record_answers=False, steps_off=frozenset({StepId.SELECTED_ANSWER})).ask(QUESTION, USER)
    model.assert_complete()
    assert answer.text == "AB-1001 was cancelled [order_status#1]." and StepId.SELECTED_ANSWER not in _rules()


# -- hosted backends over their real protocols (fake servers on loopback) ---------------------------------

def _chat(server: FakeAPIServer) -> Model:
    return OpenAIChatModel.from_spec("test-model", {"base_url": server.url, "backoff_s": 0.0, "api_key": "sk-t"})


def _responses(server: FakeAPIServer) -> Model:
    return OpenAIResponsesModel.from_spec("test-model", {"base_url": server.url, "backoff_s": 0.0, "api_key": "sk-t"})


def _anthropic(server: FakeAPIServer) -> Model:
    return AnthropicModel.from_spec("claude-test", {"base_url": server.url, "backoff_s": 0.0, "api_key": "sk-t"})


CALL = ("order_status", {"order_id": "AB-1001"})
TEXT = "AB-1001 was cancelled on 2026-11-30 [order_status#1]."
HOSTED: list[tuple[str, type[FakeAPIServer], Callable[[FakeAPIServer], Model], Callable[..., Reply],
                   Callable[[], Reply]]] = [
    ("chat", FakeChatServer, _chat, lambda: chat_reply(tool_calls=[(CALL[0], json.dumps(CALL[1]))]),
     lambda: chat_reply(TEXT)),
    ("responses", FakeResponsesServer, _responses,
     lambda: response_reply(calls=[(CALL[0], json.dumps(CALL[1]))]), lambda: response_reply(TEXT)),
    ("anthropic", FakeAnthropicServer, _anthropic, lambda: message_reply(calls=[CALL]),
     lambda: message_reply(TEXT)),
]


@pytest.fixture(params=HOSTED, ids=[h[0] for h in HOSTED])
def hosted(request: pytest.FixtureRequest) -> Iterator[tuple[FakeAPIServer, Model, Callable[[], Reply],
                                                             Callable[[], Reply]]]:
    _, server_type, make, call_reply, text_reply = request.param
    with server_type() as server:
        yield server, make(server), call_reply, text_reply


def test_a_hosted_backend_answers_from_its_native_conversation_with_tool_results(
        hosted: tuple[FakeAPIServer, Model, Callable[[], Reply], Callable[[], Reply]]) -> None:
    server, model, call_reply, text_reply = hosted
    server.queue(call_reply(), call_reply(), text_reply())  # a tool call at the final ask, then the answer
    answer = _runner(model).ask(QUESTION, USER)
    assert answer.outcome == "answered" and answer.text == TEXT
    assert [c.id for c in answer.citations] == ["order_status#1"]
    final = json.dumps(server.requests[-1].body)
    assert "cancelled" in final and "Tool results and document passages found for it" not in final  # no brief
    assert StepId.TEXT_RETRY in _rules() and StepId.RECORD_ANSWER not in _rules()  # no small-model aids

"""The fast paths of one READ call give the results the general paths give (issue 15)."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import pytest
from pydantic import AfterValidator, Field

from toolcrib import (
    CallContext,
    Completion,
    FunctionModel,
    Gate,
    GroupPolicy,
    Identifier,
    Principal,
    Registry,
    Runner,
    ToolCall,
    Tracer,
    tool,
)
from toolcrib.errors import ConfigError, InvalidArguments, OperatorError
from toolcrib.tools.grounding import Grounding, Source
from toolcrib.tools.prose import TEXT
from toolcrib.tools.result import encoded_ok_payload
from toolcrib.trace.events import timestamp

ALICE = Principal("alice", groups=frozenset({"support"}))
QUESTION = "What does part HLV-2205 cost?"


@tool
def scalars(x: str, n: int = 1, f: float = 0.5, b: bool = False, o: str | None = None,
            lit: Literal["a", "b"] = "a", c: Annotated[int, Field(gt=0)] = 1,
            p: Annotated[str, Field(pattern="^A")] = "A") -> str:
    """Every kind of plain scalar parameter."""
    return x


@pytest.mark.parametrize("arguments", [
    {"x": "v"}, {"x": "v", "f": 1}, {"x": "v", "n": True}, {"x": "v", "f": True}, {"x": "v", "n": 1.0},
    {"x": "v", "b": 1}, {"x": "v", "lit": "b"}, {"x": "v", "lit": "c"}, {"x": "v", "n": 2**70},
    {"x": "v", "f": 2**70}, {"x": "v", "zz": 1}, {"x": 1}, {}, {"x": "v", "o": None}, {"x": "v", "c": 0},
    {"x": "v", "p": "B"}, {"x": "v", "f": float("nan")}, {"x": "v", "f": float("inf")}, {"x": ["v"]},
    {"x": "v", "o": ("t",)}, {1: "v"},
])
def test_validating_python_values_gives_what_validating_their_json_gives(arguments: dict[Any, Any]) -> None:
    assert scalars._python_args
    through_json = dataclasses.replace(scalars)
    object.__setattr__(through_json, "_python_args", False)

    def outcome(t: Any) -> Any:
        try:
            return t.validate(arguments)
        except InvalidArguments as exc:
            return str(exc)
    assert outcome(scalars) == outcome(through_json)


def test_the_same_arguments_again_validate_to_what_validating_them_gives() -> None:
    remembered = dataclasses.replace(scalars)  # its own memo of validated arguments
    through_json = dataclasses.replace(scalars)
    object.__setattr__(through_json, "_python_args", False)

    def outcome(t: Any, arguments: dict[str, Any]) -> Any:
        try:
            return t.validate(arguments)
        except InvalidArguments as exc:
            return str(exc)
    # 1, True and 1.0 compare equal: a remembered 1 must not admit True or 1.0 for an int
    sequence = [{"x": "v", "n": 1}, {"x": "v", "n": True}, {"x": "v", "n": 1.0}, {"x": "v", "n": 1},
                {"x": "v", "f": 1}, {"x": "v", "f": 1.0}, {"x": "v", "c": 0}, {"x": "v", "c": 0}]
    for arguments in sequence * 2:
        assert outcome(remembered, arguments) == outcome(through_json, arguments), arguments
    first = remembered.validate({"x": "v"})
    first["x"] = "changed"  # a caller's copy: the next call's values are not it
    assert remembered.validate({"x": "v"})["x"] == "v"
    assert remembered._validated


SEEN: list[str] = []


def _note(value: str) -> str:
    SEEN.append(value)
    return value


@tool
def noted(x: Annotated[str, AfterValidator(_note)]) -> str:
    """Runs its author's validator."""
    return x


def test_a_tool_with_validator_functions_runs_them_on_every_call() -> None:
    for _ in range(3):
        noted.validate({"x": "v"})
    assert SEEN == ["v", "v", "v"] and noted._validated is None


def test_only_plain_scalar_parameters_skip_the_json_round_trip() -> None:
    @tool
    def listed(items: list[str]) -> str:
        """A list."""
        return ""

    @tool
    def either(v: int | str) -> str:
        """Two types."""
        return ""
    assert not listed._python_args and not either._python_args


def test_a_string_is_contained_where_its_sources_are_found() -> None:
    grounding = Grounding("Order ORD-1001 costs 1,340.00; part F2.")
    grounding.add('{"part": "HLV-2205", "n": 34}', Source("tool", "lookup"))
    for value in ["ORD-1001", "ORD-100", "34", "1340", "F2", "f2", "HLV-2205", "  ", "", None, ["F2", "34"],
                  ["F2", "X9"], {"a": "F2"}, 1340.0, 34, "2205", "part f2.", "ORD-1001 costs"]:
        assert grounding.contains(value) == bool(grounding.sources_of(value)), value
        assert grounding.contains(value) == bool(grounding.sources_of(value)), value  # found before: remembered
    assert not grounding.contains("X9")
    grounding.add("X9 arrived", Source("tool", "lookup"))
    assert grounding.contains("X9")


def test_one_encode_serves_the_size_check_and_the_sources() -> None:
    for value in [{"a": "ü", "n": [1, 2.5, None]}, "text", 3, [{"k": True}]]:
        payload, text = encoded_ok_payload("t", value, 4000)
        assert payload == {"ok": True, "tool": "t", "data": value, "truncated": False}
        assert text == TEXT.encode(value)
    payload, text = encoded_ok_payload("t", {"when": datetime(2025, 1, 1, tzinfo=UTC)}, 4000)
    assert payload["data"] == {"when": "2025-01-01 00:00:00+00:00"} and text == TEXT.encode(payload["data"])
    payload, text = encoded_ok_payload("t", {"s": "x" * 500}, 100)
    assert payload["truncated"] and text is None


def test_the_cached_timestamp_reads_as_the_clock_does() -> None:
    before = datetime.now(UTC)
    stamp = datetime.fromisoformat(timestamp())
    assert abs((stamp - before).total_seconds()) < 0.01 and timestamp().endswith("+00:00")


# -- execution --------------------------------------------------------------------------------------------

RAN_ON: list[int] = []


def _lookup(part_number: Annotated[str, Identifier()]) -> dict[str, str]:
    """Look up a part."""
    RAN_ON.append(threading.get_ident())
    return {"part_number": part_number, "price": "$52.00"}


def _gate(t: Any) -> tuple[Gate, CallContext]:
    gate = Gate(Registry([t]), GroupPolicy({"support": ["*"]}))
    return gate, CallContext(ALICE, Tracer(), Grounding(QUESTION), question=QUESTION)


CALL = ToolCall("c1", "_lookup", {"part_number": "HLV-2205"})


def test_an_inline_def_tool_runs_on_the_event_loop_with_the_same_outcome() -> None:
    threaded, inline = tool(cache_ttl_s=0)(_lookup), tool(cache_ttl_s=0, inline=True)(_lookup)

    async def both() -> list[Any]:
        RAN_ON.clear()
        outcomes = []
        for t in (threaded, inline):
            gate, cctx = _gate(t)
            outcomes.append(await gate.run(CALL, cctx))
        return [*outcomes, threading.get_ident()]
    by_thread, by_loop, loop_thread = asyncio.run(both())
    assert by_thread.payload == by_loop.payload and by_loop.ok
    assert RAN_ON[0] != loop_thread and RAN_ON[1] == loop_thread


def test_inline_is_for_a_def_tool_only() -> None:
    async def lookup(part: str) -> str:
        """Async."""
        return part
    with pytest.raises(ConfigError, match="inline"):
        tool(inline=True)(lookup)


def _async_tool(body: Any) -> Any:
    async def slow(part_number: str) -> str:
        """A tool that takes its time."""
        return str(await body(part_number))
    return tool(cache_ttl_s=0, timeout_s=0.05, idempotent=False)(slow)


@pytest.mark.parametrize("body, status", [
    (lambda p: asyncio.sleep(0.01, p), "ok"),  # suspends, answers in time
    (lambda p: asyncio.sleep(1.0, p), "error"),  # suspends past the bound: timed out
])
def test_an_async_tool_that_suspends_is_still_bounded(body: Any, status: str) -> None:
    t = _async_tool(body)
    gate, cctx = _gate(t)
    outcome = asyncio.run(gate.run(ToolCall("c1", "slow", {"part_number": "HLV-2205"}), cctx))
    assert outcome.status == status
    if status == "error":
        assert outcome.payload["error"]["code"] == "timeout"


def test_a_first_step_that_overruns_the_bound_times_out_at_its_first_suspension() -> None:
    async def blocking(part_number: str) -> str:
        """Blocks, then awaits."""
        time.sleep(0.08)  # past the 0.05 s bound before it ever suspends
        await asyncio.sleep(0)
        return part_number
    gate, cctx = _gate(tool(cache_ttl_s=0, timeout_s=0.05, idempotent=False)(blocking))
    outcome = asyncio.run(gate.run(ToolCall("c1", "blocking", {"part_number": "HLV-2205"}), cctx))
    assert outcome.payload["error"]["code"] == "timeout"


def test_cancelling_the_run_cancels_a_suspended_tool() -> None:
    cancelled: list[bool] = []

    async def waits(part_number: str) -> str:
        """Waits."""
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return part_number
    gate, cctx = _gate(tool(cache_ttl_s=0)(waits))

    async def main() -> None:
        task = asyncio.ensure_future(gate.run(ToolCall("c1", "waits", {"part_number": "HLV-2205"}), cctx))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    asyncio.run(main())
    assert cancelled == [True]


# -- the sync API -----------------------------------------------------------------------------------------

def _runner() -> Runner:
    lookup = tool(cache_ttl_s=0)(_lookup)

    def model(messages: Any, tools: Any) -> Completion | str:
        if any(m.role == "tool" for m in messages):
            return "HLV-2205 costs $52.00 [_lookup#1]."
        return Completion(tool_calls=(CALL,))
    return Runner(FunctionModel(model), Gate(Registry([lookup]), GroupPolicy({"support": ["*"]})))


def test_ask_reuses_one_loop_per_thread_and_works_from_many_threads_at_once() -> None:
    runner = _runner()
    assert runner.ask(QUESTION, ALICE).outcome == "answered"
    assert runner.ask(QUESTION, ALICE).outcome == "answered"
    answers: list[str] = []

    def ask() -> None:
        for _ in range(5):
            answers.append(runner.ask(QUESTION, ALICE).outcome)
    threads = [threading.Thread(target=ask) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert answers == ["answered"] * 20


def test_ask_inside_a_running_event_loop_says_to_use_aask() -> None:
    runner = _runner()

    async def inside() -> None:
        with pytest.raises(OperatorError, match="aask"):
            runner.ask(QUESTION, ALICE)
    asyncio.run(inside())


def test_ask_cancels_the_tasks_its_run_left_running_and_only_those() -> None:
    started: list[asyncio.Task[None]] = []

    @tool(name="_lookup", cache_ttl_s=0)
    async def leaves_a_task(part_number: str) -> dict[str, Any]:
        """Look up a part, leaving a task behind."""
        started.append(asyncio.create_task(asyncio.sleep(60)))
        return {"part_number": part_number, "price": 52.0}

    def model(messages: Any, tools: Any) -> Completion | str:
        if any(m.role == "tool" for m in messages):
            return "HLV-2205 costs $52.00 [_lookup#1]."
        return Completion(tool_calls=(CALL,))
    runner = Runner(FunctionModel(model), Gate(Registry([leaves_a_task]), GroupPolicy({"support": ["*"]})))
    elsewhere = asyncio.new_event_loop()  # another loop's task, in the same thread: not the run's to cancel
    other = elsewhere.create_task(asyncio.sleep(60))
    try:
        assert runner.ask(QUESTION, ALICE).outcome == "answered"
        assert runner.ask(QUESTION, ALICE).outcome == "answered"
        assert len(started) == 2 and all(task.cancelled() for task in started)
        assert not other.done()
    finally:
        other.cancel()
        elsewhere.run_until_complete(asyncio.gather(other, return_exceptions=True))
        elsewhere.close()

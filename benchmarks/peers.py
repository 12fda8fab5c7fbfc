"""toolcrib next to its peers: the same tool call and the same one-tool run, with fake models, per call.

    python benchmarks/peers.py [--calls 5000] [--runs 1000] [--passes 2] [--no-install] [--baseline DIR]

Run it with the project's python (.venv/bin/python). The peers (OpenAI Agents SDK, PydanticAI, LangGraph
with langchain-core, smolagents, LlamaIndex) live in their own venv, ``benchmarks/.peers-venv``, which this
script creates and fills from ``benchmarks/peers-requirements.txt`` (pinned); toolcrib runs in the
project's python. Each framework is measured in its own subprocess (``--worker NAME --json``), back to
back, in two passes (the second in reverse order, so drift on this shared machine falls on both sides).

One tool everywhere, ``lookup_part(part_number)``: an in-memory dict, no I/O, so what is timed is the
framework. One fake-model behaviour everywhere, written with each framework's own fake/custom-model
facility: with no tool result in the conversation it proposes ``lookup_part(part_number="HLV-2205")``;
with one, it answers with the price it reads from that result ("HLV-2205 costs $52.00."), so the answer
coming back proves the tool's result reached the model. Figures, each p50 and mean of N timed
iterations after warm-up (perf_counter_ns), in microseconds:

1. ``agent_run``: one agent run (async API): model -> tool call -> model -> answer;
2. ``read_call_async``: one call through the framework's tool-invocation path, ``async def`` tool
   (toolcrib: ``Gate.run`` with every check on, as in gate_overhead.py);
3. ``read_call_sync``: the same with a plain ``def`` tool (every framework runs it in a worker thread);
4. ``sync_api_overhead``: one run through the sync API minus one through the async API (toolcrib:
   ``Runner.ask`` minus ``Runner.aask``), where a framework has both. For a peer whose run takes
   milliseconds this difference is within the noise, and may be negative (then no ratio is given).

An extra toolcrib-only figure, ``read_call_sync_inline``: figure 3's plain ``def`` tool declared
``inline=True`` (short and non-blocking: it runs on the event loop, no thread hop), printed under the
table with its ratio to each peer's figure 3; figure 3 itself stays the default (a worker thread).

Figure 3 is dominated by the hop to a worker thread, whose cost on a small shared machine varies
between passes (30 to 90 us here, depending on where the OS schedules the thread): compare it within
a pass, and with figure 2.

Every iteration is checked outside the timed span (the tool ran, the result or answer holds $52.00) and
the tool's invocation count must equal the iterations: a figure that measured nothing fails loudly.
``--baseline DIR`` (a checkout of another toolcrib version, e.g. ``git worktree add DIR <commit>``) measures
that version too, in each pass right after this one, with its own worker (``DIR/benchmarks/peers.py``) and
its own sources first on the path: the before/after of a change in the same run (``toolcrib_over_base_p50``).
Prints a table (figure x framework, toolcrib/peer ratio within a pass), the load average, and ends with
one JSON line of all figures, per pass, with the frameworks' versions. A figure a framework cannot
produce is null with a reason, never dropped. Only same-run ratios mean anything on a shared machine.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = Path(__file__).with_name("peers-requirements.txt")
PEERS_VENV = Path(__file__).with_name(".peers-venv")
PEERS = ("openai_agents", "pydantic_ai", "langgraph", "smolagents", "llamaindex")
FRAMEWORKS = ("toolcrib", *PEERS)
FIGURES = ("agent_run", "read_call_async", "read_call_sync", "sync_api_overhead")
BASE = "toolcrib_base"  # --baseline: another toolcrib version's figures, measured in the same passes
INLINE = "read_call_sync_inline"  # toolcrib only: figure 3 with the def tool declared inline=True
DISTRIBUTIONS = {"toolcrib": ("toolcrib", "pydantic"), "openai_agents": ("openai-agents", "openai", "pydantic"),
                 "pydantic_ai": ("pydantic-ai-slim", "pydantic"), "langgraph": ("langgraph", "langchain-core"),
                 "smolagents": ("smolagents",), "llamaindex": ("llama-index-core", "llama-index-workflows")}

# What each framework's figures go through (printed, and in the JSON line).
PATHS = {
    "toolcrib": "run: Runner.aask (single-call mode, the default: model, Gate, final ask), FunctionModel; "
                "call: Gate.run (allowlist, offer, strict validation, grounding, authorization, timeout, "
                "normalization, trace; no READ cache); sync: Runner.ask; read_call_sync_inline: the def tool "
                "declared inline=True",
    "openai_agents": "run: Runner.run, custom Model, tracing disabled; call: a ToolContext and "
                     "FunctionTool.on_invoke_tool(ctx, json); sync: Runner.run_sync",
    "pydantic_ai": "run: Agent.run, FunctionModel; call: the step's ToolManager.handle_call(ToolCallPart) "
                   "(validation, hooks, execution); sync: Agent.run_sync",
    "langgraph": "run: create_react_agent graph .ainvoke, a GenericFakeChatModel subclass that replies from "
                 "the conversation and takes tools; call: tool.ainvoke(ToolCall) -> ToolMessage; sync: .invoke",
    "smolagents": "run: ToolCallingAgent.run (sync only), custom Model, answer via its final_answer tool; call: "
                  "agent.execute_tool_call (argument validation, then the tool inline: no thread hop)",
    "llamaindex": "run: FunctionAgent.run (a workflow), MockFunctionCallingLLM with a response generator; "
                  "call: FunctionTool.acall",
}

QUESTION = "What does part HLV-2205 cost?"
PART = "HLV-2205"
PRICE = "$52.00"
_PRICE = re.compile(r"\$\d+\.\d\d")
_PARTS = {PART: {"part_number": PART, "price": PRICE}}
_INVOKED = [0]  # how many times the tool body ran, whichever framework called it


def _lookup(part_number: str) -> dict[str, str]:
    _INVOKED[0] += 1
    return dict(_PARTS[part_number])


def _answer_from(tool_result: str) -> str:
    """The fake model's answer: the price read from the tool result it was shown (so none without one)."""
    found = _PRICE.search(tool_result)
    return f"{PART} costs {found.group(0)}." if found else "I could not find the price."


# -- timing (worker side) ----------------------------------------------------------------------------------

class Measure:
    """Times one operation N times after warm-up and checks every result, outside the timed span."""

    def __init__(self, n: int, calls_per_iteration: int = 1) -> None:
        self.n = n
        self.warmup = max(20, n // 10)
        self.calls_per_iteration = calls_per_iteration

    def _done(self, samples: list[int], invoked: int) -> dict[str, Any]:
        expected = (self.warmup + self.n) * self.calls_per_iteration
        if invoked != expected:
            raise AssertionError(f"the tool ran {invoked} times for {expected} expected calls: the figure "
                                 "would not measure a tool call")
        us = [s / 1000 for s in samples]
        return {"p50_us": round(statistics.median(us), 2), "mean_us": round(statistics.fmean(us), 2),
                "n": self.n}

    async def aruns(self, op: Callable[[], Awaitable[Any]], check: Callable[[Any], None]) -> dict[str, Any]:
        before = _INVOKED[0]
        for _ in range(self.warmup):
            check(await op())
        samples: list[int] = []
        for _ in range(self.n):
            start = time.perf_counter_ns()
            out = await op()
            samples.append(time.perf_counter_ns() - start)
            check(out)
        return self._done(samples, _INVOKED[0] - before)

    def runs(self, op: Callable[[], Any], check: Callable[[Any], None]) -> dict[str, Any]:
        before = _INVOKED[0]
        for _ in range(self.warmup):
            check(op())
        samples: list[int] = []
        for _ in range(self.n):
            start = time.perf_counter_ns()
            out = op()
            samples.append(time.perf_counter_ns() - start)
            check(out)
        return self._done(samples, _INVOKED[0] - before)


def _has_price(out: Any) -> None:
    if PRICE not in str(out):
        raise AssertionError(f"no {PRICE} in the result: {str(out)[:200]}")


def _sync_minus_async(sync: dict[str, Any], run: dict[str, Any] | None) -> dict[str, Any]:
    if run is None:
        raise RuntimeError("the async run figure failed, so there is nothing to subtract")
    return {"p50_us": round(sync["p50_us"] - run["p50_us"], 2), "mean_us": round(sync["mean_us"] - run["mean_us"], 2),
            "n": sync["n"], "sync_p50_us": sync["p50_us"], "async_p50_us": run["p50_us"]}


class Worker:
    """One framework's figures: each measured on its own; a failure is that figure's null and reason."""

    def __init__(self, calls: int, runs: int) -> None:
        self.calls, self.runs = calls, runs
        self.figures: dict[str, dict[str, Any] | None] = dict.fromkeys(FIGURES)
        self.reasons: dict[str, str] = {}

    async def afigure(self, name: str, measure: Callable[[], Awaitable[dict[str, Any]]]) -> None:
        try:
            self.figures[name] = await measure()
        except Exception as exc:
            self.reasons[name] = f"{type(exc).__name__}: {exc}"[:400]

    def figure(self, name: str, measure: Callable[[], dict[str, Any]]) -> None:
        try:
            self.figures[name] = measure()
        except Exception as exc:
            self.reasons[name] = f"{type(exc).__name__}: {exc}"[:400]

    def unmeasurable(self, name: str, reason: str) -> None:
        self.reasons[name] = reason


# -- toolcrib ----------------------------------------------------------------------------------------------

def _toolcrib(w: Worker) -> None:
    from toolcrib import (
        CallContext,
        Completion,
        FunctionModel,
        Gate,
        GroupPolicy,
        Message,
        Principal,
        Registry,
        Runner,
        RunnerSettings,
        ToolCall,
        ToolSpec,
        Tracer,
        tool,
    )
    from toolcrib.tools.grounding import Grounding

    async def lookup_part(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    def lookup_part_sync(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    # every check on: allowlist and offer, strict validation, grounding of the identifier, authorization,
    # timeout, normalization, trace; no READ cache, or every call after the first would be a cache hit
    options: dict[str, Any] = {"identifiers": ["part_number"], "cache_ttl_s": 0}
    async_tool = tool(name="lookup_part", **options)(lookup_part)
    sync_tool = tool(name="lookup_part", **options)(lookup_part_sync)
    inline_tool = tool(name="lookup_part", inline=True, **options)(lookup_part_sync)
    policy = GroupPolicy({"support": ["lookup_part"]})
    principal = Principal("alice", groups=frozenset({"support"}))
    call = ToolCall(id="call_1", name="lookup_part", arguments={"part_number": PART})

    def model(messages: list[Message], tools: list[ToolSpec] | None) -> Completion | str:
        results = [m.content for m in messages if m.role == "tool"]
        if results:
            return _answer_from(results[-1]) + " [lookup_part#1]"
        return Completion(tool_calls=(call,))

    def gate_call(gated: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def measure() -> dict[str, Any]:
            gate = Gate(Registry([gated]), policy)
            cctx = CallContext(principal, Tracer(), Grounding(QUESTION), question=QUESTION)
            cctx.offer = gate.offer(principal, cctx.grounding)  # what the runner stores before the gate runs
            count = [0]

            async def once() -> Any:
                count[0] += 1
                if count[0] % 200 == 0:
                    cctx.tracer = Tracer()  # keep the in-memory trace from growing without bound
                return await gate.run(call, cctx)

            def check(outcome: Any) -> None:
                assert outcome.ok, outcome.payload
                _has_price(outcome.payload)
            return await Measure(w.calls).aruns(once, check)
        return measure

    runner = Runner(FunctionModel(model), Gate(Registry([async_tool]), policy), RunnerSettings())

    def check_answer(answer: Any) -> None:
        assert answer.outcome == "answered" and len(answer.executed) == 1, answer.to_dict()
        _has_price(answer.text)

    async def measure_async() -> None:
        await w.afigure("agent_run", lambda: Measure(w.runs).aruns(lambda: runner.aask(QUESTION, principal),
                                                                    check_answer))
        await w.afigure("read_call_async", gate_call(async_tool))
        await w.afigure("read_call_sync", gate_call(sync_tool))
        await w.afigure(INLINE, gate_call(inline_tool))
    asyncio.run(measure_async())
    w.figure("sync_api_overhead", lambda: _sync_minus_async(
        Measure(w.runs).runs(lambda: runner.ask(QUESTION, principal), check_answer), w.figures["agent_run"]))


# -- OpenAI Agents SDK -------------------------------------------------------------------------------------

def _openai_agents(w: Worker) -> None:
    from agents import (
        Agent,
        Model,
        ModelResponse,
        RunConfig,
        Runner,
        Usage,
        function_tool,
        set_tracing_disabled,
    )
    from agents.tool_context import ToolContext
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    set_tracing_disabled(True)  # no exporter to OpenAI's servers in a benchmark

    @function_tool
    async def lookup_part(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    @function_tool(name_override="lookup_part")
    def lookup_part_sync(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    arguments = json.dumps({"part_number": PART})

    class FakeModel(Model):
        """The SDK's seam for a model: a custom ``Model`` answering from the conversation it is given."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            items = input if isinstance(input, list) else []
            results = [str(i.get("output", "")) for i in items
                       if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if results:
                text = ResponseOutputText(annotations=[], text=_answer_from(results[-1]), type="output_text")
                output: list[Any] = [ResponseOutputMessage(id="msg_1", content=[text], role="assistant",
                                                           status="completed", type="message")]
            else:
                output = [ResponseFunctionToolCall(arguments=arguments, call_id="call_1", name="lookup_part",
                                                   type="function_call", id="fc_1", status="completed")]
            return ModelResponse(output=output, usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the benchmark does not stream")

    agent = Agent(name="desk", instructions="Answer with the tools.", model=FakeModel(), tools=[lookup_part])
    config = RunConfig(tracing_disabled=True)

    def check_run(result: Any) -> None:
        calls = [i for i in result.new_items if i.type == "tool_call_output_item"]
        assert len(calls) == 1, result.new_items
        _has_price(result.final_output)

    def tool_call(gated: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def once() -> Any:  # what the runner does for one call: a ToolContext, then on_invoke_tool
            ctx = ToolContext(context=None, tool_name="lookup_part", tool_call_id="call_1", tool_arguments=arguments)
            return await gated.on_invoke_tool(ctx, arguments)
        return lambda: Measure(w.calls).aruns(once, _has_price)

    async def measure_async() -> None:
        await w.afigure("agent_run", lambda: Measure(w.runs).aruns(
            lambda: Runner.run(agent, QUESTION, run_config=config), check_run))
        await w.afigure("read_call_async", tool_call(lookup_part))
        await w.afigure("read_call_sync", tool_call(lookup_part_sync))
    asyncio.run(measure_async())
    w.figure("sync_api_overhead", lambda: _sync_minus_async(
        Measure(w.runs).runs(lambda: Runner.run_sync(agent, QUESTION, run_config=config), check_run),
        w.figures["agent_run"]))


# -- PydanticAI --------------------------------------------------------------------------------------------

def _pydantic_ai(w: Worker) -> None:
    from pydantic_ai import Agent, RunContext, Tool
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    async def lookup_part(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    def lookup_part_sync(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    def fake(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        results = [p.model_response_str() for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
        if results:
            return ModelResponse(parts=[TextPart(_answer_from(results[-1]))])
        return ModelResponse(parts=[ToolCallPart("lookup_part", {"part_number": PART}, tool_call_id="call_1")])

    model = FunctionModel(fake)
    agent = Agent(model, tools=[Tool(lookup_part, takes_ctx=False)])

    def check_run(result: Any) -> None:
        returns = [p for m in result.new_messages() for p in m.parts if isinstance(p, ToolReturnPart)]
        assert len(returns) == 1, result.new_messages()
        _has_price(result.output)

    def tool_call(fn: Callable[..., Any]) -> Callable[[], Awaitable[dict[str, Any]]]:
        async def measure() -> dict[str, Any]:
            # the run's path for one call: the step's ToolManager validates the arguments and calls the tool
            toolset = FunctionToolset([Tool(fn, takes_ctx=False, name="lookup_part")])
            ctx = RunContext(deps=None, model=model, usage=RunUsage())
            async with toolset:
                manager = await ToolManager(toolset).for_run_step(ctx)
                part = ToolCallPart("lookup_part", {"part_number": PART}, tool_call_id="call_1")
                return await Measure(w.calls).aruns(lambda: manager.handle_call(part), _has_price)
        return measure

    async def measure_async() -> None:
        await w.afigure("agent_run", lambda: Measure(w.runs).aruns(lambda: agent.run(QUESTION), check_run))
        await w.afigure("read_call_async", tool_call(lookup_part))
        await w.afigure("read_call_sync", tool_call(lookup_part_sync))
    asyncio.run(measure_async())
    w.figure("sync_api_overhead", lambda: _sync_minus_async(
        Measure(w.runs).runs(lambda: agent.run_sync(QUESTION), check_run), w.figures["agent_run"]))


# -- LangGraph + langchain-core ----------------------------------------------------------------------------

def _langgraph(w: Worker) -> None:
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langchain_core.tools import StructuredTool, tool

    with warnings.catch_warnings():  # create_react_agent moved to langchain.agents, not installed here
        warnings.simplefilter("ignore")
        from langgraph.prebuilt import create_react_agent

    @tool
    async def lookup_part(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    @tool("lookup_part")
    def lookup_part_sync(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    def reply(messages: list[BaseMessage]) -> ChatResult:
        results = [str(m.content) for m in messages if isinstance(m, ToolMessage)]
        if results:
            message = AIMessage(_answer_from(results[-1]))
        else:
            message = AIMessage("", tool_calls=[{"name": "lookup_part", "args": {"part_number": PART},
                                                 "id": "call_1", "type": "tool_call"}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    class FakeToolChatModel(GenericFakeChatModel):
        """langchain-core's fake chat model, replying from the conversation instead of a fixed list, able to
        take tools, and async without a thread hop (as a real async client is)."""

        messages: Iterator[Any] = iter(())

        def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                      **kwargs: Any) -> ChatResult:
            return reply(messages)

        async def _agenerate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                             **kwargs: Any) -> ChatResult:
            return reply(messages)

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    # the run's tool has both bodies, as LangChain asks of a tool used through invoke and ainvoke alike
    both = StructuredTool.from_function(func=lookup_part_sync.func, coroutine=lookup_part.coroutine,
                                        name="lookup_part", description=lookup_part.description)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        graph = create_react_agent(FakeToolChatModel(), [both])
    state = {"messages": [("user", QUESTION)]}

    def check_run(result: Any) -> None:
        returns = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        assert len(returns) == 1, result["messages"]
        _has_price(result["messages"][-1].content)

    def tool_call(gated: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
        call = {"name": "lookup_part", "args": {"part_number": PART}, "id": "call_1", "type": "tool_call"}
        return lambda: Measure(w.calls).aruns(lambda: gated.ainvoke(call), _has_price)  # -> ToolMessage

    async def measure_async() -> None:
        await w.afigure("agent_run", lambda: Measure(w.runs).aruns(lambda: graph.ainvoke(state), check_run))
        await w.afigure("read_call_async", tool_call(lookup_part))
        await w.afigure("read_call_sync", tool_call(lookup_part_sync))
    asyncio.run(measure_async())
    w.figure("sync_api_overhead", lambda: _sync_minus_async(
        Measure(w.runs).runs(lambda: graph.invoke(state), check_run), w.figures["agent_run"]))


# -- smolagents --------------------------------------------------------------------------------------------

def _smolagents(w: Worker) -> None:
    from smolagents import ChatMessage, LogLevel, Model, ToolCallingAgent, tool
    from smolagents.models import ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole

    @tool
    def lookup_part(part_number: str) -> dict:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    class FakeModel(Model):
        """smolagents' seam for a model: a ``Model`` subclass whose ``generate`` answers. smolagents ends a
        run through its ``final_answer`` tool, so the answer is a call of it."""

        def generate(self, messages: list[Any], stop_sequences: Any = None, response_format: Any = None,
                     tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
            results = [str(m.content) for m in messages if m.role == MessageRole.TOOL_RESPONSE]
            if results:
                name, args = "final_answer", {"answer": _answer_from(results[-1])}
            else:
                name, args = "lookup_part", {"part_number": PART}
            call = ChatMessageToolCall(ChatMessageToolCallFunction(name=name, arguments=args), id="call_1",
                                       type="function")
            return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[call])

    agent = ToolCallingAgent(tools=[lookup_part], model=FakeModel(), verbosity_level=LogLevel.OFF, max_steps=4)

    def check_run(result: Any) -> None:
        _has_price(result)

    w.unmeasurable("read_call_async", "smolagents tools are synchronous: Tool.__call__ calls forward() directly; "
                   "there is no async tool path")
    w.figure("read_call_sync", lambda: Measure(w.calls).runs(
        lambda: agent.execute_tool_call("lookup_part", {"part_number": PART}), _has_price))
    w.figure("agent_run", lambda: Measure(w.runs).runs(lambda: agent.run(QUESTION), check_run))
    w.unmeasurable("sync_api_overhead", "smolagents has only a sync API (agent.run); its agent_run is that API")


# -- LlamaIndex --------------------------------------------------------------------------------------------

def _llamaindex(w: Worker) -> None:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.tools import FunctionTool

    async def lookup_part(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    def lookup_part_sync(part_number: str) -> dict[str, str]:
        """Look up a part's price by its part number.

        Args:
            part_number: The part number, such as HLV-2205.
        """
        return _lookup(part_number)

    def reply(messages: Any, **kwargs: Any) -> ChatMessage:
        results = [str(m.content) for m in messages if m.role == MessageRole.TOOL]
        if results:
            return ChatMessage(role=MessageRole.ASSISTANT, content=_answer_from(results[-1]))
        block = ToolCallBlock(tool_call_id="call_1", tool_name="lookup_part", tool_kwargs={"part_number": PART})
        return ChatMessage(role=MessageRole.ASSISTANT, blocks=[block])

    async_tool = FunctionTool.from_defaults(async_fn=lookup_part, name="lookup_part")
    sync_tool = FunctionTool.from_defaults(fn=lookup_part_sync, name="lookup_part")
    agent = FunctionAgent(tools=[async_tool], llm=MockFunctionCallingLLM(response_generator=reply))

    def check_run(result: Any) -> None:
        assert len(result.tool_calls) == 1, result
        _has_price(result.response.content)

    def tool_call(gated: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
        return lambda: Measure(w.calls).aruns(lambda: gated.acall(part_number=PART), _has_price)

    async def measure_async() -> None:
        await w.afigure("agent_run", lambda: Measure(w.runs).aruns(lambda: agent.run(user_msg=QUESTION), check_run))
        await w.afigure("read_call_async", tool_call(async_tool))
        await w.afigure("read_call_sync", tool_call(sync_tool))
    asyncio.run(measure_async())
    w.unmeasurable("sync_api_overhead", "LlamaIndex agents are workflows with only an async API (agent.run)")


WORKERS: dict[str, Callable[[Worker], None]] = {
    "toolcrib": _toolcrib, "openai_agents": _openai_agents, "pydantic_ai": _pydantic_ai,
    "langgraph": _langgraph, "smolagents": _smolagents, "llamaindex": _llamaindex}


def _versions(framework: str) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for dist in DISTRIBUTIONS[framework]:
        try:
            found[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            found[dist] = None
    return found


def run_worker(framework: str, calls: int, runs: int) -> dict[str, Any]:
    worker = Worker(calls, runs)
    load_start = os.getloadavg()
    started = time.perf_counter()
    try:
        WORKERS[framework](worker)
    except Exception as exc:  # the framework would not import or set up: every figure it had not made is null
        for name in FIGURES:
            if worker.figures[name] is None and name not in worker.reasons:
                worker.reasons[name] = f"set-up failed: {type(exc).__name__}: {exc}"[:400]
    return {"framework": framework, "versions": _versions(framework), "python": sys.version.split()[0],
            "figures": worker.figures, "reasons": worker.reasons, "seconds": round(time.perf_counter() - started, 1),
            "loadavg": [round(x, 2) for x in load_start], "loadavg_end": [round(x, 2) for x in os.getloadavg()]}


# -- driver ------------------------------------------------------------------------------------------------

def _venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def ensure_peers_venv(venv: Path, install: bool) -> Path:
    """Create ``venv`` and install the pinned peers into it when the requirements changed since last time."""
    python = _venv_python(venv)
    if not install:
        return python
    if not python.exists():
        print(f"creating {venv} ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    stamp = venv / ".requirements.sha256"
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text().strip() != digest:
        print(f"installing {REQUIREMENTS.name} into {venv} ...", flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
                        str(REQUIREMENTS)], check=True)
        stamp.write_text(digest + "\n")
    return python


def call_worker(python: Path | str, framework: str, calls: int, runs: int, timeout_s: float,
                checkout: Path = ROOT) -> dict[str, Any]:
    """Run one framework's measurements in a subprocess of ``python`` (toolcrib's: that of ``checkout``, its
    worker and its sources); its last stdout line is its JSON."""
    command = [str(python), str(checkout / "benchmarks" / "peers.py"), "--worker", framework, "--json",
               "--calls", str(calls), "--runs", str(runs)]
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "OTEL_SDK_DISABLED": "true",
           "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false", "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    if checkout != ROOT:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout / "src"), env.get("PYTHONPATH", "")) if p)
    reason = ""
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=checkout)
        lines = done.stdout.strip().splitlines()
        if done.returncode == 0 and lines:
            result: dict[str, Any] = json.loads(lines[-1])
            return result
        reason = f"worker exited {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}"
    except subprocess.TimeoutExpired:
        reason = f"worker ran past {timeout_s:g} s"
    except (OSError, json.JSONDecodeError) as exc:
        reason = f"{type(exc).__name__}: {exc}"
    return {"framework": framework, "versions": {}, "figures": dict.fromkeys(FIGURES),
            "reasons": dict.fromkeys(FIGURES, reason), "loadavg": None, "loadavg_end": None}


def _ratio(ours: dict[str, Any] | None, theirs: dict[str, Any] | None) -> float | None:
    if not ours or not theirs or theirs["p50_us"] <= 0 or ours["p50_us"] < 0:
        return None
    return round(ours["p50_us"] / theirs["p50_us"], 3)


def _cell(figure: dict[str, Any] | None, ratio: float | None) -> str:
    if figure is None:
        return "n/a"
    text = f"{figure['p50_us']:,.1f}"
    return text + (f" (x{ratio:.2f})" if ratio is not None else "")


def _inline_ratios(results: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    inline = results["toolcrib"]["figures"].get(INLINE)
    return {peer: _ratio(inline, results[peer]["figures"]["read_call_sync"]) for peer in PEERS}


def print_pass(index: int, results: dict[str, dict[str, Any]], ratios: dict[str, dict[str, float | None]]) -> None:
    names = list(FRAMEWORKS)
    width = 22
    print(f"\npass {index + 1}: p50 us per operation; (xR) = toolcrib / peer, within this pass")
    print("figure".ljust(20) + "".join(n.rjust(width) for n in names))
    for figure in FIGURES:
        cells = [_cell(results[n]["figures"][figure], None if n == "toolcrib" else ratios[figure].get(n))
                 for n in names]
        print(figure.ljust(20) + "".join(c.rjust(width) for c in cells))
    inline = results["toolcrib"]["figures"].get(INLINE)
    if inline:
        against = ", ".join(f"x{r:.2f} {peer}" for peer, r in _inline_ratios(results).items() if r is not None)
        print(f"{INLINE} (toolcrib only: the def tool declared inline=True, no thread hop): {inline['p50_us']:,.1f} "
              f"us; over each peer's read_call_sync: {against}")
    loads = " ".join(f"{n}={results[n]['loadavg']}" for n in names if results[n].get("loadavg"))
    print(f"load average (1/5/15 min) at each worker's start: {loads}")
    for n in names:
        for figure, reason in results[n]["reasons"].items():
            print(f"  {n} {figure}: not measured: {reason}")


def drive(args: argparse.Namespace) -> None:
    python = ensure_peers_venv(args.venv, not args.no_install)
    load_start = os.getloadavg()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in load_start)} ({os.cpu_count()} CPUs)")
    passes: list[dict[str, Any]] = []
    versions: dict[str, Any] = {}
    for index in range(args.passes):
        order = list(FRAMEWORKS) if index % 2 == 0 else list(reversed(FRAMEWORKS))
        results: dict[str, dict[str, Any]] = {}
        for framework in order:
            interpreter = args.project_python if framework == "toolcrib" else python
            print(f"pass {index + 1}: {framework} ...", flush=True)
            results[framework] = call_worker(interpreter, framework, args.calls, args.runs, args.timeout)
            versions[framework] = results[framework]["versions"] or versions.get(framework, {})
            if framework == "toolcrib" and args.baseline is not None:
                print(f"pass {index + 1}: toolcrib at {args.baseline} ...", flush=True)
                results[BASE] = call_worker(args.project_python, "toolcrib", args.calls, args.runs, args.timeout,
                                            args.baseline.resolve())
        ratios = {figure: {peer: _ratio(results["toolcrib"]["figures"][figure], results[peer]["figures"][figure])
                           for peer in PEERS} for figure in FIGURES}
        print_pass(index, results, ratios)
        extra: dict[str, Any] = {}
        if BASE in results:
            extra = {BASE: results[BASE]["figures"], "toolcrib_over_base_p50": {
                f: _ratio(results["toolcrib"]["figures"][f], results[BASE]["figures"][f]) for f in (*FIGURES, INLINE)}}
            print("toolcrib / the baseline, p50: " + ", ".join(
                f"{f} x{r:.2f}" for f, r in extra["toolcrib_over_base_p50"].items() if r is not None))
        passes.append({**extra, "order": order, "figures": {f: {n: results[n]["figures"][f] for n in FRAMEWORKS}
                                                   for f in FIGURES},
                       "toolcrib_over_peer_p50": ratios,
                       "toolcrib_extra": {INLINE: results["toolcrib"]["figures"].get(INLINE),
                                          "over_peer_read_call_sync_p50": _inline_ratios(results)},
                       "not_measured": {n: results[n]["reasons"] for n in FRAMEWORKS if results[n]["reasons"]},
                       "loadavg": {n: results[n]["loadavg"] for n in FRAMEWORKS},
                       "seconds": {n: results[n].get("seconds") for n in FRAMEWORKS}})
    print("\nwhat is measured:")
    for framework in FRAMEWORKS:
        print(f"  {framework}: {PATHS[framework]}")
    load_end = os.getloadavg()
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in load_end)}")
    print(json.dumps({"benchmark": "peers", "calls": args.calls, "runs": args.runs, "passes": passes,
                      "loadavg_start": [round(x, 2) for x in load_start],
                      "loadavg_end": [round(x, 2) for x in load_end], "cpus": os.cpu_count(),
                      "versions": versions, "paths": PATHS}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000, help="timed tool calls per call figure (default 5000)")
    parser.add_argument("--runs", type=int, default=1000, help="timed agent runs per run figure (default 1000)")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--venv", type=Path, default=PEERS_VENV, help="the peers' venv (created if missing)")
    parser.add_argument("--no-install", action="store_true", help="use the peers' venv as it is")
    parser.add_argument("--project-python", default=sys.executable, help="the python toolcrib runs in")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per worker before it is given up")
    parser.add_argument("--baseline", type=Path, help="a checkout of another toolcrib, measured beside this one")
    parser.add_argument("--worker", choices=FRAMEWORKS, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = _quick.parse(parser, calls=200, runs=50)
    if args.quick and not args.worker:  # the peers need their own venv: quick measures toolcrib's figures alone
        result = run_worker("toolcrib", args.calls, args.runs)
        print(json.dumps({"benchmark": "peers", "quick": True, **result}))
        if result["reasons"]:
            sys.exit(f"toolcrib not measured: {result['reasons']}")
        return
    if args.worker:
        with contextlib.redirect_stdout(sys.stderr):  # frameworks that print must not spoil the JSON line
            result = run_worker(args.worker, args.calls, args.runs)
        print(json.dumps(result) if args.json else json.dumps(result, indent=2))
        return
    drive(args)


if __name__ == "__main__":
    main()

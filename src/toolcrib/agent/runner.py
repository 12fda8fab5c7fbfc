"""The Runner: single-call mode (level 4) and a bounded loop mode (ReAct), each a declared graph.

The runner drives a run through its mode's graph (``pipeline.GRAPH``): it starts the run, then runs the
node of each place it reaches and follows the edge the node returns, until the run is recorded. What each
place does is its node's (``nodes.py``), which code steps run there is the table's, and how the final answer
is written is the model's strategy (``strategy.py``).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from toolcrib.agent import prompts
from toolcrib.agent.answer import Answer, Finish
from toolcrib.agent.calls import Calls
from toolcrib.agent.nodes import Edge, Flow
from toolcrib.agent.pipeline import GRAPH, STEPS
from toolcrib.agent.reading import LINKED, ValueLinks, as_read, linked_text
from toolcrib.agent.request import Request
from toolcrib.agent.runs import RunStore
from toolcrib.agent.state import Limits, Mode, RunnerSettings, RunState
from toolcrib.agent.steps import Step, Steps
from toolcrib.agent.strategy import strategy_for
from toolcrib.agent.sync import run_sync
from toolcrib.agent.turns import ModelTurns
from toolcrib.errors import ConfigError, LimitExceeded, NotPermitted
from toolcrib.models.base import Message, Model, Prefillable
from toolcrib.policy.principal import Principal
from toolcrib.tools.context import CallContext
from toolcrib.tools.gate import Gate
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.registry import tool_specs
from toolcrib.tools.tool import Effect
from toolcrib.trace.events import EventKind
from toolcrib.trace.tracer import TraceExporter, Tracer

__all__ = ["Limits", "Mode", "Runner", "RunnerSettings"]


@functools.lru_cache(maxsize=64)
def _system_prompt(name: str, example_id: str, extra: str, mode: Mode) -> str:
    """The system message a run starts with, formatted once per workspace and mode."""
    extra = "\n".join(p for p in (extra, prompts.SINGLE_CALL if mode == "single" else "") if p)
    return prompts.SYSTEM.format(name=name, example_id=example_id, extra=extra)


def _example_id(gate: Gate) -> str:
    """A citation id for the system prompt's example, from the workspace's own tools: its first lookup."""
    tools = [t for t in gate.registry if t.effect is Effect.READ]
    keyed = [t for t in tools if t.lookup_key() is not None]
    return f"{(keyed or tools)[0].name}#1" if tools else "doc#c1"


class Runner:
    """Asks the model, passes its proposals through the Gate, and returns a grounded Answer."""

    def __init__(
        self,
        model: Model,
        gate: Gate,
        settings: RunnerSettings | None = None,
        *,
        resources: Mapping[str, Any] | None = None,
        tracer_factory: Callable[[], Tracer] | None = None,
        runs: RunStore | None = None,
        steps: Sequence[Step] = STEPS,
    ) -> None:
        self.model = model
        self.gate = gate
        self.settings = settings or RunnerSettings()
        self.resources = dict(resources or {})
        self.tracer_factory = tracer_factory or Tracer
        self.runs = runs
        self.strategy = strategy_for(model, self.settings)
        complete = ModelTurns(model, self.settings)
        self.calls = Calls(gate, self.settings, model.profile.hosted_tools, complete=complete)
        self.flow = Flow(self.calls, Steps(steps, self.settings, aided=self.strategy.aided), complete, self.strategy,
                         self.settings, runs)
        self._example_id = _example_id(gate)
        self._values = ValueLinks(self.resources)

    # -- public -----------------------------------------------------------------------------------

    def ask(self, question: str, principal: Principal, *, mode: Mode | None = None,
            exporters: Sequence[TraceExporter] = ()) -> Answer:
        """``aask`` for synchronous code, on this thread's own reused event loop; raises
        ``OperatorError`` when called from a running event loop (there, await ``aask``)."""
        return run_sync(self.aask(question, principal, mode=mode, exporters=exporters))

    def prefill(self, question: str, principal: Principal, *, mode: Mode | None = None) -> float:
        """Have a ``Prefillable`` model evaluate now the prompt start its first decision on ``question`` would
        begin with (the system block with the tools offered for it), so that questions with that offer start
        from it; nothing is asked and no run is recorded. Returns the ms it took (0: nothing to do)."""
        if not isinstance(self.model, Prefillable):
            return 0.0
        run = self._start(question, principal, mode or self.settings.mode, (), tracer=Tracer())
        return self.model.prefill(run.messages, tool_specs(self.calls.current_offer(run).tools))

    def warm(self, principal: Principal, *, mode: Mode | None = None) -> float:
        """``prefill`` before any question, for each of the offers ``principal`` usually gets
        (``Registry.usual_offers``); the ms it took (about 0 for blocks saved before)."""
        if not isinstance(self.model, Prefillable):
            return 0.0
        run = self._start("", principal, mode or self.settings.mode, (), tracer=Tracer())
        return sum(self.model.prefill(run.messages, tool_specs(tools))
                   for tools in self.gate.registry.usual_offers(principal, self.gate.policy))

    def resume(self, run_id: str, principal: Principal, *, exporters: Sequence[TraceExporter] = ()) -> Answer:
        """``aresume`` for synchronous code (see ``ask``)."""
        return run_sync(self.aresume(run_id, principal, exporters=exporters))

    async def aask(self, question: str, principal: Principal, *, mode: Mode | None = None,
                   exporters: Sequence[TraceExporter] = ()) -> Answer:
        """Answer ``question`` for ``principal``; ``exporters`` also receive this run's events as they happen."""
        mode = mode or self.settings.mode
        run = self._start(question, principal, mode, exporters)
        return await self._drive(run, GRAPH[mode].start)

    async def aresume(self, run_id: str, principal: Principal, *, exporters: Sequence[TraceExporter] = ()) -> Answer:
        """Continue a run paused for approval: run the approved call(s) exactly as proposed."""
        if self.runs is None:
            raise ConfigError("this runner has no run store (Runner(runs=RunStore(...))), so it cannot resume runs")
        paused = await asyncio.to_thread(self.runs.load, run_id)  # off the event loop: a database read
        if paused.user_id != principal.user_id:
            raise NotPermitted(f"run {run_id} belongs to another user")
        tracer = self._tracer(exporters)
        grounding = Grounding()
        for source, text in paused.grounding:
            grounding.add(text, source)
        cctx = CallContext(principal, tracer, grounding, self.resources, run_id, question=paused.question,
                           flags=list(paused.flags))  # flags raised before the pause still warn approvers
        run = RunState(Request.parse(paused.question), principal, tracer, cctx, paused.messages, run_id,
                       "loop" if paused.mode == "loop" else "single", approved=list(paused.pending))
        tracer.run_id = run_id
        tracer.record(EventKind.RUN_RESUMED, "Resume paused run", decided_by="human",
                      detail={"question": paused.question, "user": principal.user_id, "mode": paused.mode})
        return await self._drive(run, GRAPH[run.mode].resume)

    async def _drive(self, run: RunState, place: str) -> Answer:
        """Run the node of each place the run reaches, following the edge it returns, until it is recorded;
        a limit the run hits (the model's context window too) ends it like any other limit."""
        places, flow = GRAPH[run.mode].places, self.flow
        while True:
            run.path.append(place)
            run.tracer.node = place
            try:
                edge = await places[place].node(run, places[place], flow)
            except LimitExceeded as exc:
                run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached", detail={"reason": str(exc)})
                run.draft = Finish(f"I stopped before finishing: {exc}. Here is what I found so far.", "limit")
                place = GRAPH[run.mode].stopped
                continue
            if edge is Edge.END:
                assert run.answer is not None
                return run.answer
            place = places[place].edges[edge]

    def _tracer(self, exporters: Sequence[TraceExporter]) -> Tracer:
        tracer = self.tracer_factory()
        tracer.exporters.extend(exporters)
        return tracer

    def _start(self, question: str, principal: Principal, mode: Mode, exporters: Sequence[TraceExporter],
               tracer: Tracer | None = None) -> RunState:
        tracer = tracer or self._tracer(exporters)
        run_id = os.urandom(6).hex()  # what uuid4().hex[:12] gave (its first 48 bits are random), without the UUID
        request = Request.parse(question)
        values = self._values.index(principal, self.gate)
        cctx = CallContext(principal, tracer, Grounding(question), self.resources, run_id, question=question,
                           today=request.today, domains=values,
                           stated=values.stated(question) if values is not None else ())
        system = _system_prompt(self.settings.name, self._example_id, self.settings.system_prompt, mode)
        tracer.run_id = run_id
        tracer.record(EventKind.RUN_STARTED, f"Start run ({mode} mode)",
                      detail={"question": question, "user": principal.user_id, "mode": mode,
                              "strategy": "aided" if self.strategy.aided else "native"})
        links = values.link(question) if values is not None else ()
        if links:  # the row ids and stored values the request names, from the workspace's own data
            cctx.grounding.add(linked_text(links), LINKED)
            tracer.record(EventKind.VALUES_LINKED, "Values the request names, found in the data",
                          detail={"links": [link.describe() for link in links]})
        run = RunState(request, principal, tracer, cctx,
                       [Message("system", system), Message("user", as_read(request, links))], run_id, mode,
                       links=links)
        flags = self.gate.scanner.scan(question) if self.gate.scanner is not None else []
        if flags:  # pasted text that claims authority: this run may read, never change anything
            run.request_flags = [f"{f.kind}: {f.excerpt}" for f in flags]
            tracer.record(EventKind.CONTENT_FLAGGED, "The request carries instruction-like text", detail={
                "flags": run.request_flags, "reason": "tools that change something are withheld for this run"})
        return run

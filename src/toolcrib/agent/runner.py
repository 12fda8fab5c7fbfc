"""The Runner: single-call mode (level 4) and a bounded loop mode (ReAct).

The runner is the loop: it offers tools, asks the model, passes its proposals through the gate and
finishes the run. What code decides around the model is in named steps (``steps.py``, in order in
``pipeline.py``), and how the final answer is written is the model's strategy (``strategy.py``).
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import Any

from toolcrib.agent import prompts
from toolcrib.agent.answer import Answer, Citation, Outcome
from toolcrib.agent.calls import Calls
from toolcrib.agent.evidence import says_evidence_lacks_it
from toolcrib.agent.pipeline import STEPS
from toolcrib.agent.request import Request
from toolcrib.agent.runs import PausedRun, RunRecord, RunStore
from toolcrib.agent.state import Limits, Mode, RunnerSettings, RunState
from toolcrib.agent.steps import Finish, Stage, Step, StepId, Steps
from toolcrib.agent.strategy import strategy_for
from toolcrib.agent.turns import ModelTurns
from toolcrib.agent.sync import run_sync
from toolcrib.errors import ConfigError, LimitExceeded, NotPermitted
from toolcrib.models.base import Message, Model, Prefillable, ToolCall
from toolcrib.policy.principal import Principal
from toolcrib.tools.gate import CallContext, Gate
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.registry import tool_specs
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect
from toolcrib.trace.events import EventKind
from toolcrib.trace.tracer import TraceExporter, Tracer

__all__ = ["Limits", "Mode", "Runner", "RunnerSettings"]


def _same_call(call: ToolCall, calls: Sequence[ToolCall]) -> bool:
    """Whether ``calls`` holds ``call`` (the same tool with the same arguments)."""
    return any(c.name == call.name and c.arguments == call.arguments for c in calls)


def _held(outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """The calls of ``outcomes`` held for a person's approval, each with its proposal."""
    return [o for o in outcomes if o.status == "approval_required" and o.proposal_id]


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
        self._complete = ModelTurns(model, self.settings)
        self.calls = Calls(gate, self.settings, model.hosted_tools, complete=self._complete)
        self.steps = Steps(steps, self.settings, aided=self.strategy.aided)
        self._example_id = _example_id(gate)

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
        return await self._bounded(run, self._single(run) if mode == "single" else self._loop(run))

    async def aresume(self, run_id: str, principal: Principal, *, exporters: Sequence[TraceExporter] = ()) -> Answer:
        """Continue a run paused for approval: run the approved call(s) exactly as proposed."""
        if self.runs is None:
            raise ConfigError("this runner has no run store (Runner(runs=RunStore(...))), so it cannot resume runs")
        paused = self.runs.load(run_id)
        if paused.user_id != principal.user_id:
            raise NotPermitted(f"run {run_id} belongs to another user")
        tracer = self._tracer(exporters)
        grounding = Grounding()
        for source, text in paused.grounding:
            grounding.add(text, source)
        cctx = CallContext(principal, tracer, grounding, self.resources, run_id, question=paused.question,
                           flags=list(paused.flags))  # flags raised before the pause still warn approvers
        run = RunState(Request.parse(paused.question), principal, tracer, cctx, paused.messages, run_id,
                       "loop" if paused.mode == "loop" else "single")
        tracer.run_id = run_id
        tracer.record(EventKind.RUN_RESUMED, "Resume paused run", decided_by="human",
                      detail={"question": paused.question, "user": principal.user_id, "mode": paused.mode})
        return await self._bounded(run, self._continue(run, paused))

    async def _continue(self, run: RunState, paused: PausedRun) -> Answer:
        outcomes = [await self.gate.run(call, run.cctx, proposal_id=pid) for call, pid in paused.pending]
        self.calls.observe(run, outcomes)
        pending = [o for o in outcomes if o.status == "approval_required"]
        if pending:
            return await self._pause(run, pending)
        if paused.mode == "single":
            return await self._final(run)
        return await self._loop(run)

    async def _bounded(self, run: RunState, steps: Coroutine[Any, Any, Answer]) -> Answer:
        """Run ``steps``; a limit the model hits (its context window) ends the run like any other limit."""
        try:
            return await steps
        except LimitExceeded as exc:
            run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached", detail={"reason": str(exc)})
            return await self._finish(run, f"I stopped before finishing: {exc}. Here is what I found so far.",
                                      outcome="limit")

    def _tracer(self, exporters: Sequence[TraceExporter]) -> Tracer:
        tracer = self.tracer_factory()
        tracer.exporters.extend(exporters)
        return tracer

    def _start(self, question: str, principal: Principal, mode: Mode, exporters: Sequence[TraceExporter],
               tracer: Tracer | None = None) -> RunState:
        tracer = tracer or self._tracer(exporters)
        run_id = os.urandom(6).hex()  # what uuid4().hex[:12] gave (its first 48 bits are random), without the UUID
        cctx = CallContext(principal, tracer, Grounding(question), self.resources, run_id, question=question)
        system = _system_prompt(self.settings.name, self._example_id, self.settings.system_prompt, mode)
        tracer.run_id = run_id
        tracer.record(EventKind.RUN_STARTED, f"Start run ({mode} mode)",
                      detail={"question": question, "user": principal.user_id, "mode": mode,
                              "strategy": "aided" if self.strategy.aided else "native"})
        run = RunState(Request.parse(question), principal, tracer, cctx,
                       [Message("system", system), Message("user", question)], run_id, mode)
        flags = self.gate.scanner.scan(question) if self.gate.scanner is not None else []
        if flags:  # pasted text that claims authority: this run may read, never change anything
            run.request_flags = [f"{f.kind}: {f.excerpt}" for f in flags]
            tracer.record(EventKind.CONTENT_FLAGGED, "The request carries instruction-like text", detail={
                "flags": run.request_flags, "reason": "tools that change something are withheld for this run"})
        return run

    # -- modes ------------------------------------------------------------------------------------

    async def _single(self, run: RunState) -> Answer:
        specs = self.calls.offer(run)
        if (done := await self.steps.run(Stage.REQUEST, run, self.calls)) is not None:
            return await self._end(run, done)
        first = self._complete(run, specs, decided_by="model", title="Model decides")
        if not first.tool_calls:
            if run.grounded or not self.settings.require_evidence:
                return await self._answer(run, first.text)
            if not self.steps.enabled(StepId.EVIDENCE_REMINDER):
                return await self._final(run, model_text=first.text)
            self._remind(run, first.text, "a direct answer with no tool result or passage behind it is not accepted")
            first = self._complete(run, specs, decided_by="code", title="Re-ask with evidence reminder",
                                   tool_choice="required")
            if not first.tool_calls:
                return await self._final(run, model_text=first.text)
        calls, dropped = self._decided_calls(first.tool_calls)
        calls = await self._fitting(run, calls)
        run.decided = await self.calls.run_model_calls(run, first.text, calls) if calls else []
        for extra, reason in dropped:  # recorded, never silently lost
            self.calls.drop(run, extra, reason)
        if (done := await self.steps.run(Stage.DECIDED, run, self.calls)) is not None:
            return await self._end(run, done)
        if pending := _held(run.decided):
            return await self._pause(run, pending)
        if all(o.effect == Effect.READ.value for o in run.decided):  # lookups only: code adds what they left out
            await self.steps.run(Stage.GATHER, run, self.calls)
            if pending := _held(run.outcomes):  # a change the request asked for after them
                return await self._pause(run, pending)
            if any(o.ok for o in run.outcomes):
                if (done := await self.steps.run(Stage.RECORDS, run, self.calls)) is not None:
                    return await self._end(run, done)
                await self.steps.run(Stage.COMPLETE, run, self.calls)
        return await self._final(run)

    def _remind(self, run: RunState, text: str, reason: str) -> None:
        """The evidence rule: an answer with nothing found behind it is not accepted; asked once more."""
        run.tracer.record(EventKind.EVIDENCE_RULE, "Evidence rule fired", detail={"reason": reason},
                          rule=StepId.EVIDENCE_REMINDER)
        run.messages += [Message("assistant", text), Message("user", prompts.EVIDENCE_REMINDER)]

    def _decided_calls(self, proposed: Sequence[ToolCall]) -> tuple[list[ToolCall], list[tuple[ToolCall, str]]]:
        """The calls single mode makes of the model's one decision, and those it drops with why: a change
        (WRITE/ACTUATE) runs alone, as the decision's first call; READ calls proposed together (the same
        lookup for two ids, a lookup and a search) all run, up to the run's tool-call budget, once each."""
        changes = self.calls.changes
        if changes(proposed[0]):
            return [proposed[0]], [(c, "single-call mode runs a change alone, as the decision's only call")
                                   for c in proposed[1:]]
        calls: list[ToolCall] = []
        dropped: list[tuple[ToolCall, str]] = []
        for call in proposed:
            if changes(call):
                dropped.append((call, "single-call mode runs a change alone, never beside lookups"))
            elif _same_call(call, calls):
                dropped.append((call, "the same call was proposed twice"))
            elif len(calls) == self.settings.limits.tool_calls:
                dropped.append((call, f"over the run's budget of {len(calls)} tool calls (limits.tool_calls)"))
            else:
                calls.append(call)
        return calls, dropped

    async def _complete_evidence(self, run: RunState) -> bool:
        """Loop mode, once: what single mode adds after its one decision, as soon as the run holds evidence
        (or when the model would answer without). Returns whether code added anything."""
        run.completed = True
        # by the tool's own effect: a lookup the gate refused before resolving it (an identifier from
        # nowhere) has none on its outcome, and is no change
        if any(self.calls.changes(o.call) for o in run.made()):
            return False  # a change was made, held or refused: nothing is added around it
        made = run.calls
        await self.steps.run(Stage.GATHER, run, self.calls)
        await self.steps.run(Stage.COMPLETE, run, self.calls)
        return run.calls > made

    async def _loop(self, run: RunState) -> Answer:
        limits = self.settings.limits
        while True:
            stop = self._limit_reached(run)
            if stop and run.grounded and run.rounds >= limits.rounds:
                # out of rounds with evidence in hand: one final answer from it, asked by code, rather
                # than "I stopped" (a small model reads on past what it needs)
                run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached: answer from what was found",
                                  detail={"reason": stop}, rule=StepId.ROUND_LIMIT_ANSWER)
                return await self._final(run)
            if stop:
                raise LimitExceeded(stop)  # ends the run with what it found so far (see _bounded)
            if run.grounded and not run.completed:  # the first evidence in: code's additions before the next round
                await self._complete_evidence(run)
            specs = self.calls.offer(run)
            if run.rounds == 0 and (done := await self.steps.run(Stage.REQUEST, run, self.calls)) is not None:
                return await self._end(run, done)
            run.rounds += 1
            # grounded, a small model's answer is written later from the evidence brief: here it only decides
            reply = self._complete(run, specs, decided_by="model", title=f"Model decides (round {run.rounds})",
                                   messages=self.strategy.decision_messages(run),
                                   decision_only=run.grounded and self.strategy.aided)
            if not reply.tool_calls:
                if run.grounded or not self.settings.require_evidence:
                    if not run.completed and await self._complete_evidence(run):
                        continue  # the model answers again, with what code added
                    if run.grounded and self.strategy.aided:  # written as single mode does
                        if (done := await self.steps.run(Stage.RECORDS, run, self.calls)) is not None:
                            return await self._end(run, done)
                        return await self._final(run, model_text=reply.text)
                    return await self._answer(run, reply.text)
                if await self._search_documents(run):
                    continue  # the model answers again, now with the passages
                if run.reminded or not self.steps.enabled(StepId.EVIDENCE_REMINDER):
                    return await self._abstain(run, reply.text)
                run.reminded = True
                self._remind(run, reply.text, "the answer rested on no tool result or passage; asking once more")
                continue
            made = [o.call for o in run.made()]
            fresh: list[ToolCall] = []
            for call in reply.tool_calls:
                if _same_call(call, made):
                    self.calls.drop(run, call, "the run made this call already; its result is above")
                else:
                    fresh.append(call)
            if fresh and not (fresh := await self._fitting(run, fresh)):  # nothing it chose fits the request
                if await self._search_documents(run):
                    continue
                return await self._final(run)
            if not fresh:  # a small model that repeats itself would do so to the round limit: answer now
                run.tracer.record(EventKind.EVIDENCE_RULE, "Asked for the answer: the model repeated a call",
                                  detail={"reason": "every call it proposed was made before; nothing new to read"},
                                  rule=StepId.REPEATED_CALL)
                return await self._final(run)
            budget = max(0, limits.tool_calls - run.calls)
            calls, over = fresh[:budget], fresh[budget:]
            for extra in over:
                self.calls.drop(run, extra, f"over the run's budget of {limits.tool_calls} tool calls "
                                            "(limits.tool_calls)")
            outcomes = await self.calls.run_model_calls(run, reply.text, calls)
            if pending := _held(outcomes):
                return await self._pause(run, pending)

    async def _fitting(self, run: RunState, calls: list[ToolCall]) -> list[ToolCall]:
        """The model's ``calls`` less those ``Stage.PROPOSED`` sets aside (each recorded as dropped)."""
        run.proposed = list(calls)
        await self.steps.run(Stage.PROPOSED, run, self.calls)
        return run.proposed

    async def _search_documents(self, run: RunState) -> bool:
        """The document search of ``Stage.SEARCH`` (when nothing found anything), now; whether it searched."""
        searched = run.code_searched
        await self.steps.run(Stage.SEARCH, run, self.calls)
        return run.code_searched and not searched

    # -- the answer -------------------------------------------------------------------------------

    async def _final(self, run: RunState, *, model_text: str = "") -> Answer:
        """The final answer: code's steps first, then the strategy's; the evidence rule before both."""
        await self.steps.run(Stage.SEARCH, run, self.calls)  # only when nothing so far found anything
        if self.settings.require_evidence and not run.grounded:
            return await self._abstain(run, model_text)
        if (done := await self.steps.run(Stage.ANSWER, run, self.calls)) is None:
            if run.cctx.offer is None:  # a resumed run: the native conversation's tools are offered again
                self.calls.offer(run)
            done = self.strategy.answer(run, self._complete)
            if done.outcome == "answered" and not done.code_wrote:
                return await self._answer(run, done.text)
        return await self._end(run, done)

    async def _answer(self, run: RunState, text: str) -> Answer:
        if (run.evidence.insufficient and not run.grounded) or says_evidence_lacks_it(text):
            return await self._abstain(run, text)
        return await self._finish(run, text, outcome="answered")

    async def _abstain(self, run: RunState, text: str) -> Answer:
        if text.strip().endswith("?") and not run.evidence.insufficient:
            run.tracer.record(EventKind.CLARIFYING_QUESTION, "Clarifying question", detail={"text": text[:300]})
            return await self._finish(run, text.strip(), outcome="clarify", abstained=True)
        run.tracer.record(EventKind.ABSTAINED, "Abstain: not enough evidence",
                          detail={"searched": run.evidence.searched, "model_text": text[:300]})
        said = run.evidence.abstention(run.outcomes, run.request, self.gate.registry.identifier_names())
        return await self._finish(run, said, outcome="abstained", abstained=True)

    async def _end(self, run: RunState, done: Finish) -> Answer:
        return await self._finish(run, done.text, outcome=done.outcome, abstained=done.abstained,
                                  code_wrote=done.code_wrote)

    async def _pause(self, run: RunState, pending: list[CallOutcome]) -> Answer:
        lines = [f"Held for approval: {o.call.name}({json.dumps(o.call.arguments, sort_keys=True)}) as proposal "
                 f"{o.proposal_id}. A person who may approve it decides (the approvals page, or `toolcrib approve "
                 f"{o.proposal_id}`); then this run {run.run_id} resumes (the page, POST /v1/runs/{run.run_id}/resume, "
                 f"or `toolcrib ask --resume {run.run_id}`)." for o in pending]
        run.paused = PausedRun(run.run_id, run.principal.user_id, run.question, run.mode, run.messages,
                               [(o.call, o.proposal_id or "") for o in pending], run.cctx.grounding.sources,
                               list(run.cctx.flags))
        return await self._finish(run, "\n".join(lines), outcome="paused")

    async def _finish(self, run: RunState, text: str, *, outcome: Outcome, abstained: bool = False,
                      code_wrote: bool = False) -> Answer:
        citations: list[Citation] = []
        flags: list[str] = []
        draft = await self.steps.run(Stage.AMEND, run, self.calls, Finish(text, outcome, code_wrote, abstained))
        text = draft.text if draft is not None else text
        if not abstained:
            # the claim check is for what is written from the evidence; a paused or stopped run's text,
            # a refusal or a quote (the evidence's own words) is code's (``code_wrote``)
            review = run.evidence.review(text, run.request if outcome == "answered" else None,
                                         check_claims=not code_wrote)
            text, citations, flags = review.text, review.citations, review.flags
            run.tracer.record(EventKind.CITATION_CHECK, "Check citations", citations=[c.id for c in citations],
                              status="ok" if not review.removed else "removed",
                              detail={"removed": review.removed, "flags": flags})
            if review.nothing_supported:  # nothing of the answer stood: that is an abstention
                outcome, abstained = "abstained", True
                run.tracer.record(EventKind.ABSTAINED, "Abstain: the evidence supports nothing of the answer",
                                  detail={"searched": run.evidence.searched})
        noted = await self.steps.run(Stage.NOTE, run, self.calls, Finish(text, outcome, code_wrote, abstained))
        text = noted.text if noted is not None else text
        answer = Answer(
            text=text, citations=citations, abstained=abstained, outcome=outcome,
            executed=[o.summary() for o in run.outcomes if o.status in ("ok", "outcome_unknown", "error")],
            refused=[o.summary() for o in run.outcomes if o.status in ("refused", "dropped")],
            pending=[o.summary() for o in run.outcomes if o.status == "approval_required"],
            flags=flags, trace_id=run.tracer.trace_id, run_id=run.run_id,
            model_decided_steps=run.model_decisions, tokens_in=run.tokens_in, tokens_out=run.tokens_out,
            ms=round((time.perf_counter() - run.started) * 1000, 1))
        detail: dict[str, Any] = {"text": text[:500], "flags": flags}
        if outcome == "paused":
            detail["proposals"] = [{"proposal_id": o.proposal_id, "tool": o.call.name, "call_id": o.call.id}
                                   for o in _held(run.outcomes)]
        run.tracer.record(EventKind.RUN_FINISHED, f"Final answer ({outcome})", status=outcome,
                          citations=[c.id for c in citations], ms=answer.ms, detail=detail)
        run.tracer.close()
        if self.gate.audit is not None:  # the run's READ records are durable before its Answer returns
            self.gate.audit.flush()
        if self.runs is not None:
            self.runs.record(RunRecord(run.run_id, run.principal.user_id, run.principal.tenant, run.question, run.mode,
                                       outcome, answer.to_dict(), [e.to_dict() for e in run.tracer.events],
                                       [run.tracer.trace_id], run.paused))
        return answer

    def _limit_reached(self, run: RunState) -> str:
        limits = self.settings.limits
        if run.rounds >= limits.rounds:
            return f"the run reached its limit of {limits.rounds} model rounds (limits.rounds)"
        if run.calls >= limits.tool_calls:
            return f"the run reached its limit of {limits.tool_calls} tool calls (limits.tool_calls)"
        if time.perf_counter() - run.started > limits.wall_s:
            return f"the run exceeded its wall-time limit of {limits.wall_s:g}s (limits.wall_s)"
        if run.tokens_in + run.tokens_out > limits.tokens:
            return f"the run used more than {limits.tokens} tokens (limits.tokens)"
        return ""

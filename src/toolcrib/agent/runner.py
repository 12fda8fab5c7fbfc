"""The Runner: single-call mode (level 4) and a bounded loop mode (ReAct)."""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal, TypeVar

from toolcrib.agent import prompts
from toolcrib.agent.answer import Answer, Citation, Outcome
from toolcrib.agent.brief import evidence_brief
from toolcrib.agent.capabilities import unavailable_asked, unavailable_note
from toolcrib.agent.evidence import EvidenceLedger, says_evidence_lacks_it, whole_sentences
from toolcrib.agent.quotes import asks, asks_documents, compared, quoted_answer
from toolcrib.agent.records import (
    LookedUp,
    record_answer,
    table_answer,
    unanswered_by_query,
    unanswered_words,
    with_identifiers,
)
from toolcrib.agent.requested import requested_arguments
from toolcrib.agent.runs import PausedRun, RunRecord, RunStore
from toolcrib.agent.smalltalk import small_talk_reply
from toolcrib.agent.today import today_line
from toolcrib.errors import (
    CallDropped,
    ConfigError,
    InvalidArguments,
    LimitExceeded,
    ModelFacingError,
    NotPermitted,
    OperatorError,
)
from toolcrib.models.base import (
    Completion,
    HostedCall,
    Message,
    Model,
    Prefillable,
    ReaderScoped,
    ToolCall,
    ToolSpec,
)
from toolcrib.policy.principal import Principal
from toolcrib.retrieval.excerpt import best_unit
from toolcrib.retrieval.retriever import contains_exactly, find_identifiers
from toolcrib.sql.guard import statement_text
from toolcrib.sql.tool import SQL_RESOURCE
from toolcrib.tools.gate import CallContext, Gate
from toolcrib.tools.grounding import Grounding, identifiers, stems
from toolcrib.tools.registry import Offer, tool_specs
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect
from toolcrib.trace.events import DecidedBy, EventKind
from toolcrib.trace.tracer import TraceExporter, Tracer

Mode = Literal["single", "loop"]

_T = TypeVar("_T")


class _ThreadLoop:
    """A thread's own event loop for the sync API; closed when the thread ends (its local storage is
    released) or at interpreter exit, whichever comes first. It keeps the tasks made on it during a
    run (``started``), so the run's leftovers are found without scanning every task of the process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.started: list[asyncio.Task[Any]] = []
        self.loop.set_task_factory(functools.partial(_keep_task, self.started))  # no reference to self
        weakref.finalize(self, self.loop.close)  # a finalizer, not __del__: it also runs at exit, in order


def _keep_task(started: list[asyncio.Task[Any]], loop: asyncio.AbstractEventLoop,
               coro: Coroutine[Any, Any, Any], **kwargs: Any) -> asyncio.Task[Any]:
    """The default task factory, remembering each task in ``started``."""
    task = asyncio.Task(coro, loop=loop, **kwargs)
    started.append(task)
    return task


class _ThreadLoops(threading.local):
    current: _ThreadLoop | None = None


_LOOPS = _ThreadLoops()


def _run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion on this thread's own event loop, made on first use and reused.

    ``asyncio.run`` makes and tears down a loop and its thread pool on every call (~75 us, and a new
    worker thread for a plain ``def`` tool each time); the sync API keeps one loop per thread instead,
    so a service calling ``Runner.ask`` from a thread pool has one loop per pool thread. Tasks a run
    leaves behind are cancelled when it returns, as ``asyncio.run`` does.
    """
    if asyncio.events._get_running_loop() is not None:  # get_running_loop() raises when there is none
        coro.close()
        raise OperatorError("Runner.ask and Runner.resume cannot be called while an event loop is running "
                            "in this thread (async code, a notebook): await Runner.aask / Runner.aresume instead")
    held = _LOOPS.current
    if held is None or held.loop.is_closed():
        held = _LOOPS.current = _ThreadLoop()
    try:
        return held.loop.run_until_complete(coro)
    finally:
        _cancel_leftovers(held)


def _cancel_leftovers(held: _ThreadLoop) -> None:
    """Cancel the tasks a run started and left running (``asyncio.run`` does the same when it ends)."""
    leftovers = [task for task in held.started if not task.done()]
    held.started.clear()
    if not leftovers:
        return
    for task in leftovers:
        task.cancel()
    held.loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
    held.started.clear()


@dataclass
class Limits:
    rounds: int = 5
    tool_calls: int = 8
    wall_s: float = 180.0
    tokens: int = 32000


@dataclass
class RunnerSettings:
    mode: Mode = "single"
    limits: Limits = field(default_factory=Limits)
    require_evidence: bool = True
    name: str = "this workspace"
    system_prompt: str = ""
    max_tokens: int = 400
    # the final answer's own cap, per thing the question asks and in all: a small model can write a worked
    # essay (400 tokens, ~22 s on two cores) or copy the evidence out where three sentences answer; a reply
    # cut there ends at its last whole sentence
    answer_tokens_per_ask: int = 120
    answer_max_tokens: int = 200
    offer_only_groundable: bool = True  # withhold tools whose required identifier the run has not seen
    search_when_nothing_found: bool = True  # code searches the documents once if no tool found anything
    plan_lookups: bool = True  # code adds the obvious lookups the model left out (loop mode: when it would answer)
    small_talk: bool = True  # a greeting, thanks or goodbye is answered by code, with no model call
    record_answers: bool = True  # single mode: facts of records looked up by id are stated by code
    search_when_unanswered: bool = True  # code searches the documents for what no result holds (both modes)
    quote_answers: bool = True  # single mode: a fact question the passages answer is quoted by code


@dataclass
class _Run:
    """Mutable state of one run."""

    question: str
    principal: Principal
    tracer: Tracer
    cctx: CallContext
    messages: list[Message]
    run_id: str
    mode: Mode
    started: float = field(default_factory=time.perf_counter)
    evidence: EvidenceLedger = field(default_factory=EvidenceLedger)
    outcomes: list[CallOutcome] = field(default_factory=list)
    rounds: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model_decisions: int = 0
    reminded: bool = False
    completed: bool = False  # loop mode: code added what the model's calls left out (once per run)
    code_searched: bool = False
    paused: PausedRun | None = None
    request_flags: list[str] = field(default_factory=list)  # what the scanner flagged in the request itself


def _not_carried_out(tool: str, arguments: Mapping[str, Any], message: str, code: str) -> str:
    """What the answer says of a change refused as asked: the exact call, why, and that nothing changed."""
    return (f"{tool}({json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False)}) was refused, so I cannot "
            f"do this as asked: {message} ({code}). Nothing was changed.")


def _without_identifiers(text: str) -> str:
    for identifier in find_identifiers(text):
        text = text.replace(identifier, " ")
    return text


def _same_call(call: ToolCall, calls: Sequence[ToolCall]) -> bool:
    """Whether ``calls`` holds ``call`` (the same tool with the same arguments)."""
    return any(c.name == call.name and c.arguments == call.arguments for c in calls)


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
    ) -> None:
        self.model = model
        self.gate = gate
        self.settings = settings or RunnerSettings()
        self.resources = dict(resources or {})
        self.tracer_factory = tracer_factory or Tracer
        self.runs = runs

    # -- public -----------------------------------------------------------------------------------

    def ask(self, question: str, principal: Principal, *, mode: Mode | None = None,
            exporters: Sequence[TraceExporter] = ()) -> Answer:
        """``aask`` for synchronous code, on this thread's own reused event loop; raises
        ``OperatorError`` when called from a running event loop (there, await ``aask``)."""
        return _run_sync(self.aask(question, principal, mode=mode, exporters=exporters))

    def prefill(self, question: str, principal: Principal, *, mode: Mode | None = None) -> float:
        """Have a ``Prefillable`` model evaluate now the prompt start its first decision on ``question`` would
        begin with (the system block with the tools offered for it), so that questions with that offer start
        from it; nothing is asked and no run is recorded. Returns the ms it took (0: nothing to do)."""
        if not isinstance(self.model, Prefillable):
            return 0.0
        run = self._start(question, principal, mode or self.settings.mode, (), tracer=Tracer())
        return self.model.prefill(run.messages, tool_specs(self._current_offer(run).tools))

    def resume(self, run_id: str, principal: Principal, *, exporters: Sequence[TraceExporter] = ()) -> Answer:
        """``aresume`` for synchronous code (see ``ask``)."""
        return _run_sync(self.aresume(run_id, principal, exporters=exporters))

    async def aask(self, question: str, principal: Principal, *, mode: Mode | None = None,
                   exporters: Sequence[TraceExporter] = ()) -> Answer:
        """Answer ``question`` for ``principal``; ``exporters`` also receive this run's events as they happen."""
        mode = mode or self.settings.mode
        run = self._start(question, principal, mode, exporters)
        reply = small_talk_reply(question, self.settings.name) if self.settings.small_talk else None
        if reply is not None:
            run.tracer.record(EventKind.EVIDENCE_RULE, "Small talk: answered by code", detail={
                "reason": "a greeting, thanks or goodbye asks nothing to look up: no model call, no tool"})
            return self._finish(run, reply, outcome="answered")
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
        run = _Run(paused.question, principal, tracer, cctx, paused.messages, run_id,
                   "loop" if paused.mode == "loop" else "single")
        tracer.run_id = run_id
        tracer.record(EventKind.RUN_RESUMED, "Resume paused run", decided_by="human",
                      detail={"question": paused.question, "user": principal.user_id, "mode": paused.mode})
        return await self._bounded(run, self._continue(run, paused))

    async def _continue(self, run: _Run, paused: PausedRun) -> Answer:
        outcomes = [await self.gate.run(call, run.cctx, proposal_id=pid) for call, pid in paused.pending]
        self._observe(run, outcomes)
        pending = [o for o in outcomes if o.status == "approval_required"]
        if pending:
            return self._pause(run, pending)
        if paused.mode == "single":
            return await self._finish_with_final_ask(run)
        return await self._loop(run)

    async def _bounded(self, run: _Run, steps: Coroutine[Any, Any, Answer]) -> Answer:
        """Run ``steps``; a limit the model hits (its context window) ends the run like any other limit."""
        try:
            return await steps
        except LimitExceeded as exc:
            run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached", detail={"reason": str(exc)})
            return self._finish(run, f"I stopped before finishing: {exc}. Here is what I found so far.",
                                outcome="limit")

    # -- modes ------------------------------------------------------------------------------------

    def _tracer(self, exporters: Sequence[TraceExporter]) -> Tracer:
        tracer = self.tracer_factory()
        tracer.exporters.extend(exporters)
        return tracer

    def _start(self, question: str, principal: Principal, mode: Mode, exporters: Sequence[TraceExporter],
               tracer: Tracer | None = None) -> _Run:
        tracer = tracer or self._tracer(exporters)
        run_id = uuid.uuid4().hex[:12]
        cctx = CallContext(principal, tracer, Grounding(question), self.resources, run_id, question=question)
        extra = "\n".join(p for p in (self.settings.system_prompt,
                                      prompts.SINGLE_CALL if mode == "single" else "") if p)
        system = prompts.SYSTEM.format(name=self.settings.name, example_id="lookup_part#1", extra=extra)
        tracer.run_id = run_id
        tracer.record(EventKind.RUN_STARTED, f"Start run ({mode} mode)",
                      detail={"question": question, "user": principal.user_id, "mode": mode})
        run = _Run(question, principal, tracer, cctx,
                   [Message("system", system), Message("user", question)], run_id, mode)
        flags = self.gate.scanner.scan(question) if self.gate.scanner is not None else []
        if flags:  # pasted text that claims authority: this run may read, never change anything
            run.request_flags = [f"{f.kind}: {f.excerpt}" for f in flags]
            tracer.record(EventKind.CONTENT_FLAGGED, "The request carries instruction-like text", detail={
                "flags": run.request_flags, "reason": "tools that change something are withheld for this run"})
        return run

    def _offer(self, run: _Run, offer: Offer | None = None) -> list[ToolSpec]:
        """Decide what the model (or code) is offered now, and record it; the gate refuses anything
        else (``not_offered``)."""
        offer = offer if offer is not None else self._current_offer(run)
        run.cctx.offer = offer
        detail: dict[str, Any] = {"offered": offer.names, "withheld": dict(offer.withheld)}
        if self.model.hosted_tools:  # run by the provider, by workspace configuration: not the gate's to offer
            detail["hosted"] = list(self.model.hosted_tools)
        run.tracer.record(EventKind.TOOLS_OFFERED, "Offer tools", detail=detail)
        return tool_specs(offer.tools)

    def _current_offer(self, run: _Run) -> Offer:
        offer = self.gate.offer(run.principal, run.cctx.grounding if self.settings.offer_only_groundable else None)
        withheld: dict[str, str] = {}
        if run.request_flags:
            withheld |= {t.name: "the request carries instruction-like text, so nothing may be changed in this run"
                         for t in offer.tools if t.effect is not Effect.READ}
        if sql := statement_text(run.question):  # typed lookups stay offered; a query text could carry it
            withheld |= {t.name: f"the request carries SQL statement text ({sql!r}), so no query is written "
                                 "from it in this run" for t in offer.tools if SQL_RESOURCE in t.tags}
        if not withheld:
            return offer
        return Offer(tuple(t for t in offer.tools if t.name not in withheld), {**offer.withheld, **withheld})

    async def _single(self, run: _Run) -> Answer:
        specs = self._offer(run)
        if (refused := self._refused_request(run)) is not None:
            return refused
        first = self._complete(run, specs, decided_by="model", title="Model decides")
        if not first.tool_calls:
            if self._grounded(run) or not self.settings.require_evidence:
                return self._answer(run, first.text)
            run.tracer.record(EventKind.EVIDENCE_RULE, "Evidence rule fired", detail={
                "reason": "a direct answer with no tool result or passage behind it is not accepted"})
            run.messages += [Message("assistant", first.text), Message("user", prompts.EVIDENCE_REMINDER)]
            first = self._complete(run, specs, decided_by="code", title="Re-ask with evidence reminder",
                                   tool_choice="required")
            if not first.tool_calls:
                return await self._finish_with_final_ask(run, model_text=first.text)
        calls, dropped = self._decided_calls(first.tool_calls)
        run.messages.append(Message("assistant", first.text, tool_calls=tuple(calls)))
        outcomes = await self.gate.run_many(calls, run.cctx)
        self._observe(run, outcomes)
        regrounding = "the model's identifier is not in the request, which names exactly one of that kind"
        for i, outcome in enumerate(outcomes):
            if (regrounded := self._regrounded(run, outcome)) is not None:
                outcomes[i], = await self._run_planned(run, [regrounded], regrounding)
        for extra, reason in dropped:  # recorded, never silently lost
            self._drop(run, extra, reason)
        if len(outcomes) == 1 and (refusal := self._refused_change(outcomes[0])) is not None:
            run.tracer.record(EventKind.EVIDENCE_RULE, "Said that the change was refused", detail={
                "reason": "the one call was a change the gate refused; code says so instead of answering around it"})
            return self._finish(run, refusal, outcome="answered", code_wrote=True)
        pending = [o for o in outcomes if o.status == "approval_required" and o.proposal_id]
        if pending:
            return self._pause(run, pending)
        # lookups only: code adds the obvious ones the model left out, also when none of its calls
        # succeeded (a query of a table the user may not read, for an order the request names)
        if all(o.effect == Effect.READ.value for o in outcomes) and (
                await self._planned_lookups(run) or any(o.ok for o in outcomes)):
            if (answer := self._records_answer(run)) is not None:
                return answer
            await self._search_unanswered(run)
        return await self._finish_with_final_ask(run)

    async def _complete_evidence(self, run: _Run) -> bool:
        """Loop mode, once, when the model would answer from what its calls found: what single mode adds
        after its one decision (the obvious lookups it left out, a document search for what the request
        asks and no result holds). Returns whether code added anything (the model then answers again)."""
        run.completed = True
        if not all(o.effect == Effect.READ.value for o in run.outcomes if o.status != "dropped"):
            return False  # a change was made or held: nothing is added around it
        made = run.calls
        await self._planned_lookups(run)
        await self._search_unanswered(run)
        return run.calls > made

    async def _search_unanswered(self, run: _Run) -> None:
        """Search the documents (``search_when_unanswered``) when the run's lookups found something, but
        not what two or more words of the request ask about; then look up what the passages name for
        the request, when it asks for what a lookup returns (``_passage_lookups``)."""
        if (self.settings.search_when_unanswered and self._grounded(run)  # found something, not all
                and len(missing := self._unanswered(run)) >= 2):
            await self._search_documents(run, f"the request asks about {', '.join(sorted(missing))}, "
                                              "which no result holds")
        await self._passage_lookups(run)

    async def _passage_lookups(self, run: _Run) -> None:
        """A lookup by identifier of what the organisation's own passages name for the request ("which
        probe does channel C use, and what does it cost?": the passage's "PT100 probe TC-PT100"), when
        the request asks for what that lookup returns (its price) and no result holds it: the
        identifiers of its shape in the passage unit that bears most on the request, not in the request
        and not looked up yet, at most two (``plan_lookups``; READ only, decided by code)."""
        passages = [p for p in run.evidence.passages.values() if p.trusted]
        if not self.settings.plan_lookups or not passages or run.cctx.flags:
            return
        held = stems(" ".join(self._records(run)))
        made = {(o.call.name, json.dumps(o.call.arguments, sort_keys=True)) for o in run.outcomes}
        offer = self._current_offer(run)  # the passages' identifiers are grounded now
        planned: list[ToolCall] = []
        for tool in offer.tools:
            key = tool.lookup_key()
            if key is None or not tool.returns_asked(run.question, held):
                continue
            # what names the thing is the rest of the request ("which probe does channel C use"), read
            # without the identifiers it names already (the thing sought is another one)
            naming = " ".join(a for a in asks(run.question) if not tool.returns_asked(a, set()))
            best = best_unit(_without_identifiers(naming), [p.text for p in passages]) if naming else None
            for value in dict.fromkeys(identifiers(best.text, key[1]) if best is not None else ()):
                arguments = {key[0]: value}
                if (not contains_exactly(run.question, value) and len(planned) < 2
                        and (tool.name, json.dumps(arguments, sort_keys=True)) not in made):
                    planned.append(ToolCall(f"code_{run.calls + len(planned) + 1}", tool.name, arguments))
        if planned:
            self._offer(run, offer)
            await self._run_planned(run, planned, "a passage names it for what the request asks, and the request "
                                                  "asks for what this lookup returns")

    def _decided_calls(self, proposed: Sequence[ToolCall]) -> tuple[list[ToolCall], list[tuple[ToolCall, str]]]:
        """The calls single mode makes of the model's one decision, and those it drops with why: a change
        (WRITE/ACTUATE) runs alone, as the decision's first call; READ calls proposed together (the same
        lookup for two ids, a lookup and a search) all run, up to the run's tool-call budget, once each."""
        def changes(call: ToolCall) -> bool:  # an unknown tool is the gate's to refuse, as a lookup would be
            tool = self.gate.registry.get(call.name)
            return tool is not None and tool.effect is not Effect.READ

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

    def _refused_request(self, run: _Run) -> Answer | None:
        """A change the request spells out (``requested_arguments``) with a value the tool cannot take
        ("Set CH3 to 12 V", "Reserve -3 F2"): refused by code before the model is asked, with the
        tool's own reason, so no proposal that could never run is made or held for a person. None
        when the request spells out no such change, or its values pass every check."""
        offer = run.cctx.offer
        for tool in offer.tools if offer is not None else ():
            if tool.effect is Effect.READ or (arguments := requested_arguments(run.question, tool)) is None:
                continue
            try:
                self.gate.admit(ToolCall(f"code_{run.calls + 1}", tool.name, arguments), run.cctx)
            except InvalidArguments as exc:
                run.tracer.record(EventKind.EVIDENCE_RULE, "Refused the values the request gives", detail={
                    "tool": tool.name, "arguments": arguments, "error": exc.to_result().get("error", {}),
                    "reason": "the request spells out a change whose values the tool cannot take; refused "
                              "before any model call, and nothing was proposed"})
                return self._finish(run, _not_carried_out(tool.name, arguments, exc.message, exc.code),
                                    outcome="answered", code_wrote=True)
            except ModelFacingError:
                continue  # not permitted, not grounded ...: the model's path says so
        return None

    def _refused_change(self, outcome: CallOutcome) -> str | None:
        """What the answer says when the run's one call was a change (WRITE/ACTUATE) the gate refused as
        proposed (invalid or invented arguments): the exact call, why, and that nothing changed. None
        for anything else, a tool the user may not use included: code then says so and searches for
        what they may read."""
        tool = self.gate.registry.get(outcome.call.name)
        error = outcome.payload.get("error") or {}
        if (outcome.status != "refused" or tool is None or tool.effect is Effect.READ
                or error.get("code") in ("not_permitted", "not_offered")):
            return None
        return _not_carried_out(outcome.call.name, outcome.call.arguments, error.get("message", "refused"),
                                error.get("code", "refused"))

    def _regrounded(self, run: _Run, outcome: CallOutcome) -> ToolCall | None:
        """A lookup by identifier refused because the model's identifier appears nowhere ("F2-001"), as
        code makes it again with the one identifier of that shape the request holds ("F2"); None when
        the request holds none or several, or the refusal was anything else."""
        tool = self.gate.registry.get(outcome.call.name)
        key = tool.lookup_key() if tool is not None else None
        if key is None or outcome.payload.get("error", {}).get("code") != "ungrounded_argument":
            return None
        found = list(dict.fromkeys(identifiers(run.question, key[1])))
        if len(found) != 1 or found[0] == outcome.call.arguments.get(key[0]):
            return None
        return ToolCall(f"code_{run.calls + 1}", outcome.call.name, {key[0]: found[0]})

    def _lookups(self, run: _Run) -> list[LookedUp] | None:
        """The run's successful results as lookups by identifier (``Tool.lookup_key``), each with its
        citation; None when one of them came from anything else (a search, a query)."""
        lookups: list[LookedUp] = []
        for outcome in (o for o in run.outcomes if o.ok):
            tool = self.gate.registry.get(outcome.call.name)
            key = tool.lookup_key() if tool is not None else None
            citation = run.evidence.citation_of(outcome.call.id)
            if tool is None or key is None or citation is None:
                return None
            lookups.append(LookedUp(tool, str(outcome.call.arguments.get(key[0], "")),
                                    outcome.payload.get("data") or {}, citation))
        return lookups

    def _unanswered(self, run: _Run) -> set[str]:
        """What the request asks beyond the records the run looked up by identifier (``unanswered_words``),
        or beyond its one query's result when a column of it is named for what it does not compute
        (``unanswered_by_query``); nothing when a call was anything else (a query's figures need not
        repeat the request's words)."""
        lookups = self._lookups(run)
        if lookups:
            return unanswered_words(run.question, lookups)
        found = [o for o in run.outcomes if o.ok]
        data = found[0].payload.get("data") if len(found) == 1 else None
        tool = self.gate.registry.get(found[0].call.name) if found else None
        if tool is None or not isinstance(data, dict) or not data.get("claimed"):
            return set()
        return unanswered_by_query(run.question, tool, data)

    def _records_answer(self, run: _Run) -> Answer | None:
        """The answer code states from the records looked up (``record_answers``), where the question asks
        for their facts; else None."""
        if not self.settings.record_answers or not (text := self._record_answer(run) or self._table_answer(run)):
            return None
        run.tracer.record(EventKind.EVIDENCE_RULE, "Answered by code from the records", detail={
            "reason": "the question asks for facts of the records looked up; code states their fields"})
        return self._finish(run, text, outcome="answered")

    def _record_answer(self, run: _Run) -> str | None:
        """``records.record_answer`` when every call of the run was a successful lookup by identifier of
        a trusted tool and nothing was flagged; else None (the model writes the answer)."""
        lookups = self._lookups(run)
        if (not lookups or run.cctx.flags or not all(o.ok for o in run.outcomes)
                or not all(item.tool.trusted and "retrieval" not in item.tool.tags for item in lookups)):
            return None
        return record_answer(run.question, lookups)

    def _table_answer(self, run: _Run) -> str | None:
        """``records.table_answer`` when the run made one call, a successful query of a trusted tool
        whose result is a small table; else None."""
        if len(run.outcomes) != 1 or not run.outcomes[0].ok or run.cctx.flags:
            return None
        outcome = run.outcomes[0]
        tool = self.gate.registry.get(outcome.call.name)
        data = outcome.payload.get("data")
        citation = run.evidence.citation_of(outcome.call.id)
        if tool is None or not tool.trusted or not isinstance(data, dict) or citation is None:
            return None
        return table_answer(run.question, data, citation)

    async def _planned_lookups(self, run: _Run) -> bool:
        """The obvious lookups the model's calls left out, proposed by code. A lookup by
        one identifier (``Tool.lookup_key``) that the request names by what it reads ("how many do we
        have in stock": lookup_stock) and the run has not made, with the identifier of its shape that the
        request holds, or else that exactly one record the run's own tools returned holds when no call
        so far looked up that kind of thing ("the part ordered in ORD-1005": the order's one part, once
        the order was looked up); or a lookup whose description says it returns what the request asks
        and no result holds ("... and who is their supplier?"). In up to two rounds (a chain), at most
        two calls in all, run through the gate like any call; WRITE/ACTUATE tools are never planned. (A
        document search for a request that asks two things was tried and dropped: on the demo set it
        added ~40 s of prompt per question and passed none more.) Returns whether a planned lookup succeeded."""
        if not self.settings.plan_lookups:
            return False
        two_asks = len(asks(run.question)) > 1
        budget = 2
        found = False
        while budget:
            planned = self._plan(run, two_asks, budget)
            if not planned:
                break
            budget -= len(planned)
            outcomes = await self._run_planned(run, planned, "the request names what this lookup reads, and the run "
                                                             "holds its identifier")
            found = found or any(o.ok for o in outcomes)
        return found

    async def _run_planned(self, run: _Run, calls: list[ToolCall], reason: str) -> list[CallOutcome]:
        """Calls code proposes (never WRITE/ACTUATE): each recorded as decided by code with ``reason``,
        then run through the gate like any call and observed."""
        for call in calls:
            run.tracer.record(EventKind.CALL_PROPOSED, f"Planned: {call.name}", decided_by="code", tool=call.name,
                              call_id=call.id, arguments=dict(call.arguments), detail={"reason": reason})
        run.messages.append(Message("assistant", "", tool_calls=tuple(calls)))
        outcomes = await self.gate.run_many(calls, run.cctx)
        self._observe(run, outcomes)
        return outcomes

    def _records(self, run: _Run) -> list[str]:
        """The records the run's own systems returned, as JSON text: successful results of trusted tools,
        not document searches, not content others wrote."""
        return [json.dumps(o.payload.get("data"), ensure_ascii=False, default=str) for o in run.outcomes
                if o.ok and (t := self.gate.registry.get(o.call.name)) is not None and t.trusted
                and "retrieval" not in t.tags]

    def _plan(self, run: _Run, two_asks: bool, budget: int) -> list[ToolCall]:
        """One round of ``_planned_lookups``: the calls to add now (recording the offer they come from)."""
        offer = self._current_offer(run)  # what the run may use now: a result may have named an identifier
        calls = [o.call for o in run.outcomes if o.status != "dropped"]  # a dropped call was never made
        looked_up = {str(v).casefold() for c in calls for v in c.arguments.values()}
        # an identifier the model looked up is looked up again by another tool only for a second ask
        # ("what does F2 cost and is it in stock?"), not for one ask that names both ("is part F2 in stock?")
        used = set() if two_asks else looked_up
        records = self._records(run)
        held = stems(" ".join(records))
        planned: list[ToolCall] = []
        for tool in offer.tools:
            key = tool.lookup_key()
            if key is None or any(c.name == tool.name for c in calls):
                continue
            # asked for what only this tool returns ("... and who is their supplier?"): the identifier
            # already looked up by another tool is this tool's to look up too
            missing = tool.returns_asked(run.question, held)
            if not (missing or tool.named_by(run.question)):
                continue
            name, shape = key
            found = [v for v in identifiers(run.question, shape) if missing or v.casefold() not in used]
            if not found:
                if any(name in c.arguments for c in calls):  # that kind of thing was looked up: no chain
                    continue
                found = list(dict.fromkeys(v for text in records for v in identifiers(text, shape)
                                           if v.casefold() not in looked_up))
                if len(found) != 1:
                    continue
            planned.append(ToolCall(f"code_{run.calls + len(planned) + 1}", tool.name, {name: found[0]}))
            if len(planned) == budget:
                break
        if planned:
            self._offer(run, offer)
        return planned

    async def _loop(self, run: _Run) -> Answer:
        limits = self.settings.limits
        while True:
            stop = self._limit_reached(run)
            if stop and self._grounded(run) and run.rounds >= limits.rounds:
                # out of rounds with evidence in hand: one final answer from it, asked by code, rather
                # than "I stopped" (a small model reads on past what it needs)
                run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached: answer from what was found",
                                  detail={"reason": stop})
                return await self._finish_with_final_ask(run)
            if stop:
                raise LimitExceeded(stop)  # ends the run with what it found so far (see _bounded)
            specs = self._offer(run)
            if run.rounds == 0 and (refused := self._refused_request(run)) is not None:
                return refused
            run.rounds += 1
            reply = self._complete(run, specs, decided_by="model", title=f"Model decides (round {run.rounds})")
            if not reply.tool_calls:
                if self._grounded(run) or not self.settings.require_evidence:
                    if not run.completed and await self._complete_evidence(run):
                        continue  # the model answers again, with what code added
                    if self._grounded(run) and self.model.answers_from_brief:  # written as single mode does
                        return self._records_answer(run) or await self._finish_with_final_ask(
                            run, model_text=reply.text)
                    return self._answer(run, reply.text)
                if await self._search_documents(run):
                    continue  # the model answers again, now with the passages
                if run.reminded:
                    return self._abstain(run, reply.text)
                run.reminded = True
                run.tracer.record(EventKind.EVIDENCE_RULE, "Evidence rule fired", detail={
                    "reason": "the answer rested on no tool result or passage; asking once more"})
                run.messages += [Message("assistant", reply.text), Message("user", prompts.EVIDENCE_REMINDER)]
                continue
            made = [o.call for o in run.outcomes if o.status != "dropped"]
            fresh: list[ToolCall] = []
            for call in reply.tool_calls:
                if _same_call(call, made):
                    self._drop(run, call, "the run made this call already; its result is above")
                else:
                    fresh.append(call)
            if not fresh:  # a small model that repeats itself would do so to the round limit: answer now
                run.tracer.record(EventKind.EVIDENCE_RULE, "Asked for the answer: the model repeated a call",
                                  detail={"reason": "every call it proposed was made before; nothing new to read"})
                return await self._finish_with_final_ask(run)
            budget = max(0, limits.tool_calls - run.calls)
            calls, over = fresh[:budget], fresh[budget:]
            for extra in over:
                self._drop(run, extra, f"over the run's budget of {limits.tool_calls} tool calls (limits.tool_calls)")
            run.messages.append(Message("assistant", reply.text, tool_calls=tuple(calls)))
            outcomes = await self.gate.run_many(calls, run.cctx)
            self._observe(run, outcomes)
            pending = [o for o in outcomes if o.status == "approval_required" and o.proposal_id]
            if pending:
                return self._pause(run, pending)

    # -- steps ------------------------------------------------------------------------------------

    def _complete(self, run: _Run, specs: list[ToolSpec] | None, *, decided_by: DecidedBy, title: str,
                  tool_choice: Literal["auto", "none", "required"] = "auto",
                  messages: list[Message] | None = None, max_tokens: int | None = None) -> Completion:
        model = self.model
        if isinstance(model, ReaderScoped):  # a provider that reads documents reads only the principal's
            model = model.for_reader(sorted(run.principal.groups))
        reply = model.complete(run.messages if messages is None else messages, specs or None, tool_choice=tool_choice,
                               max_tokens=max_tokens or self.settings.max_tokens)
        run.tokens_in += reply.tokens_in
        run.tokens_out += reply.tokens_out
        if decided_by == "model":
            run.model_decisions += 1
        what = ", ".join(c.name for c in reply.tool_calls) if reply.tool_calls else "answers directly"
        detail = {"tool_calls": [c.to_dict() for c in reply.tool_calls]} if reply.tool_calls else {
            "text": reply.text[:300]}
        run.tracer.record(EventKind.MODEL_DECISION, f"{title}: {what}", decided_by=decided_by,
                          status="tool_calls" if reply.tool_calls else "text", detail=detail,
                          tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, ms=reply.ms)
        for hosted in reply.hosted:
            self._hosted(run, hosted)
        if reply.cited:  # sources the reply's annotations name, as the provider returned them
            run.evidence.add_sources(reply.cited)
        for call in reply.tool_calls:  # whoever asked, the calls are the model's proposals
            run.tracer.record(EventKind.CALL_PROPOSED, f"Proposed: {call.name}", decided_by="model",
                              tool=call.name, call_id=call.id, arguments=dict(call.arguments))
        return reply

    def _hosted(self, run: _Run, call: HostedCall) -> None:
        """A tool the provider decided on and ran itself: the gate never saw it, so it is recorded as the
        provider's, and what it returned becomes citable evidence (never more than it returned)."""
        cited = run.evidence.add_hosted(call)
        results = [{"source": s.ref, "title": s.title, "text": s.text[:500]} for s in call.sources]
        run.tracer.record(EventKind.CALL_EXECUTED if call.ok else EventKind.CALL_FAILED,
                          f"Provider ran: {call.tool}", decided_by="provider", tool=call.tool, call_id=call.id,
                          arguments=dict(call.arguments), status=call.status,
                          error_code=None if call.ok else f"hosted_{call.status or 'failed'}", citations=cited,
                          detail={"hosted": True, "results": results, "output": call.output[:2000]})

    def _drop(self, run: _Run, call: ToolCall, reason: str) -> None:
        """A proposed call the run will not make: recorded, and reported in the answer, never lost."""
        run.tracer.record(EventKind.CALL_DROPPED, f"Dropped call: {call.name}", tool=call.name, call_id=call.id,
                          arguments=dict(call.arguments), status="dropped", error_code="dropped",
                          detail={"reason": reason})
        run.outcomes.append(CallOutcome(call, "dropped", CallDropped(reason).to_result()))

    def _observe(self, run: _Run, outcomes: list[CallOutcome]) -> None:
        for outcome in outcomes:
            run.calls += 1
            run.outcomes.append(outcome)
            evidence = run.evidence.add(outcome) if outcome.ok else None  # a search is shown as text
            run.messages.append(Message("tool", outcome.for_model(evidence.to_text() if evidence else None),
                                        tool_call_id=outcome.call.id, name=outcome.call.name))

    def _grounded(self, run: _Run) -> bool:
        return run.evidence.useful

    async def _search_documents(self, run: _Run, reason: str = "") -> bool:
        """When the model's choices found nothing, code searches the documents once with the question
        (the small model's commonest mistake is a lookup tool for a question about a document); with a
        ``reason``, also when they found something (the request asks for more than they hold). Never
        when the run searched the documents already. Returns whether it searched."""
        if reason:
            if run.code_searched or run.evidence.searched:
                return False
        elif (not self.settings.search_when_nothing_found or run.code_searched or run.evidence.useful
                or run.evidence.searched):
            return False
        search = next((t for t in self.gate.offer(run.principal).tools if "retrieval" in t.tags), None)
        if search is None:
            return False
        run.code_searched = True
        call = ToolCall(f"code_{run.calls + 1}", search.name, {"query": run.question})
        run.tracer.record(EventKind.CODE_SEARCH, f"Search the documents: {search.name}", tool=search.name,
                          call_id=call.id, arguments=dict(call.arguments),
                          detail={"reason": reason or "no tool call so far found anything"})
        run.messages.append(Message("assistant", "", tool_calls=(call,)))
        self._observe(run, [await self.gate.run(call, run.cctx)])
        return True

    def _limit_reached(self, run: _Run) -> str:
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

    async def _finish_with_final_ask(self, run: _Run, *, model_text: str = "") -> Answer:
        await self._search_documents(run)  # only when nothing so far found anything
        if self.settings.require_evidence and not self._grounded(run):
            return self._abstain(run, model_text)
        # a name of two or more words ("Brightline Scientific"; not capitals such as "DROP TABLE") that
        # nothing found mentions: what was found is about something else
        if unmentioned := [n for n in run.evidence.unmentioned(run.question) if " " in n and not n.isupper()]:
            run.tracer.record(EventKind.EVIDENCE_RULE, "Nothing found mentions what the question names",
                              detail={"names": unmentioned})
            return self._finish(run, prompts.UNMENTIONED_ANSWER.format(names=" or ".join(unmentioned)),
                                outcome="abstained", abstained=True)
        if text := self._quoted_answer(run):
            run.tracer.record(EventKind.EVIDENCE_RULE, "Answered by code in the documents' words", detail={
                "reason": "each thing the question asks is stated by one unit of the passages; code quotes it"})
            return self._finish(run, text, outcome="answered", code_wrote=True)
        brief = evidence_brief(run.evidence, run.outcomes)
        ids = ", ".join(brief.labels.values()) or "none"
        # what each version of a conflicting document says is quoted by code under the answer (the
        # review's note), not restated by the model: asked to, it wrote 300-400 tokens (~25 s on 2 cores)
        ask = prompts.FINAL.format(question=run.question, ids=ids, today=today_line(run.question, date.today()))
        # a small model answers the first of several things asked, or for the first of several parties
        asked = 1
        if each := compared(run.question, list(run.evidence.passages.values())):
            ask += "\n" + prompts.FOR_EACH.format(names="; ".join(each))
            asked = len(each)
        elif len(parts := asks(run.question)) >= 2:
            ask += "\n" + prompts.EVERY_ASK.format(count=len(parts), asks="; ".join(
                f"({i}) {part}" for i, part in enumerate(parts, 1)))
            asked = len(parts)
        # the system block (cached by the decision), the question and the brief: the conversation that
        # found the evidence is not replayed
        messages = [m for m in run.messages if m.role == "system"] + [
            Message("user", run.question), Message("user", prompts.EVIDENCE.format(evidence=brief.text)),
            Message("user", ask)]
        settings = self.settings
        cap = min(settings.max_tokens, settings.answer_max_tokens, settings.answer_tokens_per_ask * asked)
        final = self._complete(run, None, decided_by="code", title="Ask for a final answer", messages=messages,
                               max_tokens=cap)
        text = brief.cited_by_id(final.text)
        return self._answer(run, whole_sentences(text) if final.tokens_out >= cap else text)

    def _quoted_answer(self, run: _Run) -> str | None:
        """``quotes.quoted_answer`` in single mode (in loop mode too, for a model that answers from the
        brief) when everything the run found is document passages, or the request asks what the
        documents say and the run found some; none flagged. Else None (the model writes the answer)."""
        evidence = run.evidence
        if (not self.settings.quote_answers or (run.mode != "single" and not self.model.answers_from_brief)
                or run.cctx.flags or run.request_flags
                or evidence.insufficient or not (evidence.only_passages
                                                 or (evidence.passages and asks_documents(run.question)))):
            return None
        # what a lookup by identifier found nothing for ("channel Z") is what the question is about: a
        # quote must name it
        sought = [str(o.call.arguments.get(key[0], "")) for o in run.outcomes
                  if o.found_nothing and (tool := self.gate.registry.get(o.call.name)) is not None
                  and (key := tool.lookup_key()) is not None]
        sought = [v for v in sought if v.strip() and v.casefold() in run.question.casefold()]
        return quoted_answer(run.question, list(evidence.passages.values()), evidence.conflicts, sought=sought)

    def _answer(self, run: _Run, text: str) -> Answer:
        if (run.evidence.insufficient and not self._grounded(run)) or says_evidence_lacks_it(text):
            return self._abstain(run, text)
        return self._finish(run, text, outcome="answered")

    def _abstain(self, run: _Run, text: str) -> Answer:
        if text.strip().endswith("?") and not run.evidence.insufficient:
            run.tracer.record(EventKind.CLARIFYING_QUESTION, "Clarifying question", detail={"text": text[:300]})
            return self._finish(run, text.strip(), outcome="clarify", abstained=True)
        run.tracer.record(EventKind.ABSTAINED, "Abstain: not enough evidence",
                          detail={"searched": run.evidence.searched, "model_text": text[:300]})
        return self._finish(run, run.evidence.abstention(run.outcomes, run.question), outcome="abstained",
                            abstained=True)

    def _pause(self, run: _Run, pending: list[CallOutcome]) -> Answer:
        lines = [f"Held for approval: {o.call.name}({json.dumps(o.call.arguments, sort_keys=True)}) as proposal "
                 f"{o.proposal_id}. A person who may approve it decides (the approvals page, or `toolcrib approve "
                 f"{o.proposal_id}`); then this run {run.run_id} resumes (the page, POST /v1/runs/{run.run_id}/resume, "
                 f"or `toolcrib ask --resume {run.run_id}`)." for o in pending]
        run.paused = PausedRun(run.run_id, run.principal.user_id, run.question, run.mode, run.messages,
                               [(o.call, o.proposal_id or "") for o in pending], run.cctx.grounding.sources,
                               list(run.cctx.flags))
        return self._finish(run, "\n".join(lines), outcome="paused")

    def _name_identifiers(self, run: _Run, text: str) -> str:
        """A model's answer that names a record a tool found ("The Art of Electronics") but not its
        identifier gets it (``records.with_identifiers``), recorded as code's."""
        id_fields = {name for tool in self.gate.registry for name in tool.identifiers}
        text, added = with_identifiers(text, [o.payload.get("data") for o in run.outcomes if o.ok], id_fields)
        if added:
            run.tracer.record(EventKind.EVIDENCE_RULE, "Named what was found by its identifier", detail={
                "reason": "the answer names a record a tool returned without its identifier", "added": added})
        return text

    def _finish(self, run: _Run, text: str, *, outcome: Outcome, abstained: bool = False,
                code_wrote: bool = False) -> Answer:
        citations: list[Citation] = []
        flags: list[str] = []
        if outcome == "answered" and not code_wrote:
            text = self._name_identifiers(run, text)
        if not abstained:
            # the claim check is for what is written from the evidence; a paused or stopped run's text,
            # a refusal or a quote (the evidence's own words) is code's (``code_wrote``)
            review = run.evidence.review(text, run.question if outcome == "answered" else None,
                                         check_claims=not code_wrote)
            text, citations, flags = review.text, review.citations, review.flags
            run.tracer.record(EventKind.CITATION_CHECK, "Check citations", citations=[c.id for c in citations],
                              status="ok" if not review.removed else "removed",
                              detail={"removed": review.removed, "flags": flags})
            if review.nothing_supported:  # nothing of the answer stood: that is an abstention
                outcome, abstained = "abstained", True
                run.tracer.record(EventKind.ABSTAINED, "Abstain: the evidence supports nothing of the answer",
                                  detail={"searched": run.evidence.searched})
        if outcome != "paused" and (unavailable := unavailable_asked(
                run.question, self.gate.registry, self.gate.offer(run.principal).tools)):
            text = f"{unavailable_note(unavailable)}\n{text}"
            run.tracer.record(EventKind.EVIDENCE_RULE, "Said what the user may not use", detail={
                "reason": "the request names tools that change something and are not available to this user",
                "tools": [t.name for t in unavailable]})
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
                                   for o in run.outcomes if o.status == "approval_required" and o.proposal_id]
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

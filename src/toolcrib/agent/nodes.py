"""The kinds of place a run's graph is made of: each acts on the run and says which way it went.

A node never says where the run goes next: it returns an ``Edge``, and the graph's table
(``pipeline.GRAPH``) maps the place and the edge to the next place. Which code steps a place runs is in
that table too (``Place.steps``); a node runs them where its work needs them.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from toolcrib.agent import prompts
from toolcrib.agent.answer import Answer, Citation, Finish
from toolcrib.agent.calls import Calls
from toolcrib.agent.evidence import says_evidence_lacks_it
from toolcrib.agent.ran import described_call, what_ran
from toolcrib.agent.runs import PausedRun, RunRecord, RunStore
from toolcrib.agent.state import Complete, RunnerSettings, RunState
from toolcrib.agent.stepids import StepId
from toolcrib.agent.steps import Steps
from toolcrib.agent.strategy import AnswerStrategy
from toolcrib.errors import LimitExceeded
from toolcrib.models.base import Completion, Message, ToolCall, ToolSpec
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect
from toolcrib.trace.events import EventKind


class Edge(StrEnum):
    """Which way a node went: the table maps a place and an edge to the next place."""

    NEXT = "next"  # the usual way on
    ENDED = "ended"  # a step (or the strategy) ended the run: its ``Finish`` is the draft
    CALLS = "calls"  # the model proposed calls
    TEXT = "text"  # the model wrote text
    YES = "yes"  # the node's question (its docstring) is answered yes
    NO = "no"
    HELD = "held"  # a call waits for a person's approval
    SEARCHED = "searched"  # code searched the documents just now
    REMINDED = "reminded"  # the model is asked once more, reminded of the evidence rule
    SPENT = "spent"  # the reminder was given before (or is off)
    LIMIT = "limit"  # out of rounds with evidence in hand
    EVIDENCE = "evidence"  # the first evidence is in: code adds what the calls left out
    SKIP = "skip"
    UNFIT = "unfit"  # every call the model chose was set aside as not fitting the request
    REPEATED = "repeated"  # every call the model chose was made before
    LACKING = "lacking"  # the answer says the evidence lacks it
    END = "end"  # the run is recorded: nothing follows


@dataclass
class Flow:
    """What the nodes work with: the run's calls, its steps, the model and the answer strategy."""

    calls: Calls
    steps: Steps
    complete: Complete
    strategy: AnswerStrategy
    settings: RunnerSettings
    runs: RunStore | None = None


@dataclass(frozen=True)
class Place:
    """One row of the graph's table: the node that acts, the steps it runs, and where each edge leads."""

    node: Node
    steps: tuple[StepId, ...] = ()
    edges: dict[Edge, str] = field(default_factory=dict)


class Node(ABC):
    """A kind of place: acts on the run and returns the edge it went."""

    @abstractmethod
    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        """Act on ``run``; which way it went."""

    def __repr__(self) -> str:
        return type(self).__name__


def _held(outcomes: Sequence[CallOutcome]) -> list[CallOutcome]:
    """The calls of ``outcomes`` held for a person's approval, each with its proposal."""
    return [o for o in outcomes if o.status == "approval_required" and o.proposal_id]


def _same_call(call: ToolCall, calls: Sequence[ToolCall]) -> bool:
    """Whether ``calls`` holds ``call`` (the same tool with the same arguments)."""
    return any(c.name == call.name and c.arguments == call.arguments for c in calls)


# -- steps and checks ------------------------------------------------------------------------------


class RunSteps(Node):
    """The place's steps, in order, until one ends the run."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        run.draft = await flow.steps.first(place.steps, run, flow.calls)
        return Edge.NEXT if run.draft is None else Edge.ENDED


class Request(RunSteps):
    """Offer the tools, then the place's steps (before the model is asked)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        _offer(run, flow)
        return await super().__call__(run, place, flow)


class Search(Node):
    """The place's steps (a document search when nothing found anything): SEARCHED when code searched now."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        searched = run.code_searched
        await flow.steps.first(place.steps, run, flow.calls)
        return Edge.SEARCHED if run.code_searched and not searched else Edge.NEXT


class Supported(Node):
    """Whether an answer may be written: the run found evidence, or the workspace asks for none."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        return Edge.YES if run.grounded or not flow.settings.require_evidence else Edge.NO


class Held(Node):
    """Whether a call waits for a person's approval."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        return Edge.HELD if _held(run.outcomes) else Edge.NEXT


class OnlyLookups(Node):
    """Whether the model's decision was lookups only (code then adds the ones it left out)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        return Edge.YES if all(o.effect == Effect.READ.value for o in run.decided) else Edge.NO


class Found(Node):
    """Whether any call found something."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        return Edge.YES if any(o.ok for o in run.outcomes) else Edge.NO


class Once(Node):
    """Loop mode: code adds what the model's calls left out once a run, and never around a change."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        if run.completed:
            return Edge.SKIP
        run.completed = True
        run.made_before = run.calls
        # by the tool's own effect: a lookup the gate refused before resolving it (an identifier from
        # nowhere) has none on its outcome, and is no change
        return Edge.SKIP if any(flow.calls.changes(o.call) for o in run.made()) else Edge.NEXT


class Added(Node):
    """Whether code's additions (since ``Once``) made any call."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        return Edge.YES if run.calls > run.made_before else Edge.NO


class Aided(Node):
    """Whether a small model's answer is written from the evidence brief (the run holds evidence)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        return Edge.YES if run.grounded and flow.strategy.aided else Edge.NO


# -- the model's decisions --------------------------------------------------------------------------


def _offer(run: RunState, flow: Flow) -> list[ToolSpec] | None:
    """Offer the tools, unless they were offered since the run last made a call (the offer is the same);
    the specs offered, None for none."""
    if run.offered_at != run.calls or run.cctx.offer is None:
        run.specs = flow.calls.offer(run)
        run.offered_at = run.calls
    return run.specs or None


def _decided(run: RunState, reply: Completion) -> Edge:
    run.reply = reply
    run.model_text = "" if reply.tool_calls else reply.text
    return Edge.CALLS if reply.tool_calls else Edge.TEXT


class Decide(Node):
    """Single mode: the model's one decision (after the evidence reminder, asked with a call required)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        specs = _offer(run, flow)
        if run.reminded:
            reply = await flow.complete(run, specs, decided_by="code", title="Re-ask with evidence reminder",
                                  tool_choice="required")
        else:
            reply = await flow.complete(run, specs, decided_by="model", title="Model decides")
        return _decided(run, reply)


class Round(Node):
    """Loop mode: the run's limits before a round. LIMIT: out of rounds with evidence in hand (answered
    from it); EVIDENCE: the first evidence is in; any other limit ends the run as a limit."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        run.model_text = ""
        limits = flow.settings.limits
        stop = _limit_reached(run, flow.settings)
        if stop and run.grounded and run.rounds >= limits.rounds:
            # out of rounds with evidence in hand: one final answer from it, asked by code, rather than
            # "I stopped" (a small model reads on past what it needs)
            run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached: answer from what was found",
                              detail={"reason": stop}, rule=StepId.ROUND_LIMIT_ANSWER)
            return Edge.LIMIT
        if stop:
            raise LimitExceeded(stop)  # ends the run with what it found so far (``Runner``)
        return Edge.EVIDENCE if run.grounded and not run.completed else Edge.NEXT


class RoundDecide(Node):
    """Loop mode: the model decides a round; grounded, a small model's answer is written later from the
    evidence brief, so here it only decides."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        specs = _offer(run, flow)
        run.rounds += 1
        reply = await flow.complete(run, specs, decided_by="model", title=f"Model decides (round {run.rounds})",
                              messages=flow.strategy.decision_messages(run),
                              decision_only=run.grounded and flow.strategy.aided)
        return _decided(run, reply)


class Remind(Node):
    """The evidence rule: an answer with nothing found behind it is not accepted; asked once more."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        if run.reminded or not flow.steps.enabled(StepId.EVIDENCE_REMINDER):
            return Edge.SPENT
        run.reminded = True
        run.tracer.record(EventKind.EVIDENCE_RULE, "Evidence rule fired", rule=StepId.EVIDENCE_REMINDER, detail={
            "reason": "a direct answer with no tool result or passage behind it is not accepted; asking once more"})
        run.messages += [Message("assistant", run.model_text), Message("user", prompts.EVIDENCE_REMINDER)]
        return Edge.REMINDED


# -- calls ------------------------------------------------------------------------------------------


async def _fitting(run: RunState, place: Place, flow: Flow, calls: list[ToolCall]) -> list[ToolCall]:
    """``calls`` less those the place's steps set aside (each recorded as dropped)."""
    run.proposed = list(calls)
    await flow.steps.first(place.steps, run, flow.calls)
    return run.proposed


class Proposed(Node):
    """Single mode: the calls made of the model's one decision. A change (WRITE/ACTUATE) runs alone, as
    the decision's first call; READ calls proposed together all run, up to the run's tool-call budget,
    once each; the place's steps set aside those that do not fit."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        assert run.reply is not None
        proposed = run.reply.tool_calls
        changes = flow.calls.changes
        calls: list[ToolCall] = []
        if changes(proposed[0]):
            run.proposed = await _fitting(run, place, flow, [proposed[0]])
            run.set_aside = [(c, "single-call mode runs a change alone, as the decision's only call")
                             for c in proposed[1:]]
            return Edge.NEXT
        for call in proposed:
            if changes(call):
                run.set_aside.append((call, "single-call mode runs a change alone, never beside lookups"))
            elif _same_call(call, calls):
                run.set_aside.append((call, "the same call was proposed twice"))
            elif len(calls) == flow.settings.limits.tool_calls:
                run.set_aside.append((call, f"over the run's budget of {len(calls)} tool calls (limits.tool_calls)"))
            else:
                calls.append(call)
        run.proposed = await _fitting(run, place, flow, calls)
        return Edge.NEXT


class RoundProposed(Node):
    """Loop mode: the model's calls less those the run made before and those the place's steps set aside,
    within the run's tool-call budget."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        assert run.reply is not None
        made = [o.call for o in run.made()]
        fresh: list[ToolCall] = []
        for call in run.reply.tool_calls:
            if _same_call(call, made):
                flow.calls.drop(run, call, "the run made this call already; its result is above")
            else:
                fresh.append(call)
        if fresh and not (fresh := await _fitting(run, place, flow, fresh)):  # nothing it chose fits the request
            return Edge.UNFIT
        if not fresh:  # a small model that repeats itself would do so to the round limit: answer now
            run.tracer.record(EventKind.EVIDENCE_RULE, "Asked for the answer: the model repeated a call",
                              detail={"reason": "every call it proposed was made before; nothing new to read"},
                              rule=StepId.REPEATED_CALL)
            return Edge.REPEATED
        limit = flow.settings.limits.tool_calls
        budget = max(0, limit - run.calls)
        for extra in fresh[budget:]:
            flow.calls.drop(run, extra, f"over the run's budget of {limit} tool calls (limits.tool_calls)")
        run.proposed = fresh[:budget]
        return Edge.NEXT


class Call(Node):
    """Run the proposed calls through the gate; then record those set aside, never silently lost."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        assert run.reply is not None
        run.decided = await flow.calls.run_model_calls(run, run.reply.text, run.proposed) if run.proposed else []
        for extra, reason in run.set_aside:
            flow.calls.drop(run, extra, reason)
        run.set_aside = []
        return Edge.NEXT


class Resume(Node):
    """A resumed run: the approved calls, exactly as proposed, and what became of them in code's words
    (``run.ran``). Where the place has an ENDED edge (single mode: its one decision was these calls),
    that account is the answer; otherwise the run goes on, and the answer starts with it."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        outcomes = [await flow.calls.gate.run(call, run.cctx, proposal_id=pid) for call, pid in run.approved]
        flow.calls.observe(run, outcomes)
        if _held(outcomes):
            return Edge.HELD
        run.ran = what_ran(outcomes)
        if run.ran and Edge.ENDED in place.edges:
            run.draft = Finish(run.ran, code_wrote=True)
            return Edge.ENDED
        return Edge.NEXT


# -- the answer -------------------------------------------------------------------------------------


class Write(Node):
    """The answer strategy writes the answer (TEXT: the model's, to be checked), or ends the run."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        if run.cctx.offer is None:  # a resumed run: the native conversation's tools are offered again
            flow.calls.offer(run)
        done = await flow.strategy.answer(run, flow.complete)
        if done.outcome == "answered" and not done.code_wrote:
            run.model_text = done.text
            return Edge.TEXT
        run.draft = done
        return Edge.ENDED


class Respond(Node):
    """The model's answer, unless it says the evidence lacks what was asked (LACKING)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        text = run.model_text
        if (run.evidence.insufficient and not run.grounded) or says_evidence_lacks_it(text):
            return Edge.LACKING
        run.draft = Finish(text)
        return Edge.NEXT


class Abstain(Node):
    """Not enough evidence: the abstention (or the model's clarifying question)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        text = run.model_text
        if text.strip().endswith("?") and not run.evidence.insufficient:
            run.tracer.record(EventKind.CLARIFYING_QUESTION, "Clarifying question", detail={"text": text[:300]})
            run.draft = Finish(text.strip(), outcome="clarify", abstained=True)
        else:
            run.tracer.record(EventKind.ABSTAINED, "Abstain: not enough evidence",
                              detail={"searched": run.evidence.searched, "model_text": text[:300]})
            said = run.evidence.abstention(run.outcomes, run.request, flow.calls.gate.registry.identifier_names())
            run.draft = Finish(said, outcome="abstained", abstained=True)
        return Edge.NEXT


class Pause(Node):
    """Calls held for approval: the run pauses, saying which proposals wait and how it resumes."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        pending = _held(run.outcomes)
        lines = [f"Held for approval: {described_call(o.call.name, o.call.arguments)} as proposal "
                 f"{o.proposal_id}. A person who may approve it decides (the approvals page, or `toolcrib approve "
                 f"{o.proposal_id}`); then this run {run.run_id} resumes (the page, POST /v1/runs/{run.run_id}/resume, "
                 f"or `toolcrib ask --resume {run.run_id}`)." for o in pending]
        run.paused = PausedRun(run.run_id, run.principal.user_id, run.question, run.mode, run.messages,
                               [(o.call, o.proposal_id or "") for o in pending], run.cctx.grounding.sources,
                               list(run.cctx.flags))
        run.draft = Finish("\n".join(lines), outcome="paused")
        return Edge.NEXT


class Rewrite(Node):
    """The place's steps rewrite the draft answer in turn."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        assert run.draft is not None
        run.draft = await flow.steps.rewrite(place.steps, run, flow.calls, run.draft)
        return Edge.NEXT


class Review(Node):
    """The citation review and the claim check, for what is written from the evidence; a paused or
    stopped run's text, a refusal or a quote (the evidence's own words) is code's (``code_wrote``)."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        draft = run.draft
        assert draft is not None
        run.citations, run.review_flags = [], []
        if draft.abstained:
            return Edge.NEXT
        review = run.evidence.review(draft.text, run.request if draft.outcome == "answered" else None,
                                     check_claims=not draft.code_wrote, values=run.values, links=run.links)
        run.citations, run.review_flags = review.citations, review.flags
        run.tracer.record(EventKind.CITATION_CHECK, "Check citations", citations=[c.id for c in review.citations],
                          status="ok" if not review.removed else "removed",
                          detail={"removed": review.removed, "flags": review.flags})
        outcome, abstained = draft.outcome, False
        if review.nothing_supported:  # nothing of the answer stood: that is an abstention
            outcome, abstained = "abstained", True
            run.tracer.record(EventKind.ABSTAINED, "Abstain: the evidence supports nothing of the answer",
                              detail={"searched": run.evidence.searched})
        run.draft = Finish(review.text, outcome, draft.code_wrote, abstained)
        return Edge.NEXT


class Record(Node):
    """The run's answer: recorded in its trace, its audit made durable, its record kept."""

    async def __call__(self, run: RunState, place: Place, flow: Flow) -> Edge:
        draft = run.draft
        assert draft is not None
        citations: list[Citation] = run.citations
        outcomes = run.outcomes
        answer = Answer(
            text=draft.text, citations=citations, abstained=draft.abstained, outcome=draft.outcome,
            executed=[o.summary() for o in outcomes if o.status in ("ok", "outcome_unknown", "error")],
            refused=[o.summary() for o in outcomes if o.status in ("refused", "dropped")],
            pending=[o.summary() for o in outcomes if o.status == "approval_required"],
            flags=run.review_flags, trace_id=run.tracer.trace_id, run_id=run.run_id,
            model_decided_steps=run.model_decisions, tokens_in=run.tokens_in, tokens_out=run.tokens_out,
            ms=round((time.perf_counter() - run.started) * 1000, 1))
        detail: dict[str, Any] = {"text": draft.text[:500], "flags": run.review_flags, "path": list(run.path)}
        if draft.outcome == "paused":
            detail["proposals"] = [{"proposal_id": o.proposal_id, "tool": o.call.name, "call_id": o.call.id}
                                   for o in _held(outcomes)]
        run.tracer.record(EventKind.RUN_FINISHED, f"Final answer ({draft.outcome})", status=draft.outcome,
                          citations=[c.id for c in citations], ms=answer.ms, detail=detail)
        audit, runs = flow.calls.gate.audit, flow.runs

        def keep() -> None:
            run.tracer.close()
            if audit is not None:  # the run's READ records are durable before its Answer
                audit.flush()
            if runs is not None:
                runs.record(RunRecord(run.run_id, run.principal.user_id, run.principal.tenant, run.question, run.mode,
                                      draft.outcome, answer.to_dict(), [e.to_dict() for e in run.tracer.events],
                                      [run.tracer.trace_id], run.paused))

        if audit is None and runs is None:  # nothing that waits on a disk or a database: no thread hop
            keep()
        else:  # off the event loop: a commit may wait on the disk or on a lock another process holds
            await asyncio.to_thread(keep)
        run.answer = answer
        return Edge.END


def _limit_reached(run: RunState, settings: RunnerSettings) -> str:
    """Which of the run's limits it reached, said for people; empty when none."""
    limits = settings.limits
    if run.rounds >= limits.rounds:
        return f"the run reached its limit of {limits.rounds} model rounds (limits.rounds)"
    if run.calls >= limits.tool_calls:
        return f"the run reached its limit of {limits.tool_calls} tool calls (limits.tool_calls)"
    if time.perf_counter() - run.started > limits.wall_s:
        return f"the run exceeded its wall-time limit of {limits.wall_s:g}s (limits.wall_s)"
    if run.tokens_in + run.tokens_out > limits.tokens:
        return f"the run used more than {limits.tokens} tokens (limits.tokens)"
    return ""

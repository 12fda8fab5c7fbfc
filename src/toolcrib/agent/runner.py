"""The Runner: single-call mode (level 4) and a bounded loop mode (ReAct)."""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolcrib.agent import prompts
from toolcrib.agent.answer import Answer, Citation
from toolcrib.agent.runs import PausedRun, RunStore
from toolcrib.errors import ConfigError, LimitExceeded, NotPermitted
from toolcrib.models.base import Completion, Message, Model, ToolCall
from toolcrib.policy.principal import Principal
from toolcrib.retrieval.citations import check_citations
from toolcrib.tools.gate import CallContext, Gate
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.registry import tool_specs
from toolcrib.tools.result import CallOutcome
from toolcrib.trace.tracer import Tracer

Mode = Literal["single", "loop"]


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
    offer_only_groundable: bool = True  # withhold tools whose required identifier the run has not seen
    search_when_nothing_found: bool = True  # code searches the documents once if no tool found anything


@dataclass
class _Evidence:
    """What this run actually retrieved, by citation id."""

    items: dict[str, Citation] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    found_nothing: dict[str, str] = field(default_factory=dict)  # citation id -> what found nothing
    searched: list[str] = field(default_factory=list)
    insufficient: bool = False
    conflicts: list[Any] = field(default_factory=list)
    _counter: int = 0

    def add(self, outcome: CallOutcome) -> None:
        data = outcome.payload.get("data")
        if isinstance(data, dict) and isinstance(data.get("passages"), list):
            if data.get("searched"):
                self.searched.append(str(data["searched"]))
            self.conflicts.extend(data.get("conflicts") or [])
            if data.get("sufficient") is False:
                self.insufficient = True
                return
            for p in data["passages"]:
                if isinstance(p, dict) and p.get("citation"):
                    cid = str(p["citation"])
                    self.items[cid] = Citation(cid, "passage", _passage_source(p), str(p.get("text", ""))[:200])
                    self.texts[cid] = str(p.get("text", ""))
            return
        self._counter += 1
        cid = f"{outcome.call.name}#{self._counter}"
        self.items[cid] = Citation(cid, "tool", outcome.call.name, json.dumps(data, ensure_ascii=False)[:200])
        if outcome.found_nothing:
            args = ", ".join(f"{k}={v}" for k, v in outcome.call.arguments.items())
            self.found_nothing[cid] = f"{outcome.call.name} found nothing for {args}"

    @property
    def useful(self) -> bool:
        """Something was found: a passage, or a tool result other than "nothing matched"."""
        return any(cid not in self.found_nothing for cid in self.items)


def _passage_source(p: Mapping[str, Any]) -> str:
    where = ", ".join(str(x) for x in (p.get("section"), f"p. {p['page']}" if p.get("page") else None) if x)
    return f"{p.get('title') or p.get('citation')}" + (f" — {where}" if where else "")


@dataclass
class _Run:
    """Mutable state of one run."""

    question: str
    principal: Principal
    tracer: Tracer
    cctx: CallContext
    messages: list[Message]
    run_id: str
    started: float = field(default_factory=time.perf_counter)
    evidence: _Evidence = field(default_factory=_Evidence)
    outcomes: list[CallOutcome] = field(default_factory=list)
    rounds: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model_decisions: int = 0
    reminded: bool = False
    code_searched: bool = False


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

    def ask(self, question: str, principal: Principal, *, mode: Mode | None = None) -> Answer:
        return asyncio.run(self.aask(question, principal, mode=mode))

    def resume(self, run_id: str, principal: Principal) -> Answer:
        return asyncio.run(self.aresume(run_id, principal))

    async def aask(self, question: str, principal: Principal, *, mode: Mode | None = None) -> Answer:
        mode = mode or self.settings.mode
        run = self._start(question, principal, mode)
        return await self._bounded(run, self._single(run) if mode == "single" else self._loop(run))

    async def aresume(self, run_id: str, principal: Principal) -> Answer:
        """Continue a run paused for approval: run the approved call(s) exactly as proposed."""
        if self.runs is None:
            raise ConfigError("this runner has no run store (Runner(runs=RunStore(...))), so it cannot resume runs")
        paused = self.runs.load(run_id)
        if paused.user_id != principal.user_id:
            raise NotPermitted(f"run {run_id} belongs to another user")
        tracer = self.tracer_factory()
        run = _Run(paused.question, principal, tracer,
                   CallContext(principal, tracer, Grounding(paused.question, *paused.grounding), self.resources, run_id),
                   paused.messages, run_id)
        tracer.record(kind="human", decided_by="human", title="Resume paused run", detail={"run_id": run_id})
        return await self._bounded(run, self._continue(run, paused))

    async def _continue(self, run: _Run, paused: PausedRun) -> Answer:
        outcomes = [await self.gate.run(call, run.cctx, proposal_id=pid) for call, pid in paused.pending]
        self._observe(run, outcomes)
        pending = [o for o in outcomes if o.status == "approval_required"]
        if pending:
            return self._pause(run, pending, "loop" if paused.mode == "loop" else "single")
        if paused.mode == "single":
            return await self._finish_with_final_ask(run)
        return await self._loop(run)

    async def _bounded(self, run: _Run, steps: Coroutine[Any, Any, Answer]) -> Answer:
        """Run ``steps``; a limit the model hits (its context window) ends the run like any other limit."""
        try:
            return await steps
        except LimitExceeded as exc:
            run.tracer.record(kind="code", decided_by="code", title="Limit reached", detail=str(exc))
            return self._finish(run, f"I stopped before finishing: {exc}. Here is what I found so far.",
                                outcome="limit")

    # -- modes ------------------------------------------------------------------------------------

    def _start(self, question: str, principal: Principal, mode: Mode) -> _Run:
        tracer = self.tracer_factory()
        run_id = uuid.uuid4().hex[:12]
        cctx = CallContext(principal, tracer, Grounding(question), self.resources, run_id)
        extra = "\n".join(p for p in (self.settings.system_prompt, prompts.SINGLE_CALL if mode == "single" else "") if p)
        system = prompts.SYSTEM.format(name=self.settings.name, example_id="lookup_part#1", extra=extra)
        tracer.record(kind="code", decided_by="code", title=f"Start run ({mode} mode)",
                      detail={"question": question, "user": principal.user_id, "run_id": run_id})
        return _Run(question, principal, tracer, cctx,
                    [Message("system", system), Message("user", question)], run_id)

    def _offered(self, run: _Run) -> list[Any]:
        tools = self.gate.registry.offered(run.principal, self.gate.policy)
        withheld: dict[str, str] = {}
        if self.settings.offer_only_groundable:
            grounding = run.cctx.grounding
            withheld = {t.name: f"needs {' or '.join(t.identifiers)}, which the request and tool results do not name"
                        for t in tools if not t.reachable(grounding)}
            tools = [t for t in tools if t.name not in withheld]
        detail: Any = [t.name for t in tools]
        if withheld:
            detail = {"offered": detail, "withheld": withheld}
        run.tracer.record(kind="code", decided_by="code", title="Offer tools", detail=detail)
        return tools

    async def _single(self, run: _Run) -> Answer:
        specs = tool_specs(self._offered(run))
        first = self._complete(run, specs, decided_by="model", title="Model decides")
        if not first.tool_calls:
            if self._grounded(run) or not self.settings.require_evidence:
                return self._answer(run, first.text)
            run.tracer.record(kind="policy", decided_by="code", title="Evidence rule fired",
                              detail="a direct answer with no tool result or passage behind it is not accepted")
            run.messages += [Message("assistant", first.text), Message("user", prompts.EVIDENCE_REMINDER)]
            first = self._complete(run, specs, decided_by="code", title="Re-ask with evidence reminder",
                                   tool_choice="required")
            if not first.tool_calls:
                return await self._finish_with_final_ask(run, model_text=first.text)
        call, dropped = first.tool_calls[0], first.tool_calls[1:]
        for extra in dropped:  # level 4 runs one call; the rest are recorded, never silently lost
            run.tracer.record(kind="code", decided_by="code", title=f"Dropped extra call: {extra.name}",
                              detail={"arguments": extra.arguments, "reason": "single-call mode runs only the first"})
        run.messages.append(Message("assistant", first.text, tool_calls=(call,)))
        outcomes = [await self.gate.run(call, run.cctx)]
        self._observe(run, outcomes)
        for extra in dropped:
            run.outcomes.append(CallOutcome(extra, "dropped", {"ok": False, "error": {
                "code": "dropped", "message": "single-call mode runs only the first proposed call"}}))
        pending = [o for o in outcomes if o.status == "approval_required" and o.proposal_id]
        if pending:
            return self._pause(run, pending, "single")
        return await self._finish_with_final_ask(run)

    async def _loop(self, run: _Run) -> Answer:
        limits = self.settings.limits
        while True:
            stop = self._limit_reached(run)
            if stop:
                raise LimitExceeded(stop)  # ends the run with what it found so far (see _bounded)
            specs = tool_specs(self._offered(run))
            run.rounds += 1
            reply = self._complete(run, specs, decided_by="model", title=f"Model decides (round {run.rounds})")
            if not reply.tool_calls:
                if self._grounded(run) or not self.settings.require_evidence:
                    return self._answer(run, reply.text)
                if await self._search_documents(run):
                    continue  # the model answers again, now with the passages
                if run.reminded:
                    return self._abstain(run, reply.text)
                run.reminded = True
                run.tracer.record(kind="policy", decided_by="code", title="Evidence rule fired",
                                  detail="answer rested on no tool result or passage; asking once more")
                run.messages += [Message("assistant", reply.text), Message("user", prompts.EVIDENCE_REMINDER)]
                continue
            budget = max(0, limits.tool_calls - run.calls)
            calls, over = list(reply.tool_calls[:budget]), reply.tool_calls[budget:]
            for extra in over:
                run.tracer.record(kind="code", decided_by="code", title=f"Dropped call over budget: {extra.name}",
                                  detail={"arguments": extra.arguments})
            run.messages.append(Message("assistant", reply.text, tool_calls=tuple(calls)))
            outcomes = await self.gate.run_many(calls, run.cctx)
            self._observe(run, outcomes)
            pending = [o for o in outcomes if o.status == "approval_required" and o.proposal_id]
            if pending:
                return self._pause(run, pending, "loop")

    # -- steps ------------------------------------------------------------------------------------

    def _complete(self, run: _Run, specs: list[Any] | None, *, decided_by: Literal["model", "code"], title: str,
                  tool_choice: Literal["auto", "none", "required"] = "auto") -> Completion:
        reply = self.model.complete(run.messages, specs or None, tool_choice=tool_choice,
                                    max_tokens=self.settings.max_tokens)
        run.tokens_in += reply.tokens_in
        run.tokens_out += reply.tokens_out
        if decided_by == "model":
            run.model_decisions += 1
        detail: Any = [c.to_dict() for c in reply.tool_calls] if reply.tool_calls else reply.text[:300]
        what = ", ".join(c.name for c in reply.tool_calls) if reply.tool_calls else "answers directly"
        run.tracer.record(kind="model", decided_by=decided_by, title=f"{title}: {what}", detail=detail,
                          tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, ms=reply.ms)
        return reply

    def _observe(self, run: _Run, outcomes: list[CallOutcome]) -> None:
        for outcome in outcomes:
            run.calls += 1
            run.outcomes.append(outcome)
            if outcome.ok:
                run.evidence.add(outcome)
            run.messages.append(Message("tool", outcome.for_model(), tool_call_id=outcome.call.id,
                                        name=outcome.call.name))

    def _grounded(self, run: _Run) -> bool:
        return run.evidence.useful

    async def _search_documents(self, run: _Run) -> bool:
        """When the model's choices found nothing, code searches the documents once with the question
        (the small model's commonest mistake is a lookup tool for a question about a document).
        Returns whether it searched."""
        if (not self.settings.search_when_nothing_found or run.code_searched or run.evidence.useful
                or run.evidence.searched):
            return False
        search = next((t for t in self.gate.registry.offered(run.principal, self.gate.policy)
                       if "retrieval" in t.tags), None)
        if search is None:
            return False
        run.code_searched = True
        call = ToolCall(f"code_{run.calls + 1}", search.name, {"query": run.question})
        run.tracer.record(kind="code", decided_by="code", title=f"Search the documents: {search.name}",
                          detail={"query": run.question, "reason": "no tool call so far found anything"})
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
        ids = ", ".join(cid for cid in run.evidence.items if cid not in run.evidence.found_nothing) or "none"
        versions = " ".join(_describe_conflict(c) for c in run.evidence.conflicts)
        ask = prompts.FINAL.format(question=run.question, ids=ids)
        if versions:
            ask += "\n" + prompts.VERSIONS.format(versions=versions)
        run.messages.append(Message("user", ask))
        final = self._complete(run, None, decided_by="code", title="Ask for a final answer")
        return self._answer(run, final.text)

    def _answer(self, run: _Run, text: str) -> Answer:
        if run.evidence.insufficient and not self._grounded(run):
            return self._abstain(run, text)
        return self._finish(run, text, outcome="answered")

    def _abstain(self, run: _Run, text: str) -> Answer:
        if text.strip().endswith("?") and not run.evidence.insufficient:
            run.tracer.record(kind="code", decided_by="code", title="Clarifying question", detail=text[:300])
            return self._finish(run, text.strip(), outcome="clarify", abstained=True)
        searched = "; ".join(f'"{q}"' for q in run.evidence.searched)
        searched = f"I searched the documents for {searched}. " if searched else ""
        failures = [f"{o.call.name} ({o.payload['error']['code']})" for o in run.outcomes
                    if o.status in ("error", "outcome_unknown")]
        failed = f"These lookups could not be completed: {', '.join(failures)}. " if failures else ""
        if run.evidence.found_nothing:
            failed += f"{'; '.join(run.evidence.found_nothing.values())}. "
        run.tracer.record(kind="code", decided_by="code", title="Abstain: not enough evidence",
                          detail={"searched": run.evidence.searched, "model_text": text[:300]})
        return self._finish(run, prompts.NO_EVIDENCE_ANSWER.format(failed=failed, searched=searched), outcome="abstained",
                            abstained=True)

    def _pause(self, run: _Run, pending: list[CallOutcome], mode: Mode) -> Answer:
        lines = [f"Held for approval: {o.call.name}({json.dumps(o.call.arguments, sort_keys=True)}) as proposal "
                 f"{o.proposal_id}. An approver can review it with `toolcrib approve {o.proposal_id}`; then resume "
                 f"this run with `toolcrib ask --resume {run.run_id}`." for o in pending]
        if self.runs is not None:
            self.runs.save(PausedRun(run.run_id, run.principal.user_id, run.question, mode, run.messages,
                                     [(o.call, o.proposal_id or "") for o in pending],
                                     [str(o.payload.get("data", "")) for o in run.outcomes if o.ok]))
        run.tracer.record(kind="code", decided_by="code", title="Run paused for approval",
                          detail=[o.proposal_id for o in pending])
        return self._finish(run, "\n".join(lines), outcome="paused")

    def _finish(self, run: _Run, text: str, *, outcome: Any, abstained: bool = False) -> Answer:
        citations, flags, text = self._check_citations(run, text, abstained)
        answer = Answer(
            text=text, citations=citations, abstained=abstained, outcome=outcome,
            executed=[o.summary() for o in run.outcomes if o.status in ("ok", "outcome_unknown", "error")],
            refused=[o.summary() for o in run.outcomes if o.status in ("refused", "dropped")],
            pending=[o.summary() for o in run.outcomes if o.status == "approval_required"],
            flags=flags, trace_id=run.tracer.trace_id, run_id=run.run_id,
            model_decided_steps=run.model_decisions, tokens_in=run.tokens_in, tokens_out=run.tokens_out,
            ms=round((time.perf_counter() - run.started) * 1000, 1))
        run.tracer.record(kind="code", decided_by="code", title=f"Final answer ({outcome})",
                          detail={"text": text[:500], "citations": [c.id for c in citations], "flags": flags})
        run.tracer.close()
        return answer

    def _check_citations(self, run: _Run, text: str, abstained: bool) -> tuple[list[Citation], list[str], str]:
        """Keep citations to evidence this run retrieved; drop and flag any other; attach tool evidence."""
        if abstained:
            return [], [], text
        known = run.evidence.items
        check = check_citations(text, known)
        flags = [f"removed citation [{cid}]: not retrieved in this run" for cid in check.invalid]
        for cid in check.invalid:
            text = re.sub(rf"\s*\[{re.escape(cid)}\]", "", text)
        if flags:
            run.tracer.record(kind="policy", decided_by="code", title="Invalid citations removed", detail=flags)
        cited = {cid: known[cid] for cid in check.valid}
        for cid, item in known.items():  # tool results the answer rests on are cited by code
            if item.kind == "tool" and cid not in run.evidence.found_nothing:
                cited.setdefault(cid, item)
        for cid in _conflict_citations(run.evidence.conflicts):  # the note below names every version
            if cid in known:
                cited.setdefault(cid, known[cid])
        passages = {cid: item for cid, item in known.items() if item.kind == "passage"}
        if passages and not any(c.kind == "passage" for c in cited.values()):
            best = _best_support(text, {cid: run.evidence.texts[cid] for cid in passages})
            if best:
                cited[best] = passages[best]
                flags.append(f"the answer cited no passage; [{best}] attached by code as its best support")
            else:
                flags.append("the answer cites no retrieved passage")
        elif passages and check.uncited_claims:
            flags += [f"claim without a valid citation: {claim[:160]}" for claim in check.uncited_claims[:5]]
        notes = [_describe_conflict(c) for c in run.evidence.conflicts]
        flags += [f"conflicting sources: {n}" for n in notes]
        text = text.strip()
        if notes:  # surfaced by code, whatever the model wrote: the reader must see both versions
            text += "\n\nNote: the sources disagree. " + " ".join(notes)
        return list(cited.values()), flags, text


_STOP = frozenset("this that with from have will what which when where there their about into than then them "
                  "they been were your does also only each must shall should would could".split())


def _content_words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.,%-]*[a-z0-9%]|[0-9]", text.lower())
            if (len(w) >= 4 or w[0].isdigit()) and w not in _STOP}


def _best_support(answer: str, passages: Mapping[str, str]) -> str | None:
    """The passage sharing the most content words with the answer, if it shares at least a third."""
    words = _content_words(answer)
    if not words:
        return None
    score, cid = max(((len(words & _content_words(t)) / len(words), cid) for cid, t in passages.items()),
                     default=(0.0, ""))
    return cid if score >= 1 / 3 else None


def _conflict_citations(conflicts: list[Any]) -> list[str]:
    return [str(v["citation"]) for c in conflicts if isinstance(c, dict) and isinstance(c.get("versions"), list)
            for v in c["versions"] if isinstance(v, dict) and v.get("citation")]


def _describe_conflict(conflict: Any) -> str:
    if not isinstance(conflict, dict) or not isinstance(conflict.get("versions"), list):
        return json.dumps(conflict, ensure_ascii=False)[:300]
    versions = "; ".join(
        f"{v.get('title') or v.get('doc_id')} (version {v.get('version') or '?'}, effective "
        f"{v.get('effective_date') or 'undated'}) [{v.get('citation')}]" for v in conflict["versions"])
    return f"{conflict.get('family', 'a document')} exists in several versions: {versions}."

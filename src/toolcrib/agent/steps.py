"""The answer path's code steps: each decision code makes in a run, with a stable id, behind one protocol.

A step runs where the run's graph places it (``pipeline.GRAPH``: which place of which mode) and either does
nothing, does something (a lookup, a search) or ends the run with a ``Finish`` (an answer code wrote, a
refusal, an abstention); at the ``amend`` and ``note`` places it may rewrite the draft answer. Every step that
acts records an event carrying its id (``Event.rule``), so traces, tests and evals select a decision by id,
never by title. ``STEPS`` (``pipeline.py``) holds them all; a workspace turns any of them off by id
(``[workspace] steps_off``).
Steps marked ``aid`` help a small model and run only under the aided answer strategy (``strategy.py``).
The lookup-planning steps are in ``planning.py``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, ClassVar

from toolcrib.agent import prompts
from toolcrib.agent.answer import Finish
from toolcrib.agent.calls import Calls
from toolcrib.agent.capabilities import unavailable_asked, unavailable_note
from toolcrib.agent.evidence import says_evidence_lacks_it
from toolcrib.agent.fit import WRITTEN_INPUT, invented_values
from toolcrib.agent.quotes import quoted_answer
from toolcrib.agent.records import listing_answer, record_answer, table_answer, with_identifiers
from toolcrib.agent.requested import requested_arguments
from toolcrib.agent.smalltalk import small_talk_reply
from toolcrib.agent.state import RunnerSettings, RunState
from toolcrib.agent.stepids import StepId
from toolcrib.errors import InvalidArguments, ModelFacingError
from toolcrib.models.base import ToolCall
from toolcrib.tools.tool import Effect, Tool
from toolcrib.trace.events import EventKind


class Step(ABC):
    """One code decision. ``setting``: the ``RunnerSettings`` flag that turns it on, if one does."""

    id: ClassVar[StepId]
    aid: ClassVar[bool] = False
    setting: ClassVar[str | None] = None

    @abstractmethod
    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        """Act on ``run``; return how it ends (``amend``, ``note``: the new draft), or None."""

    def note(self, run: RunState, title: str, **detail: Any) -> None:
        """Record that this step decided."""
        run.tracer.record(EventKind.EVIDENCE_RULE, title, detail=detail, rule=self.id)


class SmallTalk(Step):
    id, setting = StepId.SMALL_TALK, "small_talk"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if run.request.small_talk is None:  # the offer is computed only for a reply that names it
            return None
        reply = small_talk_reply(run.request, calls.settings.name, calls.usable(run))
        if reply is None:
            return None
        self.note(run, "Small talk: answered by code",
                  reason="a greeting, thanks or goodbye asks nothing to look up: no model call, no tool")
        return Finish(reply, code_wrote=True)


class RefusedRequest(Step):
    """A change the request spells out (``requested_arguments``) with a value the tool cannot take
    ("Set CH3 to 12 V", "Reserve -3 G7"): refused before the model is asked, with the tool's own reason,
    so no proposal that could never run is made or held for a person."""

    id = StepId.REFUSED_REQUEST

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        offer = run.cctx.offer
        for tool in offer.tools if offer is not None else ():
            if tool.effect is Effect.READ or (arguments := requested_arguments(run.request, tool)) is None:
                continue
            try:
                calls.gate.admit(ToolCall(f"code_{run.calls + 1}", tool.name, arguments), run.cctx)
            except InvalidArguments as exc:
                self.note(run, "Refused the values the request gives", tool=tool.name, arguments=arguments,
                          error=exc.to_result().get("error", {}),
                          reason="the request spells out a change whose values the tool cannot take; refused "
                                 "before any model call, and nothing was proposed")
                return Finish(calls.refused(tool.name, arguments, exc.message, exc.code), code_wrote=True)
            except ModelFacingError:
                continue  # not permitted, not grounded ...: the model's path says so
        return None


class SetAside(Step):
    """A step that sets aside each proposed call it has a reason against, before it runs, recorded as
    dropped with that reason: the run goes on as if the model had not chosen it."""

    title: ClassVar[str]

    @abstractmethod
    def why(self, run: RunState, call: ToolCall, tool: Tool | None) -> str | None:
        """Why ``call`` is set aside, or None to keep it."""

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        kept = []
        for call in run.proposed:
            reason = self.why(run, call, calls.tool(call.name))
            if reason is None:
                kept.append(call)
                continue
            self.note(run, f"{self.title}: {call.name}", tool=call.name, reason=reason)
            calls.drop(run, call, reason)
        run.proposed = kept
        return None


class InventedValues(SetAside):
    """A READ call of the model's whose every text value comes from nowhere (``fit.invented_values``)
    is set aside, with the values: a request no offered lookup fits is searched in the documents instead."""

    id, title = StepId.INVENTED_VALUES, "Set aside a call that does not fit"

    def why(self, run: RunState, call: ToolCall, tool: Tool | None) -> str | None:
        invented = invented_values(tool, call.arguments, run.request, run.cctx.grounding) if tool else []
        return (f"none of its values ({', '.join(map(repr, invented))}) comes from the request or anything "
                "found: the call does not fit the request") if invented else None


class SupposedChange(SetAside):
    """A change (WRITE/ACTUATE) the model proposed whose verb the request says only in a clause that
    supposes it ("If I cancel it 30 hours beforehand, will I be charged?", "what happens if I set CH1 to
    24 V?") is set aside: the request asks what would happen, not for the change, and a proposal held for
    a person is one an approver could approve."""

    id, title = StepId.SUPPOSED_CHANGE, "Set aside a change the request only supposes"

    def why(self, run: RunState, call: ToolCall, tool: Tool | None) -> str | None:
        request = run.request
        if (tool is None or tool.effect is Effect.READ or not request.supposed
                or not tool.requested_by(request.supposed) or tool.requested_by(request.asserted)):
            return None
        return (f"the request only supposes this change ({request.supposed!r}): it asks what would happen, "
                "not for the change")


class RefusedChange(Step):
    """The decision's one call was a change (WRITE/ACTUATE) the gate refused as proposed (invalid or
    invented arguments): the answer is the exact call, why, and that nothing changed. Not for a tool
    the user may not use: the capabilities note says so, and the run searches what they may read."""

    id = StepId.REFUSED_CHANGE

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        decided = run.decided
        if len(decided) != 1:
            return None
        outcome = decided[0]
        error = outcome.payload.get("error") or {}
        if (outcome.status != "refused" or not calls.changes(outcome.call)
                or error.get("code") in ("not_permitted", "not_offered")):
            return None
        self.note(run, "Said that the change was refused",
                  reason="the one call was a change the gate refused; code says so instead of answering around it")
        return Finish(calls.refused(outcome.call.name, outcome.call.arguments, error.get("message", "refused"),
                                    error.get("code", "refused")), code_wrote=True)


class RecordAnswer(Step):
    """The facts of the records looked up by id (``records.record_answer``), of one query's small table
    (``records.table_answer``) or of one tool's short list (``records.listing_answer``), stated by code
    where the request asks for them."""

    id, aid, setting = StepId.RECORD_ANSWER, True, "record_answers"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if run.cctx.flags or not (text := self._records(run, calls) or self._table(run, calls)):
            return None
        self.note(run, "Answered by code from the records",
                  reason="the question asks for facts of the records looked up; code states their fields")
        return Finish(text)

    @staticmethod
    def _records(run: RunState, calls: Calls) -> str | None:
        lookups = calls.lookups(run)
        if (not lookups or not all(o.ok for o in run.outcomes)
                or not all(item.tool.trusted and "retrieval" not in item.tool.tags for item in lookups)):
            return None
        return record_answer(run.request, lookups)

    @staticmethod
    def _table(run: RunState, calls: Calls) -> str | None:
        if len(run.outcomes) != 1 or not run.outcomes[0].ok:
            return None
        outcome = run.outcomes[0]
        tool = calls.tool(outcome.call.name)
        data = outcome.payload.get("data")
        citation = run.evidence.citation_of(outcome.call.id)
        if tool is None or not tool.trusted or not isinstance(data, dict) or citation is None:
            return None
        if "columns" in data and "rows" in data:  # a query's table
            return table_answer(run.request, data, citation)
        return None if WRITTEN_INPUT.intersection(tool.tags) else listing_answer(run.request, tool, data, citation)


class DocumentSearch(Step):
    """When nothing the run did found anything, code searches the documents once with the request (the
    small model's commonest mistake is a lookup tool for a question about a document)."""

    id, setting = StepId.DOCUMENT_SEARCH, "search_when_nothing_found"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if not run.evidence.useful:
            await calls.search_documents(run, "no tool call so far found anything", self.id)
        return None


class UnmentionedName(Step):
    """A name of two or more words the request asks about ("Northwind Labs"; not capitals such as
    "DROP TABLE") that nothing found mentions: what was found is about something else."""

    id = StepId.UNMENTIONED_NAME

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        unmentioned = [n for n in run.evidence.unmentioned(run.request.names) if " " in n and not n.isupper()]
        if not unmentioned:
            return None
        self.note(run, "Nothing found mentions what the question names", names=unmentioned)
        return Finish(prompts.UNMENTIONED_ANSWER.format(names=" or ".join(unmentioned)), outcome="abstained",
                      abstained=True)


class QuotedAnswer(Step):
    """``quotes.quoted_answer`` when everything the run found is document passages, or the request asks
    what the documents say and the run found some; nothing flagged."""

    id, aid, setting = StepId.QUOTED_ANSWER, True, "quote_answers"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        evidence = run.evidence
        if run.flagged or evidence.insufficient or not (
                evidence.only_passages or (evidence.passages and run.request.wants_documents)):
            return None
        # what a lookup by identifier found nothing for ("channel Z") is what the request is about: a
        # quote must name it
        sought = [str(o.call.arguments.get(key[0], "")) for o in run.outcomes
                  if o.found_nothing and (tool := calls.tool(o.call.name)) is not None
                  and (key := tool.lookup_key()) is not None]
        sought = [v for v in sought if v.strip() and v.casefold() in run.question.casefold()]
        text = quoted_answer(run.request, list(evidence.passages.values()), evidence.conflicts, sought=sought)
        if text is None:
            return None
        self.note(run, "Answered by code in the documents' words",
                  reason="each thing the question asks is stated by one unit of the passages; code quotes it")
        return Finish(text, code_wrote=True)


class NamedIdentifiers(Step):
    """A model's answer that names a record a tool found ("The Art of Electronics") but not its
    identifier gets it (``records.with_identifiers``)."""

    id = StepId.NAMED_IDENTIFIERS

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if draft is None or draft.outcome != "answered" or draft.code_wrote:
            return None
        text, added = with_identifiers(draft.text, [o.payload.get("data") for o in run.outcomes if o.ok],
                                       calls.identifier_fields)
        if not added:
            return None
        self.note(run, "Named what was found by its identifier",
                  reason="the answer names a record a tool returned without its identifier", added=added)
        return replace(draft, text=text)


class WhatRan(Step):
    """A resumed run that went on after its approved calls (loop mode) answers with what became of them
    first, in code's words (``ran.what_ran``); an answer saying nothing was found, or none, is replaced by
    it: a call that ran is never answered "I could not find it"."""

    id = StepId.WHAT_RAN

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if not run.ran or draft is None or draft.text.startswith(run.ran):
            return None
        self.note(run, "The answer states what the approved calls did", reason="a resumed run's approved calls "
                  "were decided; their outcome is the answer's first sentence, written by code")
        if draft.abstained or draft.outcome not in ("answered", "paused") or says_evidence_lacks_it(draft.text):
            return Finish(run.ran, code_wrote=True)
        return replace(draft, text=f"{run.ran}\n\n{draft.text}")  # then what it found, or what waits again


class CapabilitiesNote(Step):
    """The request names tools that change something and are not available to this user: the answer
    says so (``capabilities.unavailable_asked``)."""

    id = StepId.CAPABILITIES_NOTE

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if draft is None or draft.outcome == "paused":
            return None
        unavailable = unavailable_asked(run.request, calls.gate.registry, calls.usable(run))
        if not unavailable:
            return None
        self.note(run, "Said what the user may not use", tools=[t.name for t in unavailable],
                  reason="the request names tools that change something and are not available to this user")
        return replace(draft, text=f"{unavailable_note(unavailable)}\n{draft.text}")


class Steps:
    """The steps a runner runs, by id: ``steps`` less those turned off by id or by their setting, and the
    small-model aids unless the strategy is aided."""

    def __init__(self, steps: Sequence[Step], settings: RunnerSettings, *, aided: bool) -> None:
        self.off = settings.steps_off
        self._on = {s.id: s for s in steps if s.id not in self.off and (aided or not s.aid)
                    and (s.setting is None or getattr(settings, s.setting))}

    def enabled(self, step: StepId) -> bool:
        return step not in self.off

    async def first(self, ids: Sequence[StepId], run: RunState, calls: Calls) -> Finish | None:
        """Run the steps ``ids`` names, in order, until one ends the run; how it ends, or None."""
        for step_id in ids:
            if (step := self._on.get(step_id)) is not None and (done := await step(run, calls, None)) is not None:
                return done
        return None

    async def rewrite(self, ids: Sequence[StepId], run: RunState, calls: Calls, draft: Finish) -> Finish:
        """Have each step ``ids`` names rewrite ``draft`` in turn; the draft they leave."""
        for step_id in ids:
            if (step := self._on.get(step_id)) is not None:
                draft = await step(run, calls, draft) or draft
        return draft

"""How the final answer is written, chosen per model by its profile (``ModelProfile.answer``).

- ``AidedAnswer`` (the embedded model): the answer is asked from an evidence brief (each result under a
  short label, the request, today's date, what to answer), capped per thing asked; the small-model
  steps (planned lookups, record and quoted answers) run before it.
- ``NativeAnswer`` (hosted and other capable models): the model gets the conversation in the format it
  is trained on, its tool results as tool messages, and writes its own answer.

The evidence rule, the citation review and the claim check run after either. Neither ever ends with an
empty answer: a reply that is not text where an answer is needed is asked for once more, then the run
ends as a limit that says so; an answer with holes where labels were (the model used the brief's labels
as blanks) is asked for once more, then not shipped.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import replace
from datetime import date
from typing import ClassVar

from toolcrib.agent import prompts
from toolcrib.agent.answer import Finish
from toolcrib.agent.brief import evidence_brief, result_digest
from toolcrib.agent.evidence import whole_sentences
from toolcrib.agent.quotes import compared
from toolcrib.agent.selection import unit_brief
from toolcrib.agent.state import Complete, RunnerSettings, RunState
from toolcrib.agent.stepids import StepId
from toolcrib.agent.today import today_line
from toolcrib.models.base import Completion, Message, Model, ToolSpec
from toolcrib.tools.registry import tool_specs
from toolcrib.trace.events import EventKind


class AnswerStrategy(ABC):
    """Writes the final answer from what the run found."""

    aided: ClassVar[bool]

    def __init__(self, settings: RunnerSettings) -> None:
        self.settings = settings

    @abstractmethod
    async def answer(self, run: RunState, complete: Complete) -> Finish:
        """The final answer for ``run``: the model's text, or how the run ends without one."""

    def decision_messages(self, run: RunState) -> list[Message]:
        """The conversation a loop round decides from: the run's, as it stands."""
        return run.messages

    async def _text(self, run: RunState, complete: Complete, messages: list[Message], specs: list[ToolSpec] | None,
              cap: int) -> Completion | None:
        """Ask with ``messages``; a reply that is not text is asked for once more (``text_retry``); None when
        the second is not text either."""
        reply = await complete(run, specs, decided_by="code", title="Ask for a final answer", messages=messages,
                         tool_choice="none" if specs else "auto", max_tokens=cap)
        if reply.text.strip():
            return reply
        run.tracer.record(EventKind.EVIDENCE_RULE, "Asked again for a written answer", rule=StepId.TEXT_RETRY,
                          detail={"reason": "the reply to the final ask was not text",
                                  "tool_calls": [c.to_dict() for c in reply.tool_calls]})
        reply = await complete(run, specs, decided_by="code", title="Ask again for a written answer",
                         messages=[*messages, Message("user", prompts.TEXT_ONLY)],
                         tool_choice="none" if specs else "auto", max_tokens=cap)
        return reply if reply.text.strip() else None

    @staticmethod
    def _no_text(run: RunState) -> Finish:
        run.tracer.record(EventKind.LIMIT_REACHED, "Limit reached: no written answer", rule=StepId.TEXT_RETRY,
                          detail={"reason": "asked twice for the answer, the model replied with no text"})
        return Finish(prompts.NO_TEXT_ANSWER, outcome="limit", code_wrote=True)


class NativeAnswer(AnswerStrategy):
    """The conversation as it stands, tool results as tool messages; the model writes its own answer."""

    aided = False

    async def answer(self, run: RunState, complete: Complete) -> Finish:
        offer = run.cctx.offer
        specs = tool_specs(offer.tools) if offer is not None and offer.tools else None
        reply = await self._text(run, complete, run.messages, specs, self.settings.max_tokens)
        return self._no_text(run) if reply is None else Finish(reply.text)


class AidedAnswer(AnswerStrategy):
    """The system block (cached by the decision), the request, the evidence brief and the ask; the
    conversation that found the evidence is not replayed."""

    aided = True

    def __init__(self, settings: RunnerSettings, *, select: bool = False) -> None:
        super().__init__(settings)
        self.select = select  # the model writes a selection under a grammar, code the answer (``agent.selection``)

    async def answer(self, run: RunState, complete: Complete) -> Finish:
        if (self.select and StepId.SELECTED_ANSWER not in self.settings.steps_off
                and (selected := await self._selection(run, complete)) is not None):
            return selected
        brief = evidence_brief(run.evidence, run.outcomes)
        ids = ", ".join(brief.labels.values()) or "none"
        # what each version of a conflicting document says is quoted by code under the answer (the
        # review's note), not restated by the model: asked to, it wrote 300-400 tokens (~25 s on 2 cores)
        ask = prompts.FINAL.format(question=run.question, ids=ids, today=today_line(run.request, date.today()))
        # a small model answers the first of several things asked, or for the first of several parties
        asked = 1
        if each := compared(run.request, list(run.evidence.passages.values())):
            ask += "\n" + prompts.FOR_EACH.format(names="; ".join(each))
            asked = len(each)
        elif len(parts := run.request.asks) >= 2:
            ask += "\n" + prompts.EVERY_ASK.format(count=len(parts), asks="; ".join(
                f"({i}) {part}" for i, part in enumerate(parts, 1)))
            asked = len(parts)
        messages = [m for m in run.messages if m.role == "system"] + [
            Message("user", run.question), Message("user", prompts.EVIDENCE.format(evidence=brief.text)),
            Message("user", ask)]
        settings = self.settings
        cap = min(settings.max_tokens, settings.answer_max_tokens, settings.answer_tokens_per_ask * asked)
        for attempt in range(2):
            reply = await self._text(run, complete, messages, None, cap)
            if reply is None:
                return self._no_text(run)
            text, blanks = brief.cited_by_id(reply.text)
            if not blanks and attempt == 0 and _ECHO.search(reply.text):
                # "[1] get_invoice(invoice_id="INV-7") returned: {...}": the brief's line copied, not an answer;
                # asked once more (a second copy ships: its values are the evidence's own)
                run.tracer.record(EventKind.EVIDENCE_RULE, "The answer copied the evidence", rule=StepId.BROKEN_ANSWER,
                                  detail={"text": reply.text[:300], "retry": True})
                messages = [*messages, Message("assistant", reply.text), Message("user", prompts.NO_ECHO)]
                continue
            if not blanks:
                return Finish(whole_sentences(text) if reply.tokens_out >= cap else text)
            # "The order [1] is currently [2] with a status of [3].": labels used as blanks leave holes
            run.tracer.record(EventKind.EVIDENCE_RULE, "The answer used labels as blanks", rule=StepId.BROKEN_ANSWER,
                              detail={"labels": blanks, "text": reply.text[:300], "retry": attempt == 0})
            messages = [*messages, Message("assistant", reply.text), Message("user", prompts.NO_BLANKS)]
        return Finish(prompts.BROKEN_ANSWER, outcome="limit", code_wrote=True)

    async def _selection(self, run: RunState, complete: Complete) -> Finish | None:
        """The answer code writes from the units of the evidence the model picks (``agent.selection``);
        None, for the written answer instead, when the evidence has no unit to pick or the reply picks none."""
        brief = unit_brief(run.evidence, run.outcomes)
        if not brief.units:
            return None
        ask = prompts.SELECT.format(question=run.question, today=today_line(run.request, date.today()))
        messages = [m for m in run.messages if m.role == "system"] + [
            Message("user", prompts.EVIDENCE.format(evidence=brief.text)), Message("user", ask)]
        settings = self.settings
        cap = min(settings.max_tokens, settings.answer_max_tokens + _SELECTION_TOKENS)
        reply = await complete(run, None, decided_by="code", title="Ask which evidence answers", messages=messages,
                               max_tokens=cap, reply_schema=brief.schema())
        composed = brief.compose(reply.text, run.question)
        run.tracer.record(EventKind.EVIDENCE_RULE, "Answer written from the evidence picked",
                          rule=StepId.SELECTED_ANSWER,
                          detail={"selection": reply.text[:300], "written": composed is not None})
        return None if composed is None else Finish(composed)

    def decision_messages(self, run: RunState) -> list[Message]:
        """The run's conversation with each tool result as its digest (``result_digest``): a round only
        decides what to look up next, and the answer is written from the brief (demo set, loop mode: a round
        that showed the passages in full evaluated 600-800 prompt tokens, 8-11 s on two cores)."""
        outcomes = {o.call.id: o for o in run.outcomes}
        return [replace(m, content=result_digest(outcomes[m.tool_call_id]))
                if m.role == "tool" and m.tool_call_id in outcomes else m for m in run.messages]


_SELECTION_TOKENS = 24  # over the written answer's cap: the reply's JSON, verdict and operation
_ECHO = re.compile(r"\breturned(?: \([^)]*\))?:\s*[{\[]")  # the brief's "<call> returned: {...}" line


def strategy_for(model: Model, settings: RunnerSettings) -> AnswerStrategy:
    """The strategy ``model``'s profile names: aided (with the profile's answer caps, where it sets them
    over the runner's), or native."""
    profile = model.profile
    if not profile.aided:
        return NativeAnswer(settings)
    if profile.answer_tokens_per_ask is not None or profile.answer_max_tokens is not None:
        settings = replace(
            settings, answer_tokens_per_ask=profile.answer_tokens_per_ask or settings.answer_tokens_per_ask,
            answer_max_tokens=profile.answer_max_tokens or settings.answer_max_tokens)
    return AidedAnswer(settings, select=profile.structured_reply)

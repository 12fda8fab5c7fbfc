"""The run's one way to ask the model: each turn traced, counted and within the run's limits."""

from __future__ import annotations

from typing import Literal, cast

from toolcrib.agent.state import RunnerSettings, RunState
from toolcrib.models.base import Completion, HostedCall, Message, Model, ModelSettings, ReaderScoped, ToolSpec
from toolcrib.trace.events import DecidedBy, EventKind


class ModelTurns:
    """Asks ``model`` for a run (``agent.state.Complete``): records the decision, the calls it proposes and
    what a provider ran itself, and counts its tokens."""

    def __init__(self, model: Model, settings: RunnerSettings) -> None:
        self.model = model
        self.settings = settings
        self.run_settings = ModelSettings(max_tokens=settings.max_tokens)  # the workspace's and the run's
        self._scoped = isinstance(model, ReaderScoped)  # a Protocol isinstance walks the protocol: once

    async def __call__(self, run: RunState, specs: list[ToolSpec] | None, *, decided_by: DecidedBy, title: str,
                       tool_choice: Literal["auto", "none", "required"] = "auto",
                       messages: list[Message] | None = None, max_tokens: int | None = None,
                       decision_only: bool = False, reply_schema: str | None = None) -> Completion:
        """Ask the model (``decision_only``: for calls, or for nothing more and no text, where it can say so;
        ``reply_schema``: for a reply under that JSON Schema, where it can write one)."""
        model = self.model
        if self._scoped:  # a provider that reads documents reads only the principal's
            model = cast(ReaderScoped, model).for_reader(sorted(run.principal.groups))
        messages = run.messages if messages is None else messages
        asked = ModelSettings(tool_choice=tool_choice, max_tokens=max_tokens,
                              decision_only=decision_only and bool(specs), reply_schema=reply_schema)
        reply = await model.complete(messages, specs or None, self.run_settings.resolve(asked))
        run.tokens_in += reply.tokens_in
        run.tokens_out += reply.tokens_out
        if decided_by == "model":
            run.model_decisions += 1
        what = (", ".join(c.name for c in reply.tool_calls) if reply.tool_calls
                else "answers directly" if reply.text or not decision_only else "calls nothing more")
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

    @staticmethod
    def _hosted(run: RunState, call: HostedCall) -> None:
        """A tool the provider decided on and ran itself: the gate never saw it, so it is recorded as the
        provider's, and what it returned becomes citable evidence (never more than it returned)."""
        cited = run.evidence.add_hosted(call)
        results = [{"source": s.ref, "title": s.title, "text": s.text[:500]} for s in call.sources]
        run.tracer.record(EventKind.CALL_EXECUTED if call.ok else EventKind.CALL_FAILED,
                          f"Provider ran: {call.tool}", decided_by="provider", tool=call.tool, call_id=call.id,
                          arguments=dict(call.arguments), status=call.status,
                          error_code=None if call.ok else f"hosted_{call.status or 'failed'}", citations=cited,
                          detail={"hosted": True, "results": results, "output": call.output[:2000]})

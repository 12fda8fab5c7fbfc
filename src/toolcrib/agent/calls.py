"""What a run does with tools, for the runner and its steps alike: the offer, calls through the gate,
what they returned, and calls code makes itself."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from toolcrib.agent.ran import described_call
from toolcrib.agent.records import LookedUp
from toolcrib.agent.state import Complete, RunnerSettings, RunState
from toolcrib.agent.stepids import StepId
from toolcrib.errors import CallDropped
from toolcrib.models.base import Message, ToolCall, ToolSpec
from toolcrib.retrieval.evidence import Evidence
from toolcrib.sql.tool import SQL_RESOURCE
from toolcrib.tools.gate import Gate
from toolcrib.tools.registry import Offer, tool_specs
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect, Tool
from toolcrib.trace.events import EventKind


class Calls:
    """The gate and the registry as one run uses them; every call, the model's or code's, goes through
    ``Gate.run`` and is observed here."""

    def __init__(self, gate: Gate, settings: RunnerSettings, hosted_tools: tuple[str, ...] = (),
                 complete: Complete | None = None) -> None:
        self.gate = gate
        self.settings = settings
        self.hosted_tools = hosted_tools
        self.complete = complete  # the runner's way to ask the model, for a step that asks it to choose

    def tool(self, name: str) -> Tool | None:
        return self.gate.registry.get(name)

    def changes(self, call: ToolCall) -> bool:
        """Whether ``call`` is to a tool that changes something (an unknown tool is the gate's to refuse)."""
        tool = self.tool(call.name)
        return tool is not None and tool.effect is not Effect.READ

    @property
    def identifier_fields(self) -> set[str]:
        return {name for tool in self.gate.registry for name in tool.identifiers}

    def offer(self, run: RunState, offer: Offer | None = None) -> list[ToolSpec]:
        """Decide what the model (or code) is offered now, and record it; the gate refuses anything
        else (``not_offered``)."""
        offer = offer if offer is not None else self.current_offer(run)
        run.cctx.offer = offer
        detail: dict[str, Any] = {"offered": offer.names, "withheld": dict(offer.withheld)}
        if self.hosted_tools:  # run by the provider, by workspace configuration: not the gate's to offer
            detail["hosted"] = list(self.hosted_tools)
        run.tracer.record(EventKind.TOOLS_OFFERED, "Offer tools", detail=detail)
        return tool_specs(offer.tools)

    def current_offer(self, run: RunState) -> Offer:
        """What the principal may be offered at this point of the run: the policy's offer, less every
        change when the request itself was flagged, less the query tool when the request carries SQL."""
        offer = self.gate.offer(run.principal, run.cctx.grounding if self.settings.offer_only_groundable else None)
        withheld: dict[str, str] = {}
        if run.request_flags:
            withheld |= {t.name: "the request carries instruction-like text, so nothing may be changed in this run"
                         for t in offer.tools if t.effect is not Effect.READ}
        if sql := run.request.sql:  # typed lookups stay offered; a query text could carry it
            withheld |= {t.name: f"the request carries SQL statement text ({sql!r}), so no query is written "
                                 "from it in this run" for t in offer.tools if SQL_RESOURCE in t.tags}
        if not withheld:
            return offer
        return Offer(tuple(t for t in offer.tools if t.name not in withheld), {**offer.withheld, **withheld})

    def usable(self, run: RunState) -> tuple[Tool, ...]:
        """The tools the policy offers the principal, whatever the run has seen."""
        return self.gate.offer(run.principal).tools

    def observe(self, run: RunState, outcomes: list[CallOutcome]) -> None:
        """Take the outcomes into the run: its evidence, and the conversation as tool messages. A search
        that found several versions of a document keeps the ones in force on the request's dates."""
        for k, outcome in enumerate(outcomes):
            outcomes[k] = outcome = self._versions_decided(run, outcome)
            run.calls += 1
            run.outcomes.append(outcome)
            evidence = run.evidence.add(outcome) if outcome.ok else None  # a search is shown as text
            run.messages.append(Message("tool", outcome.for_model(evidence.to_text() if evidence else None),
                                        tool_call_id=outcome.call.id, name=outcome.call.name))

    def _versions_decided(self, run: RunState, outcome: CallOutcome) -> CallOutcome:
        """``outcome`` with a search's document versions decided by the request's dates (``Evidence.as_of``):
        what the model reads, the ledger keeps and the answer cites; what was set aside is recorded."""
        data = outcome.payload.get("data")
        if not (outcome.ok and isinstance(data, dict) and data.get("conflicts")) \
                or StepId.VERSIONS_DECIDED in self.settings.steps_off:
            return outcome  # read back only a search that found versions: the ledger reads every result
        found = Evidence.from_payload(data)
        if found is None:
            return outcome
        decided, choices = found.as_of(run.request.as_of)
        if not choices:
            return outcome
        run.evidence.versions.extend(choices)
        run.tracer.record(EventKind.EVIDENCE_RULE, "Used the document versions in force on the request's dates",
                          rule=StepId.VERSIONS_DECIDED, tool=outcome.call.name, call_id=outcome.call.id,
                          detail={"as_of": [[a.isoformat(), b.isoformat()] for a, b in run.request.as_of],
                                  "versions": [c.to_dict() for c in choices]})
        return replace(outcome, payload={**outcome.payload, "data": decided.to_dict()})

    async def run_model_calls(self, run: RunState, text: str, calls: list[ToolCall]) -> list[CallOutcome]:
        """The model's calls, as it proposed them: into the conversation, through the gate, observed."""
        run.messages.append(Message("assistant", text, tool_calls=tuple(calls)))
        outcomes = await self.gate.run_many(calls, run.cctx)
        self.observe(run, outcomes)
        return outcomes

    async def run_planned(self, run: RunState, calls: list[ToolCall], reason: str, rule: str, *,
                          linked: Mapping[str, str] | None = None) -> list[CallOutcome]:
        """Calls code proposes (never WRITE/ACTUATE): each recorded as decided by code (``rule``, with
        ``reason``, and the value link its identifier came from where ``linked`` gives one by call id),
        then run through the gate like any call and observed."""
        for call in calls:
            detail = {"reason": reason} | ({"linked": linked[call.id]} if linked and call.id in linked else {})
            run.tracer.record(EventKind.CALL_PROPOSED, f"Planned: {call.name}", decided_by="code", tool=call.name,
                              call_id=call.id, arguments=dict(call.arguments), detail=detail, rule=rule)
        return await self.run_model_calls(run, "", calls)

    def drop(self, run: RunState, call: ToolCall, reason: str) -> None:
        """A proposed call the run will not make: recorded, and reported in the answer, never lost."""
        run.tracer.record(EventKind.CALL_DROPPED, f"Dropped call: {call.name}", tool=call.name, call_id=call.id,
                          arguments=dict(call.arguments), status="dropped", error_code="dropped",
                          detail={"reason": reason})
        run.outcomes.append(CallOutcome(call, "dropped", CallDropped(reason).to_result()))

    async def search_documents(self, run: RunState, reason: str, rule: str) -> bool:
        """Code searches the documents once with the request (never when the run searched them already).
        Returns whether it searched."""
        if run.code_searched or run.evidence.searched:
            return False
        search = next((t for t in self.usable(run) if "retrieval" in t.tags), None)
        if search is None:
            return False
        run.code_searched = True
        call = ToolCall(f"code_{run.calls + 1}", search.name, {"query": run.question})
        run.tracer.record(EventKind.CODE_SEARCH, f"Search the documents: {search.name}", tool=search.name,
                          call_id=call.id, arguments=dict(call.arguments), detail={"reason": reason}, rule=rule)
        await self.run_model_calls(run, "", [call])
        return True

    def records(self, run: RunState) -> list[str]:
        """The records the run's own systems returned, as JSON text: successful results of trusted tools,
        not document searches, not content others wrote."""
        return [json.dumps(o.payload.get("data"), ensure_ascii=False, default=str) for o in run.outcomes
                if o.ok and (t := self.tool(o.call.name)) is not None and t.trusted and "retrieval" not in t.tags]

    def lookups(self, run: RunState) -> list[LookedUp] | None:
        """The run's successful results as lookups by identifier (``Tool.lookup_key``), each with its
        citation; None when one of them came from anything else (a search, a query)."""
        lookups: list[LookedUp] = []
        for outcome in (o for o in run.outcomes if o.ok):
            tool = self.tool(outcome.call.name)
            key = tool.lookup_key() if tool is not None else None
            citation = run.evidence.citation_of(outcome.call.id)
            if tool is None or key is None or citation is None:
                return None
            lookups.append(LookedUp(tool, str(outcome.call.arguments.get(key[0], "")),
                                    outcome.payload.get("data") or {}, citation))
        return lookups

    def made_keys(self, run: RunState) -> set[tuple[str, str]]:
        """The calls the run made, as (tool, arguments JSON)."""
        return {(o.call.name, json.dumps(o.call.arguments, sort_keys=True)) for o in run.outcomes}

    @staticmethod
    def refused(tool: str, arguments: Any, message: str, code: str) -> str:
        """What the answer says of a change refused as asked: the exact call, why, and that nothing changed."""
        return (f"{described_call(tool, dict(arguments))} was refused, so I cannot do this as asked: {message} "
                f"({code}). Nothing was changed.")

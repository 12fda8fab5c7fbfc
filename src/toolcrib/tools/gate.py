"""The Gate: every proposed call passes allowlist -> validation -> grounding -> authorization ->
effect policy -> bounded execution -> normalized result. The model proposes; the Gate decides."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcrib.errors import (
    ApprovalRequired,
    InvalidArguments,
    ModelFacingError,
    NotPermitted,
    ToolFailed,
    ToolTimeout,
    UngroundedArgument,
    UnknownTool,
)
from toolcrib.models.base import ToolCall
from toolcrib.policy.audit import AuditStore, redact_arguments
from toolcrib.policy.policy import Policy
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import proposal_hash
from toolcrib.tools.cache import ResultCache, cache_key
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.registry import Registry
from toolcrib.tools.result import CallOutcome, error_payload, ok_payload
from toolcrib.tools.tool import Effect, Tool, ToolContext
from toolcrib.trace.tracer import Tracer

if TYPE_CHECKING:
    from toolcrib.policy.approvals import ApprovalStore
    from toolcrib.policy.envelope import SafetyEnvelope
    from toolcrib.policy.scanner import Scanner


@dataclass
class CallContext:
    """Per-run facts the Gate needs. The principal comes from the caller's session, never the model."""

    principal: Principal
    tracer: Tracer
    grounding: Grounding = field(default_factory=Grounding)
    resources: Mapping[str, Any] = field(default_factory=dict)
    run_id: str = ""

    def tool_context(self) -> ToolContext:
        return ToolContext(principal=self.principal, resources=self.resources, trace_id=self.tracer.trace_id)


@dataclass
class GateSettings:
    max_result_chars: int = 4000
    read_retries: int = 2
    retry_backoff_s: float = 0.05
    approval_ttl_s: float = 900.0


class Gate:
    """Decides about, and runs, the tool calls a model proposes."""

    def __init__(
        self,
        registry: Registry,
        policy: Policy,
        *,
        settings: GateSettings | None = None,
        cache: ResultCache | None = None,
        approvals: ApprovalStore | None = None,
        audit: AuditStore | None = None,
        envelope: SafetyEnvelope | None = None,
        scanner: Scanner | None = None,
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.settings = settings or GateSettings()
        self.cache = cache if cache is not None else ResultCache()
        self.approvals = approvals
        self.audit = audit
        self.envelope = envelope
        self.scanner = scanner

    # -- the checks, in order ---------------------------------------------------------------------

    def admit(self, call: ToolCall, cctx: CallContext) -> tuple[Tool, dict[str, Any]]:
        """Allowlist, parse, strict validation, grounding and authorization. Raises ModelFacingError."""
        tool = self.registry.get(call.name)
        principal = cctx.principal
        if tool is None:
            offered = ", ".join(t.name for t in self.registry.offered(principal, self.policy)) or "none"
            raise UnknownTool(f"there is no tool named '{call.name}'; available tools: {offered}")
        if not self.policy.offers(principal, tool):
            raise NotPermitted(f"{tool.name} is not available to you")
        if call.parse_error:
            raise InvalidArguments(f"{tool.name}: {call.parse_error}")
        values = tool.validate(call.arguments, cctx.tool_context())
        for name in tool.identifiers:
            value = values.get(name)
            if value not in (None, "") and not cctx.grounding.contains(value):
                raise UngroundedArgument(
                    f"{tool.name}: {name} '{value}' does not appear in the request or in any earlier tool "
                    f"result; ask the user for the exact {name} instead of guessing it")
        decision = self.policy.authorize(principal, tool, values)
        if not decision.allowed:
            raise NotPermitted(decision.reason or f"{tool.name} is not permitted")
        if tool.effect is not Effect.READ and self.envelope is not None and self.envelope.applies_to(tool.name):
            self.envelope.check(tool.name, values)  # code checks the set point before any person is asked
        return tool, values

    async def run(self, call: ToolCall, cctx: CallContext, *, proposal_id: str | None = None) -> CallOutcome:
        """Decide about one call and, where allowed, run it. Never raises for model-caused problems."""
        start = time.perf_counter()
        tool: Tool | None = None
        try:
            tool, values = self.admit(call, cctx)
            if tool.effect is Effect.READ:
                outcome = await self._run_read(call, tool, values, cctx)
            else:
                outcome = await self._run_effect(call, tool, values, cctx, proposal_id)
        except ModelFacingError as exc:
            status = "approval_required" if isinstance(exc, ApprovalRequired) else (
                "error" if isinstance(exc, (ToolFailed, ToolTimeout)) else "refused")
            outcome = CallOutcome(call, status, error_payload(exc), effect=tool.effect.value if tool else None)
            self._record_refusal(outcome, exc, cctx)
        outcome.ms = (time.perf_counter() - start) * 1000
        return outcome

    async def run_many(self, calls: Sequence[ToolCall], cctx: CallContext) -> list[CallOutcome]:
        """Independent READs run in parallel; anything else runs alone, in the order proposed."""
        results: dict[int, CallOutcome] = {}
        reads = [i for i, c in enumerate(calls) if self._is_read(c)]
        if reads:
            done = await asyncio.gather(*(self.run(calls[i], cctx) for i in reads))
            results.update(zip(reads, done))
        for i, call in enumerate(calls):
            if i not in results:
                results[i] = await self.run(call, cctx)
        return [results[i] for i in range(len(calls))]

    def _is_read(self, call: ToolCall) -> bool:
        tool = self.registry.get(call.name)
        return tool is not None and tool.effect is Effect.READ

    # -- execution --------------------------------------------------------------------------------

    async def _run_read(self, call: ToolCall, tool: Tool, values: dict[str, Any], cctx: CallContext) -> CallOutcome:
        key = cache_key(tool.name, cctx.principal, values) if tool.cache_ttl_s > 0 else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                cctx.tracer.record(kind="cache", decided_by="cache", title=f"Cache hit: {tool.name}",
                                   detail=call.arguments)
                return self._ok(call, tool, hit, cctx, cached=True)
        attempts = 1 + (self.settings.read_retries if tool.idempotent else 0)
        for attempt in range(attempts):
            try:
                value = await self._invoke(tool, values, cctx)
                break
            except ToolFailed:
                if attempt + 1 == attempts:
                    raise
                cctx.tracer.record(kind="code", decided_by="code", title=f"Retry {tool.name}",
                                   detail=f"attempt {attempt + 2} of {attempts}")
                await asyncio.sleep(self.settings.retry_backoff_s * (2 ** attempt))
        if key is not None:
            self.cache.put(key, value, tool.cache_ttl_s)
        return self._ok(call, tool, value, cctx)

    async def _run_effect(self, call: ToolCall, tool: Tool, values: dict[str, Any], cctx: CallContext,
                          proposal_id: str | None) -> CallOutcome:
        """WRITE/ACTUATE: held as a Proposal until a person approves this exact call, then run once."""
        if self.approvals is None:
            raise ApprovalRequired(f"{tool.name} changes something and needs a person's approval; "
                                   "no approval store is configured, so it cannot run")
        ctx = cctx.tool_context()
        version = tool.resource_version(values, ctx) if tool.resource_version else ""
        principal = cctx.principal
        if proposal_id is None:
            proposal = self.approvals.propose(tool.name, values, principal, self.policy.version, version,
                                              run_id=cctx.run_id, trace_id=cctx.tracer.trace_id)
            self._audit("proposed", actor=principal.user_id, decided_by="model", tool=tool.name,
                        proposal_id=proposal.id, cctx=cctx, detail={"arguments": self._redacted(tool, values),
                                                                    "resource_version": version})
            cctx.tracer.record(kind="policy", decided_by="policy", title=f"Held for approval: {tool.name}",
                               detail={"proposal_id": proposal.id, "arguments": values})
            payload = ApprovalRequired(
                f"{tool.name} was not run: it is held for a person's approval as proposal {proposal.id}").to_result()
            payload["proposal"] = {"id": proposal.id, "tool": tool.name, "arguments": values}
            return CallOutcome(call, "approval_required", payload, effect=tool.effect.value, proposal_id=proposal.id)
        proposal = self.approvals.get(proposal_id)
        if proposal is None or proposal.tenant != principal.tenant or proposal.requester != principal.user_id:
            raise NotPermitted(f"proposal {proposal_id} is not one of your proposals")
        stored = self.approvals.outcome(proposal_id)
        if stored is not None:  # a duplicated resume: report the recorded outcome, run nothing again
            status, result = stored
            cctx.tracer.record(kind="code", decided_by="code", title=f"Already executed: {tool.name}",
                               detail={"proposal_id": proposal_id, "status": status})
            return CallOutcome(call, "ok" if status == "executed" else "outcome_unknown", result,
                               effect=tool.effect.value, proposal_id=proposal_id)
        expected = proposal_hash(tool.name, values, principal.user_id, principal.tenant, self.policy.version, version)
        approval = self.approvals.claim(proposal_id, expected, current_resource_version=version,
                                        tool=tool.name, arguments=values)
        cctx.tracer.record(kind="human", decided_by="human", title=f"Approved by {approval.approver}: {tool.name}",
                           detail={"proposal_id": proposal_id})
        try:
            value = await self._invoke(tool, values, cctx)
        except ToolTimeout:
            result = {"ok": False, "error": {"code": "outcome_unknown", "message": (
                f"{tool.name} did not answer within {tool.timeout_s:g}s: its outcome is unknown. It was not "
                "retried; check the system of record before trying again.")}}
            self.approvals.finish(proposal_id, "outcome_unknown", result)
            self._audit("outcome_unknown", actor="system", decided_by="code", tool=tool.name,
                        proposal_id=proposal_id, cctx=cctx)
            return CallOutcome(call, "outcome_unknown", result, effect=tool.effect.value, proposal_id=proposal_id)
        except ToolFailed as exc:
            self.approvals.finish(proposal_id, "failed", exc.to_result())
            self._audit("failed", actor="system", decided_by="code", tool=tool.name, proposal_id=proposal_id,
                        cctx=cctx)
            raise
        outcome = self._ok(call, tool, value, cctx)
        outcome.proposal_id = proposal_id
        self.approvals.finish(proposal_id, "executed", outcome.payload)
        self._audit("executed", actor=approval.approver, decided_by="human", tool=tool.name,
                    proposal_id=proposal_id, cctx=cctx)
        return outcome

    async def _invoke(self, tool: Tool, values: dict[str, Any], cctx: CallContext) -> Any:
        kwargs = tool.bind(values, cctx.tool_context())
        try:
            async with asyncio.timeout(tool.timeout_s):
                if tool.is_async:
                    return await tool.fn(**kwargs)
                return await asyncio.to_thread(tool.fn, **kwargs)
        except TimeoutError:
            raise ToolTimeout(f"{tool.name} did not answer within {tool.timeout_s:g}s") from None
        except ModelFacingError:
            raise
        except Exception as exc:  # a crashed tool is a controlled result; details go to the trace only
            cctx.tracer.record(kind="code", decided_by="code", title=f"Tool raised: {tool.name}",
                               detail=f"{type(exc).__name__}: {exc}")
            raise ToolFailed(f"{tool.name} failed while running; try again later or use another tool") from None

    # -- recording --------------------------------------------------------------------------------

    def _ok(self, call: ToolCall, tool: Tool, value: Any, cctx: CallContext, *, cached: bool = False) -> CallOutcome:
        payload = ok_payload(tool.name, value, tool.max_result_chars or self.settings.max_result_chars)
        flags: list[str] = []
        if self.scanner is not None:
            flags = [f"{f.kind}: {f.excerpt}" for f in self.scanner.scan(str(payload["data"]))]
            if flags:
                cctx.tracer.record(kind="policy", decided_by="code", title=f"Untrusted content flagged in {tool.name}",
                                   detail=flags)
        if not cached:
            cctx.tracer.record(kind="tool", decided_by="code", title=f"Run tool: {tool.name}",
                               detail={"arguments": self._redacted(tool, call.arguments),
                                       "truncated": payload["truncated"]})
            if tool.effect is Effect.READ:
                self._audit("executed", actor=cctx.principal.user_id, decided_by="code", tool=tool.name,
                            cctx=cctx, detail={"arguments": self._redacted(tool, call.arguments)})
        cctx.grounding.add(str(payload["data"]))
        return CallOutcome(call, "ok", payload, effect=tool.effect.value, cached=cached, flags=flags)

    def _record_refusal(self, outcome: CallOutcome, exc: ModelFacingError, cctx: CallContext) -> None:
        decided_by = "policy" if isinstance(exc, (NotPermitted, ApprovalRequired)) else "code"
        cctx.tracer.record(kind="policy", decided_by=decided_by, title=f"Refused {outcome.call.name}: {exc.code}",
                           detail=exc.message)
        event = "denied" if isinstance(exc, NotPermitted) else "refused" if outcome.status == "refused" else "failed"
        self._audit(event, actor=cctx.principal.user_id, decided_by=decided_by, tool=outcome.call.name, cctx=cctx,
                    detail={"code": exc.code, "message": exc.message})

    def _redacted(self, tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not tool.redact:
            return dict(arguments)
        return redact_arguments(dict(arguments), tool.redact)

    def _audit(self, event: str, *, actor: str, decided_by: str, tool: str, cctx: CallContext,
               proposal_id: str = "", detail: dict[str, Any] | None = None) -> None:
        if self.audit is not None:
            self.audit.append(event, actor=actor, decided_by=decided_by, tool=tool, proposal_id=proposal_id,
                              trace_id=cctx.tracer.trace_id, detail=detail)

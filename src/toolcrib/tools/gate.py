"""The Gate: every proposed call passes allowlist -> validation -> grounding -> authorization ->
effect policy -> bounded execution -> normalized result. The model proposes; the Gate decides."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, NamedTuple, ParamSpec, TypeVar

from toolcrib.errors import (
    ApprovalRequired,
    InvalidArguments,
    ModelFacingError,
    NotOffered,
    NotPermitted,
    ToolFailed,
    ToolTimeout,
    UngroundedArgument,
    UnknownTool,
)
from toolcrib.models.base import ToolCall
from toolcrib.policy.audit import AuditStore, redact_arguments, redact_changes
from toolcrib.policy.policy import Policy
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import ApprovalRefused, Proposal, Review, changed_values, proposal_hash
from toolcrib.policy.scanner import Scanner, quarantine_values
from toolcrib.tools.cache import ResultCache, cache_key
from toolcrib.tools.context import CallContext, GateSettings
from toolcrib.tools.grounding import Grounding, Source
from toolcrib.tools.invoke import invoke
from toolcrib.tools.provenance import argument_sources, check_egress, checks_run, requested_in, unrequested
from toolcrib.tools.registry import Offer, Registry
from toolcrib.tools.regrounding import Regrounded, ground_dates, stored_names, unnamed_filters
from toolcrib.tools.result import CallOutcome, Status, encoded_ok_payload, error_payload
from toolcrib.tools.tool import Effect, Tool, ToolContext
from toolcrib.trace.events import DecidedBy, EventKind

# Enum members the READ path asks for on every call, looked up once: on Python 3.11 reading a member off
# its class goes through ``EnumType.__getattr__``'s slot (~0.1 us each)
_READ = Effect.READ
_EXECUTED = EventKind.CALL_EXECUTED
_CACHE_HIT = EventKind.CACHE_HIT


if TYPE_CHECKING:
    from toolcrib.policy.approvals import ApprovalStore
    from toolcrib.policy.envelope import SafetyEnvelope


class _Result(NamedTuple):
    """A tool's value made ready once (and cached so for a READ): the payload the model is shown, the
    data as the tool returned it (provenance matches against it) and what the scanner flagged. A tuple:
    made on every call, and a frozen dataclass costs twice as much to make."""

    payload: dict[str, Any]
    data: Any
    flags: list[str]
    text: str | None = None  # ``data`` as JSON, when it was encoded whole (not cut)


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

    def close(self) -> None:
        """Close the approval and audit stores (a gate built for one job, as a CLI command's): the audit
        chains what its READ calls journaled."""
        if self.approvals is not None:
            self.approvals.close()
        if self.audit is not None:
            self.audit.close()

    # -- the checks, in order ---------------------------------------------------------------------

    def offer(self, principal: Principal, grounding: Grounding | None = None) -> Offer:
        """What ``principal`` may be offered now (see ``Registry.offer``); ``admit`` refuses the rest."""
        return self.registry.offer(principal, self.policy, grounding)

    def admit(self, call: ToolCall, cctx: CallContext) -> tuple[Tool, dict[str, Any]]:
        """Allowlist, offer, parse, strict validation, grounding and authorization. Raises ModelFacingError."""
        tool, values, _ = self._admit(call, cctx)
        return tool, values

    def _admit(self, call: ToolCall, cctx: CallContext) -> tuple[Tool, dict[str, Any], list[Regrounded]]:
        """``admit``, and what grounding changed in the arguments."""
        tool = self.registry.get(call.name)
        principal = cctx.principal
        offer = cctx.offer
        if tool is None:
            offered = ", ".join((offer or self.offer(principal)).names) or "none"
            raise UnknownTool(f"there is no tool named '{call.name}'; available tools: {offered}")
        if offer is not None and tool.name in offer.withheld:
            raise NotOffered(f"{tool.name} was not offered: {offer.withheld[tool.name]}; ask the user for it")
        if not (tool.name in offer if offer is not None else self.policy.offers(principal, tool)):
            raise NotPermitted(f"{tool.name} is not available to you")
        if call.parse_error:
            raise InvalidArguments(f"{tool.name}: {call.parse_error}")
        values = tool.validate(call.arguments, cctx.tool_context() if tool.check is not None else None)
        for name in tool.identifiers:
            value = values.get(name)
            if value not in (None, "") and not cctx.grounding.contains(value):
                raise UngroundedArgument(
                    f"{tool.name}: {name} '{value}' does not appear in the request or in any earlier tool "
                    f"result; ask the user for the exact {name} instead of guessing it")
        regrounded: list[Regrounded] = []
        if self.settings.ground_values:
            values, regrounded = self._ground_values(call, tool, values, cctx)
        decision = self.policy.authorize(principal, tool, values)
        if not decision.allowed:
            raise NotPermitted(decision.reason or f"{tool.name} is not permitted")
        if self.envelope is not None and tool.effect is not _READ and self.envelope.applies_to(tool.name):
            self.envelope.check(tool.name, values)  # code checks the set point before any person is asked
        return tool, values, regrounded

    @staticmethod
    def _ground_values(call: ToolCall, tool: Tool, values: dict[str, Any],
                       cctx: CallContext) -> tuple[dict[str, Any], list[Regrounded]]:
        """``values`` with their dates held to the request's (``regrounding.ground_dates``) and a READ's
        filters nobody named left out (``regrounding.unnamed_filters``), what changed recorded; a name of a
        closed set that names no stored value refused (``regrounding.stored_names``)."""
        values, dated = ground_dates(tool.name, values, tool.identifiers, cctx.grounding, cctx.question, cctx.today)
        values, dropped = unnamed_filters(tool, values, cctx.grounding)
        stored_names(tool, values, cctx.domains)
        if dated or dropped:
            cctx.tracer.record(EventKind.ARGUMENT_REGROUNDED, f"Arguments re-grounded: {tool.name}", tool=tool.name,
                               call_id=call.id, detail={"regrounded": [r.to_dict() for r in dated + dropped]})
        return values, dated + dropped

    def admit_edit(self, tool: Tool, arguments: Mapping[str, Any], requester: Principal,
                   resources: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
        """An approver's edited call, checked as the requester's call would be (schema and domain check,
        authorization, safety envelope; the approver is the source of the values, so no grounding check):
        its validated values and the resource version it would change now. Raises ModelFacingError."""
        ctx = ToolContext(principal=requester, resources=resources)
        values = tool.validate(arguments, ctx if tool.check is not None else None)
        decision = self.policy.authorize(requester, tool, values)
        if not decision.allowed:
            raise NotPermitted(decision.reason or f"{tool.name} is not permitted for {requester.user_id}")
        if self.envelope is not None and self.envelope.applies_to(tool.name):
            self.envelope.check(tool.name, values)
        return values, tool.resource_version(values, ctx) if tool.resource_version else ""

    async def run(self, call: ToolCall, cctx: CallContext, *, proposal_id: str | None = None) -> CallOutcome:
        """Decide about one call and, where allowed, run it. Never raises for model-caused problems."""
        start = time.perf_counter()
        tool: Tool | None = None
        try:
            tool, values, regrounded = self._admit(call, cctx)
            if regrounded:  # the call as it runs, recorded and answered as such
                call = _as_run(call, values, regrounded)
            if tool.effect is _READ:
                if tool.egress:
                    check_egress(tool, values, cctx.grounding, self.settings.egress_allowlist)
                outcome = await self._run_read(call, tool, values, cctx, start)
            else:
                outcome = await self._run_effect(call, tool, values, cctx, proposal_id, start)
        except ModelFacingError as exc:
            status: Status = "approval_required" if isinstance(exc, ApprovalRequired) else (
                "error" if isinstance(exc, (ToolFailed, ToolTimeout)) else "refused")
            outcome = CallOutcome(call, status, error_payload(exc), effect=tool.effect.value if tool else None)
            await self._record_refusal(outcome, exc, cctx, start)
        outcome.ms = (time.perf_counter() - start) * 1000
        return outcome

    async def run_many(self, calls: Sequence[ToolCall], cctx: CallContext) -> list[CallOutcome]:
        """Independent READs run in parallel; anything else runs alone, in the order proposed."""
        results: dict[int, CallOutcome] = {}
        reads = [i for i, c in enumerate(calls) if self._is_read(c)]
        if len(reads) == 1:  # the common case: no task for gather to make and schedule
            results[reads[0]] = await self.run(calls[reads[0]], cctx)
        elif reads:
            done = await asyncio.gather(*(self.run(calls[i], cctx) for i in reads))
            results.update(zip(reads, done, strict=True))
        for i, call in enumerate(calls):
            if i not in results:
                results[i] = await self.run(call, cctx)
        return [results[i] for i in range(len(calls))]

    def _is_read(self, call: ToolCall) -> bool:
        tool = self.registry.get(call.name)
        return tool is not None and tool.effect is _READ

    # -- provenance -------------------------------------------------------------------------------

    def review(self, tool: Tool, values: Mapping[str, Any], cctx: CallContext) -> Review:
        """Where each argument of a WRITE/ACTUATE call was found, and what its approver must be warned
        about (``provenance.argument_sources``, ``provenance.unrequested``), with every scanner flag of the
        run. A sensitive argument with no trusted source (``untrusted_sensitive``) or an unrequested write
        (``unrequested_writes``) may be refused here instead, before any person is asked."""
        asked = requested_in(tool, values, cctx.question, cctx.grounding, self.registry)
        found, warnings = argument_sources(tool, values, cctx.grounding, cctx.question, requested=bool(asked),
                                           refuse=self.settings.untrusted_sensitive == "refuse")
        problem = unrequested(tool, values, cctx.grounding, self.settings.unrequested_writes, requested=bool(asked))
        warnings += [problem] if problem else []
        warnings += [f"flagged in this run's tool results: {flag}" for flag in cctx.flags]
        checks = checks_run(tool, cctx.grounding, asked=asked, flags=len(cctx.flags))
        return Review(cctx.question, found, warnings, checks)

    # -- execution --------------------------------------------------------------------------------

    async def _run_read(self, call: ToolCall, tool: Tool, values: dict[str, Any], cctx: CallContext,
                        start: float) -> CallOutcome:
        key = cache_key(tool.name, cctx.principal, values) if tool.cache_ttl_s > 0 else None
        if key is not None:
            hit = self.cache.get(key)
            if hit is not None:
                cctx.tracer.record_call(_CACHE_HIT, f"Cache hit: {tool.name}", "cache", tool.name, call.id,
                                        tool._effect, self._redacted(tool, call.arguments), None, None, 0.0, None)
                return self._ok(call, tool, hit, cctx, start, cached=True)  # made ready when it was cached
        attempts = 1 + (self.settings.read_retries if tool.idempotent else 0)
        for attempt in range(attempts):
            try:
                value = await self._invoke(tool, values, cctx)
                break
            except ToolFailed as exc:
                if attempt + 1 == attempts:
                    raise
                cctx.tracer.record(EventKind.CALL_RETRIED, f"Retry {tool.name}", tool=tool.name, call_id=call.id,
                                   error_code=exc.code, detail={"attempt": attempt + 2, "of": attempts,
                                                                "error": exc.internal or exc.message})
                await asyncio.sleep(self.settings.retry_backoff_s * (2 ** attempt))
        result = self._prepare(tool, value)
        if key is not None:
            self.cache.put(key, result, tool.cache_ttl_s)
        return self._ok(call, tool, result, cctx, start, shared=key is not None)

    async def _outcome_of_running(self, proposal_id: str, wait_s: float) -> tuple[str, dict[str, Any]] | None:
        """The outcome of a claimed call, once whoever claimed it records one (None after ``wait_s``)."""
        assert self.approvals is not None
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            held = await _off(self.approvals.get, proposal_id)
            if held is None or held.status != "executing":
                return await _off(self.approvals.outcome, proposal_id)
            await asyncio.sleep(0.05)
        return None

    @staticmethod
    def _replay(call: ToolCall, tool: Tool, proposal_id: str, stored: tuple[str, dict[str, Any]],
                cctx: CallContext) -> CallOutcome:
        """A duplicated resume: the recorded outcome of the approved call; nothing runs again."""
        status, result = stored
        cctx.tracer.record(EventKind.CALL_REPLAYED, f"Already executed: {tool.name}", tool=tool.name,
                           call_id=call.id, effect=tool.effect.value, status=status, proposal_id=proposal_id)
        return CallOutcome(call, "ok" if status == "executed" else "outcome_unknown", result,
                           effect=tool.effect.value, proposal_id=proposal_id)

    async def _run_effect(self, call: ToolCall, tool: Tool, values: dict[str, Any], cctx: CallContext,
                          proposal_id: str | None, start: float) -> CallOutcome:
        """WRITE/ACTUATE: held as a Proposal until a person approves this exact call, then run once."""
        if self.approvals is None:
            raise ApprovalRequired(f"{tool.name} changes something and needs a person's approval; "
                                   "no approval store is configured, so it cannot run")
        ctx = cctx.tool_context()
        version = await _off(tool.resource_version, values, ctx) if tool.resource_version else ""
        principal = cctx.principal
        approvals = self.approvals
        if proposal_id is None:
            review = self.review(tool, values, cctx)
            proposal = await _off(approvals.propose, tool.name, values, principal, self.policy.version, version,
                                  run_id=cctx.run_id, trace_id=cctx.tracer.trace_id, review=review,
                                  pending_ttl_s=self.settings.proposal_ttl_s.get(tool.name))
            shown = {"provenance": review.provenance, "warnings": review.warnings}
            await self._audit("proposed", actor=principal.user_id, decided_by="model", tool=tool.name,
                        proposal_id=proposal.id, cctx=cctx, detail={"arguments": self._redacted(tool, values),
                                                                    "resource_version": version, **shown})
            cctx.tracer.record(EventKind.CALL_HELD, f"Held for approval: {tool.name}", decided_by="policy",
                               tool=tool.name, call_id=call.id, effect=tool.effect.value,
                               arguments=self._redacted(tool, values), status="approval_required",
                               proposal_id=proposal.id, detail=shown)
            payload = ApprovalRequired(
                f"{tool.name} was not run: it is held for a person's approval as proposal {proposal.id}").to_result()
            payload["proposal"] = {"id": proposal.id, "tool": tool.name, "arguments": values, **shown}
            return CallOutcome(call, "approval_required", payload, effect=tool.effect.value, proposal_id=proposal.id)
        held = await _off(approvals.get, proposal_id)
        if held is None or held.tenant != principal.tenant or held.requester != principal.user_id:
            raise NotPermitted(f"proposal {proposal_id} is not one of your proposals")
        edit: dict[str, Any] | None = None
        if held.superseded_by:  # an approver edited the call: the edited proposal runs in its place
            edited = await _off(approvals.get, held.superseded_by)
            if edited is None:
                raise ApprovalRefused("superseded")
            if changed_values(held.arguments, values):  # the call sent is not the one proposed
                raise ApprovalRefused("edited", "the call differs from the one proposed; send the proposed call")
            values, version = await _off(self.admit_edit, tool, edited.arguments, principal, cctx.resources)
            edit = {"by": held.decided_by, "changes": changed_values(held.arguments, values),
                    "reason": held.reason, "supersedes": held.id, "proposal_id": edited.id}
            call = ToolCall(call.id, call.name, dict(values))
            proposal_id, held = edited.id, edited
        stored = await _off(approvals.outcome, proposal_id)
        if stored is not None:  # a duplicated resume: report the recorded outcome, run nothing again
            return self._replay(call, tool, proposal_id, stored, cctx)
        expected = proposal_hash(tool.name, values, principal.user_id, principal.tenant, self.policy.version, version,
                                 held.review)
        try:
            approval = await _off(approvals.claim, proposal_id, expected, current_resource_version=version,
                                  tool=tool.name, arguments=values)
        except ApprovalRefused as refused:
            if refused.reason == "rejected":
                rejected = await _off(approvals.get, proposal_id)
                raise self._rejection(rejected or held) from None
            if refused.reason != "used":
                raise
            # a duplicate resume while the first is running the call: wait for its outcome and report it
            stored = await self._outcome_of_running(proposal_id, tool.timeout_s + 5.0)
            if stored is None:
                raise
            return self._replay(call, tool, proposal_id, stored, cctx)
        title = f"{'Edited and approved' if edit else 'Approved'} by {approval.approver}: {tool.name}"
        cctx.tracer.record(EventKind.CALL_APPROVED, title, decided_by="human", tool=tool.name, call_id=call.id,
                           effect=tool.effect.value, arguments=self._redacted(tool, values), proposal_id=proposal_id,
                           detail={"approver": approval.approver, **({"edited": {
                               **edit, "changes": redact_changes(edit["changes"], tool.redact)}} if edit else {})})
        try:
            value = await self._invoke(tool, values, cctx)
        except ToolTimeout:
            result = {"ok": False, "error": {"code": "outcome_unknown", "message": (
                f"{tool.name} did not answer within {tool.timeout_s:g}s: its outcome is unknown. It was not "
                "retried; check the system of record before trying again.")}}
            await _off(approvals.finish, proposal_id, "outcome_unknown", result)
            cctx.tracer.record(EventKind.CALL_FAILED, f"Outcome unknown: {tool.name}", decided_by="human",
                               tool=tool.name, call_id=call.id, effect=tool.effect.value,
                               arguments=self._redacted(tool, values), status="outcome_unknown",
                               error_code="outcome_unknown", proposal_id=proposal_id,
                               ms=(time.perf_counter() - start) * 1000)
            await self._audit("outcome_unknown", actor="system", decided_by="code", tool=tool.name,
                        proposal_id=proposal_id, cctx=cctx)
            return CallOutcome(call, "outcome_unknown", result, effect=tool.effect.value, proposal_id=proposal_id)
        except ToolFailed as exc:
            await _off(approvals.finish, proposal_id, "failed", exc.to_result())
            await self._audit("failed", actor="system", decided_by="code", tool=tool.name, proposal_id=proposal_id,
                        cctx=cctx)
            raise
        outcome = self._ok(call, tool, self._prepare(tool, value), cctx, start, proposal_id=proposal_id,
                           shared=False)
        outcome.payload["approved_by"] = approval.approver
        if edit:  # the model's next turn learns what ran instead of what it proposed, and who changed it
            outcome.payload["edited"] = {**edit, "note": (
                f"{edit['by']} changed this call before approving it; it ran with the changed values")}
        await _off(approvals.finish, proposal_id, "executed", outcome.payload)
        await self._audit("executed", actor=approval.approver, decided_by="human", tool=tool.name,
                    proposal_id=proposal_id, cctx=cctx)
        return outcome

    @staticmethod
    def _rejection(proposal: Proposal) -> ApprovalRefused:
        """A rejected call's refusal, carrying who rejected it and in what words, for the model and the requester."""
        words = f': "{proposal.reason}"' if proposal.reason else ""
        by = proposal.decided_by or "an approver"
        return ApprovalRefused("rejected", f"the proposal was rejected by {by}{words}",
                               decision={"by": proposal.decided_by, "reason": proposal.reason})

    @staticmethod
    def _invoke(tool: Tool, values: dict[str, Any], cctx: CallContext) -> Coroutine[Any, Any, Any]:
        """``invoke``'s run of ``tool`` with ``values`` (and the run's context, where it takes one), to await."""
        return invoke(tool, values if tool.context_param is None else tool.bind(values, cctx.tool_context()))

    # -- recording --------------------------------------------------------------------------------

    def _prepare(self, tool: Tool, value: Any) -> _Result:
        """Normalize and cap the value, and quarantine what the scanner flags in what the model is shown."""
        payload, text = encoded_ok_payload(tool.name, value, tool.max_result_chars or self.settings.max_result_chars)
        data = payload["data"]
        if self.scanner is None:
            return _Result(payload, data, [], text)
        payload["data"], found = quarantine_values(data, self.scanner)
        return _Result(payload, data, [f"{f.kind}: {f.excerpt}" for f in found], text)

    def _ok(self, call: ToolCall, tool: Tool, result: _Result, cctx: CallContext, start: float, *,
            cached: bool = False, proposal_id: str | None = None, shared: bool = True) -> CallOutcome:
        """The outcome of a call that ran (or a cache hit): recorded, and its result's texts grounded.
        ``shared``: ``result`` is kept elsewhere too (the READ cache), so the outcome gets its own copies."""
        payload, flags = (dict(result.payload), list(result.flags)) if shared else (result.payload, result.flags)
        if flags:
            cctx.flags.extend(f"{tool.name}: {flag}" for flag in flags)
            cctx.tracer.record(EventKind.CONTENT_FLAGGED, f"Untrusted content flagged in {tool.name}",
                               tool=tool.name, call_id=call.id, detail=flags)
        effect = tool._effect
        audit = self.audit if tool.effect is _READ else None
        arguments = self._redacted(tool, call.arguments)  # a copy: the event is built from it later
        if not cached:
            detail: dict[str, Any] = {"truncated": payload["truncated"]}
            if tool.artifacts is not None and (files := tool.artifacts(result.data)):
                detail["artifacts"] = files
            cctx.tracer.record_call(_EXECUTED, f"Run tool: {tool.name}", "human" if proposal_id else "code",
                                    tool.name, call.id, effect, arguments, "ok", proposal_id,
                                    (time.perf_counter() - start) * 1000, detail)
        if audit is not None:
            # one record per READ call, a cache hit too (who read what): group-committed (acknowledged
            # once its batch commits, and before any later proposal, approval or execution record:
            # see policy/audit.py)
            audit.append_deferred("executed", actor=cctx.principal.user_id, decided_by="cache" if cached else "code",
                                  tool=tool.name, trace_id=cctx.tracer.trace_id,
                                  detail={"arguments": arguments, **({"cached": True} if cached else {})})
        # only untrusted content needs vouching for, so whether the user asked for it is found out only
        # where there is some; a search over many documents is not the user pointing at one of them.
        # An undeclared tool's free text is content others wrote too; the user points at it by giving
        # the call's arguments (a listing the request only names holds text from anyone): ``Tool._vouchable``
        vouchable = tool._vouchable
        asked: bool | None = None
        grounding = cctx.grounding
        # a flagged result is not trusted, whoever wrote it
        for source, text in tool.sources(result.data, encoded=result.text):
            if flags:
                source = Source(source.kind, source.name, trusted=False)
            elif vouchable and not source.trusted:
                if asked is None:
                    asked = self._asked_by_user(call, tool, cctx, named=tool._named)
                if asked:
                    source = Source(source.kind, source.name, trusted=False, endorsed=True)
            grounding.add_later(text, source)  # no check of this call reads it: indexed when one reads it
        return CallOutcome(call, "ok", payload, effect, cached, 0.0, proposal_id, flags)

    @staticmethod
    def _asked_by_user(call: ToolCall, tool: Tool, cctx: CallContext, *, named: bool = True) -> bool:
        """The user pointed at what ``call`` fetched: they gave every argument, or, for a call without
        arguments (where ``named``), their request names what the tool reads ("the channel starting
        with External")."""
        given = [v for v in call.arguments.values() if v not in (None, "", [], {})]
        if not given:
            return named and tool.named_by(cctx.question)
        return all(any(s.kind == "user" for s in cctx.grounding.sources_of(v)) for v in given)

    async def _record_refusal(self, outcome: CallOutcome, exc: ModelFacingError, cctx: CallContext,
                              start: float) -> None:
        decided_by: DecidedBy = "policy" if isinstance(exc, (NotPermitted, ApprovalRequired)) else "code"
        failed = outcome.status == "error"
        kind = EventKind.CALL_FAILED if failed else EventKind.CALL_REFUSED
        title = f"Tool failed: {outcome.call.name}" if failed else f"Refused {outcome.call.name}: {exc.code}"
        internal = exc.internal if isinstance(exc, ToolFailed) else ""
        tool = self.registry.get(outcome.call.name)
        arguments = self._redacted(tool, outcome.call.arguments) if tool else dict(outcome.call.arguments)
        cctx.tracer.record(kind, title, decided_by=decided_by, tool=outcome.call.name, call_id=outcome.call.id,
                           effect=outcome.effect, arguments=arguments, status=outcome.status,
                           error_code=exc.code, ms=(time.perf_counter() - start) * 1000,
                           detail={"message": exc.message, **({"internal": internal} if internal else {})})
        event = "denied" if isinstance(exc, NotPermitted) else "refused" if outcome.status == "refused" else "failed"
        await self._audit(event, actor=cctx.principal.user_id, decided_by=decided_by, tool=outcome.call.name, cctx=cctx,
                    detail={"code": exc.code, "message": exc.message})

    def _redacted(self, tool: Tool, arguments: Mapping[str, Any]) -> dict[str, Any]:
        if not tool.redact:
            return dict(arguments)
        return redact_arguments(dict(arguments), tool.redact)

    async def _audit(self, event: str, *, actor: str, decided_by: str, tool: str, cctx: CallContext,
                     proposal_id: str = "", detail: dict[str, Any] | None = None) -> None:
        if self.audit is not None:
            await _off(self.audit.append, event, actor=actor, decided_by=decided_by, tool=tool, proposal_id=proposal_id,
                              trace_id=cctx.tracer.trace_id, detail=detail)


_P = ParamSpec("_P")
_T = TypeVar("_T")


def _off(fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> Coroutine[Any, Any, _T]:
    """``fn`` (a store's call, a tool's resource version) in a worker thread, to await: it may wait on a disk,
    a network or a lock another process holds, and a service's event loop must go on meanwhile (a hop costs
    ~0.2 ms, less than the commit it waits for)."""
    return asyncio.to_thread(fn, *args, **kwargs)


def _as_run(call: ToolCall, values: Mapping[str, Any], regrounded: Sequence[Regrounded]) -> ToolCall:
    """``call`` with the arguments grounding changed as they run: a date re-grounded, a filter left out."""
    arguments = dict(call.arguments)
    for changed in regrounded:
        if changed.argument in values:
            value = values[changed.argument]
            arguments[changed.argument] = value.isoformat() if isinstance(value, date) else value
        else:
            arguments.pop(changed.argument, None)
    return ToolCall(call.id, call.name, arguments)

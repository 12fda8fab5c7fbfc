"""Webhooks on proposal events: a proposal created, decided (approved, edited and approved, rejected) or
expired is POSTed as JSON to each ``[[webhooks]]`` receiver of the workspace.

A body has a top-level ``text`` (a chat tool's incoming webhook posts it as it is) beside the structured
``event`` and ``proposal``. With ``secret_env`` set, it is signed: ``X-Toolcrib-Signature: sha256=HEX``, the
HMAC-SHA256 of ``TIMESTAMP.BODY`` under the secret, ``TIMESTAMP`` being ``X-Toolcrib-Timestamp`` (``verify``
checks one). A delivery that is refused (not 2xx) or fails is retried with exponential backoff; every attempt
is appended to the delivery log (``.toolcrib/webhooks.jsonl``). Deliveries run on a background thread, so a
decision never waits for a receiver; ``close`` waits for those under way.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx

from toolcrib.config import WebhookEvent, WebhookSection
from toolcrib.errors import ConfigError
from toolcrib.policy.approvals import ApprovalStore
from toolcrib.policy.audit import redact_arguments
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Approval, Proposal, Review

SIGNATURE = "X-Toolcrib-Signature"
TIMESTAMP = "X-Toolcrib-Timestamp"


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The signature header's value for ``body`` sent at ``timestamp``."""
    return "sha256=" + hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()


def verify(secret: bytes, timestamp: str, body: bytes, signature: str, *, tolerance_s: float = 300.0,
           now: float | None = None) -> bool:
    """What a receiver checks: the signature matches, in constant time, and the timestamp is recent (a
    replayed old delivery is refused)."""
    try:
        age = abs((time.time() if now is None else now) - float(timestamp))
    except ValueError:
        return False
    return age <= tolerance_s and hmac.compare_digest(sign(secret, timestamp, body), signature)


class DeliveryLog:
    """Every delivery attempt, one JSON line each, appended under a lock (one file per host)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def append(self, entry: Mapping[str, Any]) -> None:
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")

    def entries(self) -> Iterator[dict[str, Any]]:
        if not self.path.exists():
            return
        with self._lock, self.path.open(encoding="utf-8") as lines:
            yield from (json.loads(line) for line in lines if line.strip())


def _call(proposal: Proposal) -> str:
    return f"{proposal.tool}({', '.join(f'{k}={json.dumps(v)}' for k, v in proposal.arguments.items())})"


def _redacted(proposal: Proposal | None, redact: Callable[[str], Sequence[str]]) -> Proposal | None:
    """The proposal with its tool's redacted fields hidden, as the audit record shows them."""
    if proposal is None or not (fields := redact(proposal.tool)):
        return proposal
    return replace(proposal, arguments=redact_arguments(proposal.arguments, fields))


def _text(event: WebhookEvent, proposal: Proposal, original: Proposal | None) -> str:
    """The one line a chat tool shows."""
    call = _call(proposal)
    if event == "created":
        return f"{proposal.requester} asks to run {call}: proposal {proposal.id} is waiting for approval."
    if event == "expired":
        return f"{call}, asked by {proposal.requester}, expired with no decision (proposal {proposal.id})."
    why = f': "{proposal.reason}"' if proposal.reason else ""
    if original is not None:
        return (f"{proposal.decided_by} edited {_call(original)} into {call} and approved it, for "
                f"{proposal.requester}{why} (proposal {proposal.id}, replacing {original.id}).")
    verb = "rejected" if proposal.status == "rejected" else "approved"
    return f"{proposal.decided_by} {verb} {call}, asked by {proposal.requester}{why} (proposal {proposal.id})."


class Notifier:
    """Sends proposal events to the workspace's webhooks, each on its own, retried, logged."""

    def __init__(self, hooks: Sequence[WebhookSection], workspace: str, log: DeliveryLog, *,
                 redact: Callable[[str], Sequence[str]] = lambda tool: (), env: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        env = os.environ if env is None else env
        self._hooks: list[tuple[WebhookSection, bytes | None]] = []
        for hook in hooks:
            secret = None
            if hook.secret_env is not None:
                value = env.get(hook.secret_env)
                if not value:
                    raise ConfigError(f"the webhook to {hook.url} is signed with the secret in ${hook.secret_env}, "
                                      "which is not set", key="webhooks.secret_env")
                secret = value.encode()
            self._hooks.append((hook, secret))
        self.workspace = workspace
        self.log = log
        self._redact = redact  # a tool's fields that never leave in clear (``@tool(redact=...)``)
        self._sleep = sleep
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="toolcrib-webhook")
        self._futures: set[Future[None]] = set()
        self._lock = threading.Lock()

    def notify(self, event: WebhookEvent, proposal: Proposal, original: Proposal | None = None) -> None:
        """Queue ``event`` for every webhook that takes it."""
        proposal = _redacted(proposal, self._redact) or proposal
        original = _redacted(original, self._redact)
        for hook, secret in self._hooks:
            if event not in hook.events:
                continue
            delivery = "whd_" + secrets.token_hex(8)
            payload = {"text": _text(event, proposal, original), "event": f"proposal.{event}",
                       "delivery_id": delivery, "workspace": self.workspace, "sent_at": time.time(),
                       "proposal": _public(proposal),
                       **({"supersedes": _public(original)} if original is not None else {})}
            future = self._pool.submit(self._deliver, hook, secret, delivery, event, payload)
            with self._lock:
                self._futures.add(future)
            future.add_done_callback(self._forget)

    def _forget(self, future: Future[None]) -> None:
        with self._lock:
            self._futures.discard(future)

    def _deliver(self, hook: WebhookSection, secret: bytes | None, delivery: str, event: WebhookEvent,
                 payload: dict[str, Any]) -> None:
        from toolcrib.models.network import ensure_network_allowed

        body = json.dumps(payload, ensure_ascii=False, sort_keys=True).encode()
        for attempt in range(1, hook.retries + 2):
            if attempt > 1:
                self._sleep(hook.backoff_s * 2 ** (attempt - 2))
            stamp = f"{time.time():.0f}"
            headers = {"Content-Type": "application/json", "User-Agent": "toolcrib-webhooks",
                       "X-Toolcrib-Event": f"proposal.{event}", "X-Toolcrib-Delivery": delivery, TIMESTAMP: stamp}
            if secret is not None:
                headers[SIGNATURE] = sign(secret, stamp, body)
            entry: dict[str, Any] = {"delivery_id": delivery, "event": f"proposal.{event}", "url": hook.url,
                                     "proposal_id": payload["proposal"]["id"], "attempt": attempt, "at": time.time()}
            try:
                ensure_network_allowed(hook.url)
                response = httpx.post(hook.url, content=body, headers=headers, timeout=hook.timeout_s)
                entry.update(status=response.status_code, ok=response.is_success)
            except Exception as exc:  # a receiver that is down or blocked: logged and retried, never raised
                entry.update(status=None, ok=False, error=f"{type(exc).__name__}: {exc}"[:300])
            self.log.append(entry)
            if entry["ok"]:
                return

    def flush(self, timeout_s: float = 30.0) -> None:
        """Wait for the deliveries queued so far (tests, and ``close``)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                pending = list(self._futures)
            if not pending or time.monotonic() > deadline:
                return
            pending[0].result(timeout=max(0.0, deadline - time.monotonic()))

    def close(self) -> None:
        self.flush()
        self._pool.shutdown(wait=False)


def _public(proposal: Proposal) -> dict[str, Any]:
    return {"id": proposal.id, "tool": proposal.tool, "arguments": proposal.arguments,
            "requester": proposal.requester, "tenant": proposal.tenant, "status": proposal.status,
            "decided_by": proposal.decided_by, "reason": proposal.reason, "hash": proposal.hash,
            "run_id": proposal.run_id, "created_at": proposal.created_at, "supersedes": proposal.supersedes}


class NotifyingApprovalStore(ApprovalStore):
    """An ApprovalStore that tells the workspace's webhooks what happened to each proposal; everything else
    is the wrapped store's."""

    def __init__(self, inner: ApprovalStore, notifier: Notifier) -> None:
        self.inner = inner
        self.notifier = notifier
        self.pending_ttl_s = inner.pending_ttl_s

    def propose(self, tool: str, arguments: Mapping[str, Any], requester: Principal, policy_version: str,
                resource_version: str, *, run_id: str = "", trace_id: str = "", review: Review | None = None,
                pending_ttl_s: float | None = None) -> Proposal:
        started = time.time()
        proposal = self.inner.propose(tool, arguments, requester, policy_version, resource_version, run_id=run_id,
                                      trace_id=trace_id, review=review, pending_ttl_s=pending_ttl_s)
        if proposal.created_at >= started:  # new, not the same call still waiting
            self.notifier.notify("created", proposal)
        return proposal

    def get(self, proposal_id: str) -> Proposal | None:
        return self.inner.get(proposal_id)

    def pending(self, tenant: str | None = None) -> list[Proposal]:
        return self.inner.pending(tenant)

    def expire_due(self) -> list[Proposal]:
        expired = self.inner.expire_due()
        for proposal in expired:
            self.notifier.notify("expired", proposal)
        return expired

    def abandon_stalled(self, limit_s: Callable[[str], float]) -> list[Proposal]:
        return self.inner.abandon_stalled(limit_s)

    def changes_between(self, start: float, end: float) -> list[tuple[Proposal, str, float]]:
        return self.inner.changes_between(start, end)

    def approval(self, proposal_id: str) -> Approval | None:
        return self.inner.approval(proposal_id)

    def _decided(self, proposal_id: str, original: Proposal | None = None) -> None:
        if (proposal := self.inner.get(proposal_id)) is not None:
            self.notifier.notify("decided", proposal, original)

    def approve(self, proposal_id: str, approver: Principal, *, ttl_s: float = 900,
                allow_self: bool = False) -> Approval:
        approval = self.inner.approve(proposal_id, approver, ttl_s=ttl_s, allow_self=allow_self)
        self._decided(proposal_id)
        return approval

    def edit(self, proposal_id: str, approver: Principal, arguments: Mapping[str, Any], resource_version: str,
             review: Review, *, reason: str = "", ttl_s: float = 900,
             allow_self: bool = False) -> tuple[Proposal, Approval]:
        edited, approval = self.inner.edit(proposal_id, approver, arguments, resource_version, review,
                                           reason=reason, ttl_s=ttl_s, allow_self=allow_self)
        self._decided(edited.id, self.inner.get(proposal_id))
        return edited, approval

    def reject(self, proposal_id: str, approver: Principal, reason: str = "") -> None:
        self.inner.reject(proposal_id, approver, reason)
        self._decided(proposal_id)

    def claim(self, proposal_id: str, expected_hash: str, *, tool: str | None = None,
              arguments: Mapping[str, Any] | None = None, current_resource_version: str | None = None,
              now: float | None = None) -> Approval:
        return self.inner.claim(proposal_id, expected_hash, tool=tool, arguments=arguments,
                                current_resource_version=current_resource_version, now=now)

    def finish(self, proposal_id: str, status: str, result: Mapping[str, Any]) -> None:
        self.inner.finish(proposal_id, status, result)

    def outcome(self, proposal_id: str) -> tuple[str, dict[str, Any]] | None:
        return self.inner.outcome(proposal_id)

    def close(self) -> None:
        self.notifier.close()
        self.inner.close()

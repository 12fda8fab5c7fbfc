"""A proposed WRITE/ACTUATE call, the human approval bound to its exact hash, and refusals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from toolcrib.errors import NotPermitted
from toolcrib.policy.canonical import canonical_json, sha256_hex

ProposalStatus = Literal[
    "pending", "approved", "rejected", "expired", "superseded", "executing", "executed", "failed",
    "outcome_unknown",
]
RefusalReason = Literal[
    "not_found", "not_approved", "rejected", "used", "expired", "edited", "stale",
    "self_approval", "not_an_approver", "superseded",
]

_REFUSAL_MESSAGES: dict[str, str] = {
    "not_found": "there is no such proposal",
    "not_approved": "the proposal has not been approved",
    "rejected": "the proposal was rejected",
    "used": "the approval has already been used",
    "expired": "the approval or proposal has expired; propose the call again",
    "edited": "the call differs from the one that was approved",
    "stale": "what the call would change has changed since approval; propose the call again",
    "self_approval": "a requester may not approve their own proposal",
    "not_an_approver": "this person may not approve this proposal",
    "superseded": "an approver edited this call; the edited proposal replaces it",
}


@dataclass(frozen=True)
class Review:
    """What the approver is shown besides the call: the question that led to it, where each argument's
    value was found (source labels; an empty list: the model wrote it), warnings, and on request which
    checks ran and what they found (``checks``: why a warning was or was not raised; not part of what an
    approval is bound to)."""

    question: str = ""
    provenance: dict[str, list[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "provenance": self.provenance, "warnings": self.warnings,
                "checks": self.checks}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Review:
        return cls(str(data.get("question", "")), {str(k): [str(s) for s in v] for k, v in
                                                   dict(data.get("provenance") or {}).items()},
                   [str(w) for w in data.get("warnings") or []], [str(c) for c in data.get("checks") or []])


def proposal_hash(
    tool: str,
    arguments: Mapping[str, Any],
    requester: str,
    tenant: str,
    policy_version: str,
    resource_version: str,
    review: Review | None = None,
) -> str:
    """SHA-256 over the canonical JSON of everything an approval is bound to: the call, who asked,
    the policy and resource versions, and where its arguments came from (with the warnings shown)."""
    bound: dict[str, Any] = {
        "tool": tool,
        "arguments": dict(arguments),
        "requester": requester,
        "tenant": tenant,
        "policy_version": policy_version,
        "resource_version": resource_version,
    }
    if review is not None and (review.provenance or review.warnings):
        bound["provenance"] = review.provenance
        bound["warnings"] = review.warnings
    return sha256_hex(canonical_json(bound))


def changed_values(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """What an edit changed: ``{argument: {"from": old, "to": new}}`` (an absent value is None)."""
    return {name: {"from": before.get(name), "to": after.get(name)} for name in sorted({*before, *after})
            if canonical_json({"v": before.get(name)}) != canonical_json({"v": after.get(name)})}


@dataclass(frozen=True)
class Proposal:
    """One call the model proposed and the application holds until a person decides."""

    id: str
    tool: str
    arguments: dict[str, Any]
    requester: str
    tenant: str
    policy_version: str
    resource_version: str
    hash: str
    created_at: float
    run_id: str = ""
    trace_id: str = ""
    status: str = "pending"
    decided_by: str = ""
    reason: str = field(default="", compare=False)
    review: Review = field(default_factory=Review)
    expires_at: float | None = field(default=None, compare=False)  # of its approval, once approved
    supersedes: str = ""  # the proposal an approver edited into this one
    superseded_by: str = ""  # the edited proposal that replaced this one
    pending_until: float | None = field(default=None, compare=False)  # an undecided proposal expires then


@dataclass(frozen=True)
class Approval:
    """A person's yes to one proposal hash: single use, expiring, approver recorded."""

    proposal_id: str
    proposal_hash: str
    approver: str
    decided_at: float
    expires_at: float
    used_at: float | None = None


class ApprovalRefused(NotPermitted):
    """An approval that cannot be given or used; ``reason`` says which rule refused it."""

    code = "approval_refused"

    def __init__(self, reason: RefusalReason, message: str | None = None, *,
                 decision: Mapping[str, Any] | None = None) -> None:
        super().__init__(message or _REFUSAL_MESSAGES[reason])
        self.reason: RefusalReason = reason
        self.decision = dict(decision or {})  # who decided and in what words, for the requester and the model

    def to_result(self) -> dict[str, Any]:
        result = super().to_result()
        result["error"]["reason"] = self.reason
        if self.decision:
            result["error"]["decision"] = self.decision
        return result

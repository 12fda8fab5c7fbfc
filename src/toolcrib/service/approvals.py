"""Approval routes: the proposals a caller may see, and deciding on them (approve, edit, reject, in bulk)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from toolcrib.service.caller import Caller, Served
from toolcrib.service.errors import NotFound

router = APIRouter()


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hash: str = Field(min_length=1, description="The proposal hash the approver was shown.")
    reason: str = Field("", max_length=2000, description="Why (the requester and the model see it).")


class EditDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    hash: str = Field(min_length=1, description="The proposal hash the approver was shown.")
    arguments: dict[str, Any] = Field(min_length=1, description="The argument values to change, by name.")
    reason: str = Field("", max_length=2000, description="Why (the requester and the model see it).")


class BulkItem(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, description="A proposal id.")
    hash: str = Field(min_length=1, description="The hash the approver was shown for it.")


class BulkDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["approve", "reject"]
    proposals: list[BulkItem] = Field(min_length=1, max_length=100)
    reason: str = Field("", max_length=2000, description="Why (recorded for each; the requester sees it).")


@router.get("/v1/proposals", tags=["approvals"])
def proposals(principal: Caller, svc: Served) -> list[dict[str, Any]]:
    """Pending proposals the caller may decide on, oldest first, with what the approver needs to see."""
    return svc.desk.pending(principal)


@router.get("/v1/proposals/{proposal_id}", tags=["approvals"])
def proposal(proposal_id: str, principal: Caller, svc: Served) -> dict[str, Any]:
    """One proposal: its requester's, or one the caller may approve."""
    found = svc.desk.visible(proposal_id, principal)
    if found is None:
        raise NotFound(f"no proposal '{proposal_id}'")
    return svc.desk.view(found)


@router.post("/v1/proposals/{proposal_id}/approve", tags=["approvals"])
def approve(proposal_id: str, body: Decision, principal: Caller, svc: Served) -> dict[str, Any]:
    """Approve the exact call whose hash the approver was shown; refusals say why in ``reason``."""
    return svc.desk.decide(proposal_id, principal, expected_hash=body.hash, reason=body.reason)


@router.post("/v1/proposals/{proposal_id}/edit", tags=["approvals"])
def edit(proposal_id: str, body: EditDecision, principal: Caller, svc: Served) -> dict[str, Any]:
    """Change argument values of the call whose hash the approver was shown and approve the changed call:
    it becomes a new proposal (returned: ``proposal_id``, ``hash``, ``changes``), the original is superseded.
    A value the tool's schema refuses answers 400 ``invalid_arguments``."""
    return svc.desk.edit(proposal_id, principal, body.arguments, reason=body.reason, expected_hash=body.hash)


@router.post("/v1/proposals/decide", tags=["approvals"])
def decide_many(body: BulkDecision, principal: Caller, svc: Served) -> dict[str, Any]:
    """Approve or reject several proposals in one action, each checked against its own hash, resource
    version and expiry and audited on its own; ``results`` has one entry per proposal, in order."""
    results = svc.desk.decide_many([(p.id, p.hash) for p in body.proposals], principal,
                                   reject=body.action == "reject", reason=body.reason)
    return {"results": results, "decided": sum(r["status"] != "refused" for r in results)}


@router.post("/v1/proposals/{proposal_id}/reject", tags=["approvals"])
def reject(proposal_id: str, body: Decision, principal: Caller, svc: Served) -> dict[str, Any]:
    """Reject a pending proposal (or revoke an unused approval)."""
    return svc.desk.decide(proposal_id, principal, reject=True, expected_hash=body.hash, reason=body.reason)

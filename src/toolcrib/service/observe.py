"""Routes that show what the workspace holds and did: the document index, the audit record, metrics."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import PlainTextResponse

from toolcrib.service.caller import Caller, Served

router = APIRouter()
_MAX_SEQ = 2**63 - 1  # the largest sequence number a store can hold


@router.get("/v1/ingest", tags=["workspace"])
def ingest(principal: Caller, svc: Served) -> dict[str, Any]:
    """The document index: the documents the caller may read and their chunks."""
    return svc.ingest_status(principal)


@router.get("/v1/audit", tags=["workspace"])
def audit(principal: Caller, svc: Served, after: Annotated[int, Query(ge=0, le=_MAX_SEQ)] = 0,
          limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
    """Audit records of the caller's tenant (approvers) or of the caller, after sequence number ``after``."""
    return svc.audit_view(principal, after, limit)


@router.get("/metrics", tags=["workspace"], response_class=PlainTextResponse)
def metrics(principal: Caller, svc: Served) -> PlainTextResponse:
    """Prometheus text format, this process."""
    return PlainTextResponse(svc.metrics.render(svc.gauges()), media_type="text/plain; version=0.0.4")

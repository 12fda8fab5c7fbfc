"""Health routes for load balancers and orchestrators (no credential needed)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from toolcrib.service.caller import Served

router = APIRouter()


@router.get("/healthz", tags=["health"])
async def healthz() -> dict[str, str]:
    """The process is up (no credential needed)."""
    return {"status": "ok"}


@router.get("/readyz", tags=["health"])
def readyz(svc: Served) -> JSONResponse:
    """The model is loaded and the stores answer (no credential needed)."""
    checks: dict[str, str] = {"model": "ok" if svc.ready else (svc.load_error or "loading")}
    for name, probe in (("approvals", lambda: svc.desk.approvals.pending("-")),
                        ("keys", lambda: svc.store.keys("-"))):
        try:
            probe()
            checks[name] = "ok"
        except Exception as exc:  # a store that cannot answer: not ready, say why
            checks[name] = f"{type(exc).__name__}"
    ok = all(v == "ok" for v in checks.values())
    return JSONResponse({"ready": ok, "checks": checks}, status_code=200 if ok else 503)

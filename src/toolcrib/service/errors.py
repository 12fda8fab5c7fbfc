"""The one shape of every error the service answers (``ErrorBody``), and the handlers that give each
error family its status code."""

from __future__ import annotations

import errno
import logging
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from toolcrib.auth.credentials import Unauthenticated
from toolcrib.errors import ModelFacingError, NotPermitted, OperatorError, StoreUnavailable, ToolcribError
from toolcrib.policy.proposals import ApprovalRefused
from toolcrib.service.slots import Busy

if TYPE_CHECKING:
    from toolcrib.service.metrics import Metrics

log = logging.getLogger("toolcrib.service")
_REFUSAL_STATUS = {"not_found": 404, "not_an_approver": 403, "self_approval": 403}


class NotFound(NotPermitted):
    """Nothing with this id that the caller may see (HTTP 404), whether or not it exists."""

    code = "not_found"


_NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})


def unavailable(exc: BaseException) -> StoreUnavailable | None:
    """The ``StoreUnavailable`` an error amounts to (a store's own, or a disk with no room under a file
    store), else None."""
    if isinstance(exc, StoreUnavailable):
        return exc
    if isinstance(exc, OSError) and exc.errno in _NO_ROOM:
        name = errno.errorcode.get(exc.errno or 0, "ENOSPC")
        found = StoreUnavailable(f"the disk under the workspace's state folder has no room ({name}); nothing more "
                                 "was recorded, try again once there is room", what="disk")
        found.__cause__ = exc
        return found
    return None


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}


class ErrorDetail(BaseModel):
    code: str
    message: str
    reason: str | None = None  # an approval refused: why (``used``, ``stale``, ``expired`` ...)


class ErrorBody(BaseModel):
    """Every error the service answers: a stable ``code`` and a message for people."""

    error: ErrorDetail


# every operation may answer these, always in the one error shape
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in (
        (400, "Bad request (a value the operation cannot take)"), (401, "No valid credential"),
        (403, "Not allowed for this caller"), (404, "Not found (or not the caller's)"),
        (405, "Method not allowed"), (409, "Conflict (an approval refused: used, stale, edited)"),
        (413, "Request body too large"), (422, "Invalid request"), (429, "Too many runs"),
        (500, "Internal error"), (503, "Busy or not ready; see Retry-After"))}


def error_response(status: int, code: str, message: str, headers: dict[str, str] | None = None,
                   **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status, headers=headers)



def install_handlers(app: FastAPI, metrics: Metrics) -> None:
    """Every error a route raises answered in the one shape, with its family's status code."""
    def _unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
        # what the driver said (an address, a path) goes to the log only
        log.warning("%s %s answered 503: %s (%r)", request.method, request.url.path, exc, exc.__cause__)
        metrics.inc("toolcrib_store_unavailable_total", "Requests answered 503 because a store was down.")
        return error_response(503, exc.code, str(exc), {"Retry-After": str(exc.retry_after)})

    @app.exception_handler(ToolcribError)
    async def controlled(request: Request, exc: ToolcribError) -> JSONResponse:
        message = str(exc)
        if isinstance(exc, StoreUnavailable):
            return _unavailable(request, exc)
        if isinstance(exc, Unauthenticated):
            return error_response(401, exc.code, message, {"WWW-Authenticate": "Bearer"})
        if isinstance(exc, Busy):
            return error_response(exc.status, exc.code, message, {"Retry-After": str(exc.retry_after)})
        if isinstance(exc, NotFound):
            return error_response(404, exc.code, message)
        if isinstance(exc, ApprovalRefused):
            return error_response(_REFUSAL_STATUS.get(exc.reason, 409), exc.code, message, reason=exc.reason)
        if isinstance(exc, NotPermitted):
            return error_response(403, exc.code, message)
        if isinstance(exc, ModelFacingError):
            return error_response(400, exc.code, message)
        if isinstance(exc, OperatorError):
            return error_response(500, "configuration", message)
        return error_response(500, "error", message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return error_response(422, "invalid_request", f"{where or 'body'}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # the framework's own refusals (an unknown route, a method not allowed, a body it cannot parse)
        # in toolcrib's error shape
        code = _HTTP_CODES.get(exc.status_code, "invalid_request" if exc.status_code < 500 else "internal_error")
        return error_response(exc.status_code, code, str(exc.detail), dict(exc.headers or {}) or None)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        if (down := unavailable(exc)) is not None:
            return _unavailable(request, down)
        log.exception("unexpected error")
        return error_response(500, "internal_error", f"unexpected error ({type(exc).__name__})")

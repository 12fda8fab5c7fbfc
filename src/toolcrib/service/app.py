"""The HTTP service: ``toolcrib serve``. An ASGI app (FastAPI) over one workspace.

Every endpoint but ``/healthz``, ``/readyz``, the API docs and the page's static files needs a bearer credential;
the principal comes from it, never from a body. Runs execute on a thread pool sized to the model slots
(``RunSlots``); everything else (approvals, run reads, health) runs beside them and never waits behind
a model. A user sees only their tenant's proposals and audit and only their own runs; anything else
answers 404, exactly like an id that does not exist.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from toolcrib.agent.answer import Answer
from toolcrib.agent.runner import Runner
from toolcrib.agent.runs import RunRecord
from toolcrib.auth.credentials import Authenticator, JWTVerifier, Unauthenticated, service_store
from toolcrib.desk import ApprovalDesk
from toolcrib.errors import ModelFacingError, NotPermitted, OperatorError, StoreUnavailable, ToolcribError
from toolcrib.models.base import Loadable, Model, Prefillable
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import ApprovalRefused
from toolcrib.service.links import add_links
from toolcrib.service.metrics import Metrics
from toolcrib.service.rates import RateWindows
from toolcrib.service.slots import Busy, RunSlots
from toolcrib.service.stream import EventQueue, answer_frames, error_frame, event_frames, sse
from toolcrib.trace.events import Event, EventKind
from toolcrib.trace.tracer import TraceExporter, json_bytes
from toolcrib.workspace import Workspace

log = logging.getLogger("toolcrib.service")
STATIC = Path(__file__).parent / "static"
MODEL_ENV = "TOOLCRIB_SERVE_MODEL"
_REFUSAL_STATUS = {"not_found": 404, "not_an_approver": 403, "self_approval": 403}
Job = Callable[[Runner, Sequence[TraceExporter]], Answer]


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


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a body naming a user or tenant is refused, never read

    question: str = Field(min_length=1, description="The question, as the user wrote it.")
    mode: Literal["single", "loop"] | None = Field(None, description="single (level 4) or loop (ReAct).")


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


class Service:
    """The parts one process shares between requests."""

    def __init__(self, ws: Workspace, model_spec: str | None = None) -> None:
        self.ws = ws
        ws.journal_traces = True  # a run's trace lines appended to this process's journal, not a file of its own
        self.model_spec = model_spec
        cfg = ws.config.service
        self.store = service_store(ws)
        self.rates = None if self.store.shared else RateWindows(self.store)  # PostgreSQL: one exact count
        self.auth = Authenticator(ws, self.store, JWTVerifier(cfg.jwt, ws.root) if cfg.jwt else None)
        self.desk = ApprovalDesk(ws)
        self.gate = ws.gate(approvals=self.desk.approvals, audit=self.desk.audit)
        self.runs = ws.run_store
        probe = ws.model(model_spec)
        self.shared_model: Model | None = probe if isinstance(probe, Loadable) else None  # one engine per process
        slots = cfg.model_slots or (1 if self.shared_model is not None else 8)
        self.slots = RunSlots(slots, cfg.queue, cfg.runs_per_user, cfg.queue_wait_s)
        self.pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="toolcrib-run")
        self.metrics = Metrics()
        self.ready = self.shared_model is None
        self.load_error = ""

    async def load(self) -> None:
        """Load the shared model and build a missing document index, off the event loop; ``/readyz`` says
        ready once both are done."""
        model = self.shared_model
        try:
            if isinstance(model, Loadable):
                await asyncio.get_running_loop().run_in_executor(self.pool, model.load)
            if self.ws.config.service.index_on_start and "vector_search" in self.ws.config.tools.builtin:
                await asyncio.to_thread(self.ws.ensure_index)
        except Exception as exc:  # /readyz reports it; the process stays up for health checks and approvals
            log.exception("loading the model or the document index failed")
            self.load_error = str(exc) if isinstance(exc, ToolcribError) else f"failed ({type(exc).__name__})"
            return
        self.ready = True
        if self.ws.config.service.warm_on_start and isinstance(model, Prefillable):
            await asyncio.to_thread(self._warm)  # not in the run pool: questions take the model between offers

    def _warm(self) -> None:
        """``toolcrib warm`` for every configured user, in the workspace's mode; a failure is logged, not fatal."""
        runner = self._runner()
        try:
            for user in self.ws.config.users:
                runner.warm(self.ws.principal(user))
        except Exception:
            log.exception("preparing the model's prompt cache failed; questions prepare it as they come")

    async def sweep_expired(self) -> None:
        """Every ``service.expiry_sweep_s``: record proposals past their time-to-live as expired (any
        process may; each is recorded once)."""
        while True:
            await asyncio.sleep(self.ws.config.service.expiry_sweep_s)
            try:
                await asyncio.to_thread(self.desk.sweep)
            except Exception:  # a store that cannot answer now: tried again next time
                log.exception("sweeping expired proposals failed")

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
        self.desk.close()
        self.store.close()
        self.runs.close()

    # -- who is asking --------------------------------------------------------------------------------

    async def limit_rate(self, principal: Principal) -> None:
        limit = self.ws.config.service.runs_per_minute
        if self.rates is not None:  # counted in memory (see RateWindows)
            count = self.rates.hit(principal.user_id)
        else:  # one upsert in PostgreSQL: off the event loop
            count = await asyncio.to_thread(self.store.hit, principal.user_id)
        if count > limit:
            raise Busy(f"more than {limit} runs a minute for {principal.user_id} (service.runs_per_minute)",
                       status=429, retry_after=60 - int(time.time()) % 60)

    # -- runs -----------------------------------------------------------------------------------------

    def _runner(self, mode: Literal["single", "loop"] | None = None) -> Runner:
        model = self.shared_model or self.ws.model(self.model_spec)  # a fresh fake per run; one engine per process
        return self.ws.runner(model, mode=mode, gate=self.gate)

    async def _start(self, principal: Principal, job: Job, mode: Literal["single", "loop"] | None,
                     exporters: Sequence[TraceExporter]) -> asyncio.Future[Answer]:
        """Start ``job`` on the run pool once a slot is free, with a runner made there (making one reads
        the model spec's files: off the event loop); the slot is released when the run ends, even if the
        client has gone (the run still finishes and is recorded)."""
        await self.limit_rate(principal)
        await self.slots.acquire(principal.user_id)

        def run() -> Answer:
            return job(self._runner(mode), exporters)

        future = asyncio.get_running_loop().run_in_executor(self.pool, run)
        future.add_done_callback(lambda f: self._ended(principal.user_id, f))
        return future

    def _ended(self, user: str, future: asyncio.Future[Answer]) -> None:
        self.slots.release(user)
        if future.cancelled() or future.exception() is not None:
            self.metrics.inc("toolcrib_runs_total", "Runs ended, by outcome.", outcome="error")
        else:
            self.metrics.inc("toolcrib_runs_total", "Runs ended, by outcome.", outcome=future.result().outcome)

    async def answer(self, principal: Principal, job: Job, mode: Literal["single", "loop"] | None = None) -> Answer:
        future = await self._start(principal, job, mode, ())
        return await asyncio.shield(future)

    async def stream(self, principal: Principal, job: Job, mode: Literal["single", "loop"] | None = None
                     ) -> StreamingResponse:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        future = await self._start(principal, job, mode, [EventQueue(loop, queue)])
        future.add_done_callback(lambda _: queue.put_nowait(None))

        async def frames() -> AsyncIterator[bytes]:
            finish: Event | None = None
            ended = False
            while not ended:
                batch = [await queue.get()]
                while not queue.empty():  # what has arrived goes in one chunk
                    batch.append(queue.get_nowait())
                chunk: list[bytes] = []
                for event in batch:
                    if event is None:
                        ended = True
                    elif event.kind is EventKind.RUN_FINISHED:
                        finish = event  # sent after the Answer
                    else:
                        chunk.extend(sse(frame) for frame in event_frames(event))
                if chunk:
                    yield b"".join(chunk)
            try:
                answer = future.result()
            except Exception as exc:
                if (down := unavailable(exc)) is not None:
                    log.warning("run failed: %s (%r)", down, down.__cause__)
                    yield sse(error_frame(down.code, str(down)))
                    return
                if isinstance(exc, ToolcribError):
                    yield sse(error_frame(getattr(exc, "code", "error"), str(exc)))
                    return
                log.exception("run failed")
                yield sse(error_frame("internal_error", f"the run failed ({type(exc).__name__})"))
                return
            closing = answer_frames(answer) + (event_frames(finish) if finish is not None else [])
            yield b"".join(sse(frame) for frame in closing)

        return StreamingResponse(frames(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def respond(self, request: Request, principal: Principal, job: Job,
                      mode: Literal["single", "loop"] | None = None) -> Response:
        if "text/event-stream" in request.headers.get("accept", ""):
            return await self.stream(principal, job, mode)
        answer = (await self.answer(principal, job, mode)).to_dict()
        return Response(json_bytes(answer), media_type="application/json")

    # -- reads ----------------------------------------------------------------------------------------

    def _own_run(self, run_id: str, principal: Principal) -> RunRecord:
        record = self.runs.get(run_id)
        if record is None or record.user_id != principal.user_id or record.tenant != principal.tenant:
            raise NotFound(f"no run '{run_id}'")
        return record

    def run_view(self, run_id: str, principal: Principal) -> dict[str, Any]:
        record = self._own_run(run_id, principal)
        out = record.to_dict()
        del out["paused"]
        ids = dict.fromkeys(e["proposal_id"] for e in record.events
                            if e.get("kind") == EventKind.CALL_HELD.value and e.get("proposal_id"))
        views = []
        for pid in ids:
            while pid and (found := self.desk.approvals.get(pid)) is not None:  # an edit: its replacement too
                views.append(self.desk.view(found))
                pid = found.superseded_by
        out["proposals"] = views
        return out

    def artifact(self, run_id: str, artifact_id: str, principal: Principal) -> tuple[Path, dict[str, Any]]:
        """A file a tool of the caller's run produced (as its ``call_executed`` event lists it), and that
        listing; NotFound for anything else, whatever is on disk."""
        record = self._own_run(run_id, principal)
        listed = next((a for e in record.events if e.get("kind") == EventKind.CALL_EXECUTED.value
                       for a in (e.get("detail") or {}).get("artifacts") or () if a.get("id") == artifact_id), None)
        root = self.ws.artifacts_dir.resolve()
        path = (root / artifact_id).resolve()
        if listed is None or not path.is_relative_to(root):
            raise NotFound(f"run '{run_id}' produced no file '{artifact_id}'")
        if not path.is_file():
            raise NotFound(f"the file '{artifact_id}' is no longer kept")
        return path, listed

    def ingest_status(self, principal: Principal) -> dict[str, Any]:
        index = self.ws.index()
        settings = index.settings()
        groups = {*principal.groups, "*"}
        documents = [{"doc_id": m.doc_id, "title": m.title, "version": m.version, "trusted": m.trusted}
                     for m in index.documents().values() if groups & set(m.access)]
        return {"indexed": settings is not None, "documents": sorted(documents, key=lambda d: d["doc_id"]),
                "chunks": index.count(sorted(groups)) if settings is not None else 0,
                "embedder": settings.embedder if settings else None}

    def audit_view(self, principal: Principal, after: int, limit: int) -> list[dict[str, Any]]:
        """The caller's tenant's audit records if they approve anything, else their own."""
        users = self.ws.config.users
        approver = any(self.ws.policy.may_approve(principal, t) for t in self.ws.registry)
        actors = ({u for u, s in users.items() if s.tenant == principal.tenant} if approver
                  else {principal.user_id})
        out = []
        for record in self.desk.audit.records(after_seq=after):
            if record.actor in actors:
                out.append({**record.body(), "hash": record.hash})
                if len(out) >= limit:
                    break
        return out

    def gauges(self) -> dict[str, tuple[str, float]]:
        return {"toolcrib_runs_running": ("Runs in progress in this process.", self.slots.running),
                "toolcrib_runs_waiting": ("Runs waiting for a model slot in this process.", self.slots.waiting),
                "toolcrib_run_slots": ("Model slots in this process.", self.slots.slots),
                "toolcrib_ready": ("1 once the model is loaded.", 1.0 if self.ready else 0.0)}


async def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> Principal:
    """The principal the request's bearer credential stands for (401 otherwise): from memory on the event
    loop for a key checked before and unchanged since, else from the key store on a thread."""
    service: Service = request.app.state.service
    known = service.auth.remembered(authorization)
    if known is not None:
        return known
    return await asyncio.to_thread(service.auth.principal, authorization)


Caller = Annotated[Principal, Depends(_caller)]


class BodyLimit:
    """Refuses a request body over ``limit`` bytes with 413, whether or not it declares its length."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _BodyTooLarge
            return message

        try:
            await self.app(scope, counted, send)
        except _BodyTooLarge:
            await _too_large(self.limit)(scope, receive, send)


class Measured:
    """Counts each HTTP request by route and status and observes its seconds to the response's start (a
    plain ASGI middleware: Starlette's ``BaseHTTPMiddleware`` ran every request through a task group and
    a memory stream, ~0.3 ms)."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def measured(message: Message) -> None:
            if message["type"] == "http.response.start":
                path = getattr(scope.get("route"), "path", "unmatched")
                self.metrics.observe(time.perf_counter() - started, route=path)
                self.metrics.inc("toolcrib_requests_total", "HTTP requests, by route and status.", route=path,
                                 status=str(message["status"]))
            await send(message)

        await self.app(scope, receive, measured)


class JSONBodies:
    """Reads every request body as JSON, whatever ``Content-Type`` says (``curl -d`` sends a form type)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in ("POST", "PUT", "PATCH"):
            headers = [(k, v) for k, v in scope["headers"] if k != b"content-type"]
            scope["headers"] = [*headers, (b"content-type", b"application/json")]  # in place: routing writes back
        await self.app(scope, receive, send)


class _BodyTooLarge(Exception):
    pass


def _too_large(limit: int) -> JSONResponse:
    return _error(413, "too_large", f"the request body is over {limit} bytes (service.max_body_bytes)")


_MAX_SEQ = 2**63 - 1  # the largest sequence number a store can hold
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 413: "too_large"}


class ErrorDetail(BaseModel):
    code: str
    message: str
    reason: str | None = None  # an approval refused: why (``used``, ``stale``, ``expired`` ...)


class ErrorBody(BaseModel):
    """Every error the service answers: a stable ``code`` and a message for people."""

    error: ErrorDetail


# every operation may answer these, always in the one error shape
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text} for status, text in (
        (400, "Bad request (a value the operation cannot take)"), (401, "No valid credential"),
        (403, "Not allowed for this caller"), (404, "Not found (or not the caller's)"),
        (405, "Method not allowed"), (409, "Conflict (an approval refused: used, stale, edited)"),
        (413, "Request body too large"), (422, "Invalid request"), (429, "Too many runs"),
        (500, "Internal error"), (503, "Busy or not ready; see Retry-After"))}


def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None,
           **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status, headers=headers)


def create_app(ws: Workspace | None = None, *, model_spec: str | None = None) -> FastAPI:
    """The service over ``ws`` (default: $TOOLCRIB_WORKSPACE, else the demo)."""
    ws = ws or Workspace.open()
    svc = Service(ws, model_spec)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        loading = asyncio.create_task(svc.load())
        sweeping = asyncio.create_task(svc.sweep_expired())
        yield
        loading.cancel()
        sweeping.cancel()
        svc.close()

    app = FastAPI(title="toolcrib", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  responses=_ERROR_RESPONSES,
                  description="The model proposes, the application decides: ask questions over a workspace's "
                              "tools and documents, stream each run, and decide on held calls.")
    app.state.service = svc
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        """FastAPI's document, with the links from an answer to its run, proposals, decisions and resume."""
        if app.openapi_schema is None:
            app.openapi_schema = add_links(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    app.add_middleware(JSONBodies)
    app.add_middleware(BodyLimit, limit=ws.config.service.max_body_bytes)

    app.add_middleware(Measured, metrics=svc.metrics)

    def _unavailable(request: Request, exc: StoreUnavailable) -> JSONResponse:
        # what the driver said (an address, a path) goes to the log only
        log.warning("%s %s answered 503: %s (%r)", request.method, request.url.path, exc, exc.__cause__)
        svc.metrics.inc("toolcrib_store_unavailable_total", "Requests answered 503 because a store was down.")
        return _error(503, exc.code, str(exc), {"Retry-After": str(exc.retry_after)})

    @app.exception_handler(ToolcribError)
    async def controlled(request: Request, exc: ToolcribError) -> JSONResponse:
        message = str(exc)
        if isinstance(exc, StoreUnavailable):
            return _unavailable(request, exc)
        if isinstance(exc, Unauthenticated):
            return _error(401, exc.code, message, {"WWW-Authenticate": "Bearer"})
        if isinstance(exc, Busy):
            return _error(exc.status, exc.code, message, {"Retry-After": str(exc.retry_after)})
        if isinstance(exc, NotFound):
            return _error(404, exc.code, message)
        if isinstance(exc, ApprovalRefused):
            return _error(_REFUSAL_STATUS.get(exc.reason, 409), exc.code, message, reason=exc.reason)
        if isinstance(exc, NotPermitted):
            return _error(403, exc.code, message)
        if isinstance(exc, ModelFacingError):
            return _error(400, exc.code, message)
        if isinstance(exc, OperatorError):
            return _error(500, "configuration", message)
        return _error(500, "error", message)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(422, "invalid_request", f"{where or 'body'}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # the framework's own refusals (an unknown route, a method not allowed, a body it cannot parse)
        # in toolcrib's error shape
        code = _HTTP_CODES.get(exc.status_code, "invalid_request" if exc.status_code < 500 else "internal_error")
        return _error(exc.status_code, code, str(exc.detail), dict(exc.headers or {}) or None)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        if (down := unavailable(exc)) is not None:
            return _unavailable(request, down)
        log.exception("unexpected error")
        return _error(500, "internal_error", f"unexpected error ({type(exc).__name__})")

    # -- health ---------------------------------------------------------------------------------------

    @app.get("/healthz", tags=["health"])
    async def healthz() -> dict[str, str]:
        """The process is up (no credential needed)."""
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    def readyz() -> JSONResponse:
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

    # -- runs -----------------------------------------------------------------------------------------

    @app.get("/v1/me", tags=["runs"])
    def me(principal: Caller) -> dict[str, Any]:
        """Who the credential stands for, and whether they approve anything."""
        user = ws.config.users.get(principal.user_id)
        return {"user": principal.user_id, "name": principal.display_name, "tenant": principal.tenant,
                "workspace": ws.config.workspace.name,
                "groups": sorted(principal.groups), "role": user.role if user else "",
                "approver": any(ws.policy.may_approve(principal, t) for t in ws.registry)}

    @app.post("/v1/ask", tags=["runs"], responses={200: {"content": {"text/event-stream": {}}}})
    async def ask(body: AskRequest, request: Request, principal: Caller) -> Response:
        """Answer a question. ``Accept: text/event-stream`` streams the run's events (AG-UI 1.0) and then
        the Answer; otherwise the Answer exactly as ``toolcrib ask --json`` prints it."""
        if len(body.question) > ws.config.service.max_question_chars:
            raise ModelFacingError(f"the question is over {ws.config.service.max_question_chars} characters",
                                   code="too_long")

        def job(runner: Runner, exporters: Sequence[TraceExporter]) -> Answer:
            return runner.ask(body.question, principal, mode=body.mode, exporters=exporters)

        return await svc.respond(request, principal, job, body.mode)

    @app.get("/v1/runs", tags=["runs"])
    def runs(principal: Caller, limit: Annotated[int, Query(ge=1, le=100)] = 20) -> list[dict[str, Any]]:
        """The caller's runs, newest first."""
        return [r.summary() for r in svc.runs.for_user(principal.user_id, limit=limit)
                if r.tenant == principal.tenant]

    @app.get("/v1/runs/{run_id}", tags=["runs"])
    def run(run_id: str, principal: Caller) -> dict[str, Any]:
        """The run (the caller's own), its latest Answer, every event, and its proposals with their status."""
        return svc.run_view(run_id, principal)

    @app.get("/v1/runs/{run_id}/artifacts/{artifact_id:path}", tags=["runs"], response_class=FileResponse)
    def artifact(run_id: str, artifact_id: str, principal: Caller) -> FileResponse:
        """A file a tool of the caller's run produced (a chart of the code interpreter), as an attachment."""
        path, listed = svc.artifact(run_id, artifact_id, principal)
        # never rendered on this origin (an SVG or HTML file is script): downloaded, sniffing off, sandboxed
        return FileResponse(path, media_type=str(listed.get("media_type") or "application/octet-stream"),
                            filename=str(listed.get("name") or path.name), content_disposition_type="attachment",
                            headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
                                     "Cache-Control": "private, no-store"})

    @app.post("/v1/runs/{run_id}/resume", tags=["runs"])
    async def resume(run_id: str, request: Request, principal: Caller) -> Response:
        """Continue a run paused for approval (on any process): approved calls run exactly once."""
        record = await asyncio.to_thread(svc.runs.get, run_id)
        if record is None or record.user_id != principal.user_id or record.paused is None:
            raise NotFound(f"no paused run '{run_id}'")

        def job(runner: Runner, exporters: Sequence[TraceExporter]) -> Answer:
            return runner.resume(run_id, principal, exporters=exporters)

        return await svc.respond(request, principal, job)

    # -- approvals ------------------------------------------------------------------------------------

    @app.get("/v1/proposals", tags=["approvals"])
    def proposals(principal: Caller) -> list[dict[str, Any]]:
        """Pending proposals the caller may decide on, oldest first, with what the approver needs to see."""
        return svc.desk.pending(principal)

    @app.get("/v1/proposals/{proposal_id}", tags=["approvals"])
    def proposal(proposal_id: str, principal: Caller) -> dict[str, Any]:
        """One proposal: its requester's, or one the caller may approve."""
        found = svc.desk.visible(proposal_id, principal)
        if found is None:
            raise NotFound(f"no proposal '{proposal_id}'")
        return svc.desk.view(found)

    @app.post("/v1/proposals/{proposal_id}/approve", tags=["approvals"])
    def approve(proposal_id: str, body: Decision, principal: Caller) -> dict[str, Any]:
        """Approve the exact call whose hash the approver was shown; refusals say why in ``reason``."""
        return svc.desk.decide(proposal_id, principal, expected_hash=body.hash, reason=body.reason)

    @app.post("/v1/proposals/{proposal_id}/edit", tags=["approvals"])
    def edit(proposal_id: str, body: EditDecision, principal: Caller) -> dict[str, Any]:
        """Change argument values of the call whose hash the approver was shown and approve the changed call:
        it becomes a new proposal (returned: ``proposal_id``, ``hash``, ``changes``), the original is superseded.
        A value the tool's schema refuses answers 400 ``invalid_arguments``."""
        return svc.desk.edit(proposal_id, principal, body.arguments, reason=body.reason, expected_hash=body.hash)

    @app.post("/v1/proposals/decide", tags=["approvals"])
    def decide_many(body: BulkDecision, principal: Caller) -> dict[str, Any]:
        """Approve or reject several proposals in one action, each checked against its own hash, resource
        version and expiry and audited on its own; ``results`` has one entry per proposal, in order."""
        results = svc.desk.decide_many([(p.id, p.hash) for p in body.proposals], principal,
                                       reject=body.action == "reject", reason=body.reason)
        return {"results": results, "decided": sum(r["status"] != "refused" for r in results)}

    @app.post("/v1/proposals/{proposal_id}/reject", tags=["approvals"])
    def reject(proposal_id: str, body: Decision, principal: Caller) -> dict[str, Any]:
        """Reject a pending proposal (or revoke an unused approval)."""
        return svc.desk.decide(proposal_id, principal, reject=True, expected_hash=body.hash, reason=body.reason)

    # -- workspace ------------------------------------------------------------------------------------

    @app.get("/v1/ingest", tags=["workspace"])
    def ingest(principal: Caller) -> dict[str, Any]:
        """The document index: the documents the caller may read and their chunks."""
        return svc.ingest_status(principal)

    @app.get("/v1/audit", tags=["workspace"])
    def audit(principal: Caller, after: Annotated[int, Query(ge=0, le=_MAX_SEQ)] = 0,
              limit: Annotated[int, Query(ge=1, le=1000)] = 100) -> list[dict[str, Any]]:
        """Audit records of the caller's tenant (approvers) or of the caller, after sequence number ``after``."""
        return svc.audit_view(principal, after, limit)

    @app.get("/metrics", tags=["workspace"], response_class=PlainTextResponse)
    def metrics(principal: Caller) -> PlainTextResponse:
        """Prometheus text format, this process."""
        return PlainTextResponse(svc.metrics.render(svc.gauges()), media_type="text/plain; version=0.0.4")

    # -- the page -------------------------------------------------------------------------------------

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _api_docs(app)
    return app


def _api_docs(app: FastAPI) -> None:
    """Interactive API docs at ``/docs``: Swagger UI from files a package bundles (fastapi-offline, in the
    ``server`` extra), never from a CDN, so they work where nothing outside can be reached."""
    try:
        import fastapi_offline
    except ImportError:  # an older install without it: no /docs, the rest of the service is unchanged
        return
    assets = Path(fastapi_offline.__file__).parent / "static"

    @app.get("/docs", include_in_schema=False)
    async def api_docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url="/openapi.json", title="toolcrib API",
                                   swagger_js_url="/docs/assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs/assets/swagger-ui.css",
                                   swagger_favicon_url="/docs/assets/favicon.png")

    app.mount("/docs/assets", StaticFiles(directory=assets), name="docs-assets")


def app_from_env() -> FastAPI:
    """The app factory ``toolcrib serve --workers N`` gives each worker process (workspace and model
    spec from the environment)."""
    return create_app(Workspace.open(os.environ.get("TOOLCRIB_WORKSPACE") or None),
                      model_spec=os.environ.get(MODEL_ENV) or None)

"""The parts one ``toolcrib serve`` process shares between requests (``Service``): the stores, the gate,
the approval desk, the model slots and the runs in progress, and what a route asks of them."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from toolcrib.agent.answer import Answer
from toolcrib.agent.runner import Runner
from toolcrib.agent.runs import RunRecord
from toolcrib.auth.credentials import Authenticator, JWTVerifier, service_store
from toolcrib.desk import ApprovalDesk
from toolcrib.errors import ToolcribError
from toolcrib.models.base import Loadable, Model, Prefillable
from toolcrib.policy.principal import Principal
from toolcrib.service.errors import NotFound, unavailable
from toolcrib.service.metrics import Metrics
from toolcrib.service.rates import RateWindows
from toolcrib.service.slots import Busy, RunSlots
from toolcrib.service.stream import EventQueue, answer_frames, error_frame, event_frames, sse
from toolcrib.trace.events import Event, EventKind
from toolcrib.trace.tracer import TraceExporter, json_bytes
from toolcrib.workspace import Workspace

log = logging.getLogger("toolcrib.service")
Job = Callable[[Runner, Sequence[TraceExporter]], Awaitable[Answer]]


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
        self._running: set[asyncio.Task[Answer]] = set()  # held until each ends: the loop keeps weak refs
        self.workers: ThreadPoolExecutor | None = None
        self.metrics = Metrics()
        self.ready = self.shared_model is None
        self.load_error = ""

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Give ``loop`` a worker pool for what runs wait on (store commits, blocking tools and model replies,
        key checks): asyncio's default (cores + 4 threads) would leave runs waiting for a thread while
        others wait on a locked table."""
        self.workers = ThreadPoolExecutor(max_workers=max(32, 4 * self.slots.slots), thread_name_prefix="toolcrib")
        loop.set_default_executor(self.workers)

    async def load(self) -> None:
        """Load the shared model and build a missing document index, off the event loop; ``/readyz`` says
        ready once both are done."""
        model = self.shared_model
        try:
            if isinstance(model, Loadable):
                await asyncio.to_thread(model.load)
            if self.ws.config.service.index_on_start and "vector_search" in self.ws.config.tools.builtin:
                await asyncio.to_thread(self.ws.ensure_index)
        except Exception as exc:  # /readyz reports it; the process stays up for health checks and approvals
            log.exception("loading the model or the document index failed")
            self.load_error = str(exc) if isinstance(exc, ToolcribError) else f"failed ({type(exc).__name__})"
            return
        self.ready = True
        if self.ws.config.service.warm_on_start and isinstance(model, Prefillable):
            await asyncio.to_thread(self._warm)  # questions take the model between offers

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
        for task in self._running:
            task.cancel()
        if self.workers is not None:
            self.workers.shutdown(wait=False, cancel_futures=True)
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
                     exporters: Sequence[TraceExporter]) -> asyncio.Task[Answer]:
        """Start ``job`` as a task on this event loop once a slot is free; the slot is released when the run
        ends, even if the client has gone (the run still finishes and is recorded). The run awaits the model,
        its tools and its stores: what blocks (a backend's reply, a plain tool, a store's commit, which may
        wait on a table another process has locked) runs in a worker thread (``start``), so one run waiting
        never stalls the others (``benchmarks/chaos.py``: a held audit table lock)."""
        await self.limit_rate(principal)
        await self.slots.acquire(principal.user_id)
        try:
            task = asyncio.ensure_future(job(self._runner(mode), exporters))
        except BaseException:
            self.slots.release(principal.user_id)
            raise
        self._running.add(task)
        task.add_done_callback(lambda t: self._ended(principal.user_id, t))
        return task

    def _ended(self, user: str, future: asyncio.Task[Answer]) -> None:
        self._running.discard(future)
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

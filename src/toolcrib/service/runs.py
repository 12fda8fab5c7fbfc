"""Run routes: who the caller is, asking, the caller's runs and their files, resuming a paused run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import FileResponse, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator

from toolcrib.agent.answer import Answer
from toolcrib.agent.request import question_problem
from toolcrib.agent.runner import Runner
from toolcrib.errors import ModelFacingError
from toolcrib.service.caller import Caller, Served
from toolcrib.service.errors import NotFound
from toolcrib.trace.tracer import TraceExporter

router = APIRouter()


class AskRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a body naming a user or tenant is refused, never read

    question: str = Field(min_length=1, json_schema_extra={"pattern": r"\S"},
                          description="The question, as the user wrote it (not only spaces).")
    mode: Literal["single", "loop"] | None = Field(None, description="single (level 4) or loop (ReAct).")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, question: str) -> str:
        if not question.strip():  # the schema's pattern, with the words the CLI uses
            raise ValueError(question_problem(question))
        return question


@router.get("/v1/me", tags=["runs"])
def me(principal: Caller, svc: Served) -> dict[str, Any]:
    """Who the credential stands for, and whether they approve anything."""
    user = svc.ws.config.users.get(principal.user_id)
    return {"user": principal.user_id, "name": principal.display_name, "tenant": principal.tenant,
            "workspace": svc.ws.config.workspace.name,
            "groups": sorted(principal.groups), "role": user.role if user else "",
            "approver": any(svc.ws.policy.may_approve(principal, t) for t in svc.ws.registry)}


@router.post("/v1/ask", tags=["runs"], responses={200: {"content": {"text/event-stream": {}}}})
async def ask(body: AskRequest, request: Request, principal: Caller, svc: Served) -> Response:
    """Answer a question. ``Accept: text/event-stream`` streams the run's events (AG-UI 1.0) and then
    the Answer; otherwise the Answer exactly as ``toolcrib ask --json`` prints it."""
    if problem := question_problem(body.question, svc.ws.config.service.max_question_chars):
        raise ModelFacingError(problem, code="too_long")  # a blank one never gets here: see AskRequest

    def job(runner: Runner, exporters: Sequence[TraceExporter]) -> Awaitable[Answer]:
        return runner.aask(body.question, principal, mode=body.mode, exporters=exporters)

    return await svc.respond(request, principal, job, body.mode)


@router.get("/v1/runs", tags=["runs"])
def runs(principal: Caller, svc: Served, limit: Annotated[int, Query(ge=1, le=100)] = 20) -> list[dict[str, Any]]:
    """The caller's runs, newest first."""
    return [r.summary() for r in svc.runs.for_user(principal.user_id, limit=limit)
            if r.tenant == principal.tenant]


@router.get("/v1/runs/{run_id}", tags=["runs"])
def run(run_id: str, principal: Caller, svc: Served) -> dict[str, Any]:
    """The run (the caller's own), its latest Answer, every event, and its proposals with their status."""
    return svc.run_view(run_id, principal)


@router.get("/v1/runs/{run_id}/artifacts/{artifact_id:path}", tags=["runs"], response_class=FileResponse)
def artifact(run_id: str, artifact_id: str, principal: Caller, svc: Served) -> FileResponse:
    """A file a tool of the caller's run produced (a chart of the code interpreter), as an attachment."""
    path, listed = svc.artifact(run_id, artifact_id, principal)
    # never rendered on this origin (an SVG or HTML file is script): downloaded, sniffing off, sandboxed
    return FileResponse(path, media_type=str(listed.get("media_type") or "application/octet-stream"),
                        filename=str(listed.get("name") or path.name), content_disposition_type="attachment",
                        headers={"X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
                                 "Cache-Control": "private, no-store"})


@router.post("/v1/runs/{run_id}/resume", tags=["runs"])
async def resume(run_id: str, request: Request, principal: Caller, svc: Served) -> Response:
    """Continue a run paused for approval (on any process): approved calls run exactly once."""
    record = await asyncio.to_thread(svc.runs.get, run_id)
    if record is None or record.user_id != principal.user_id or record.paused is None:
        raise NotFound(f"no paused run '{run_id}'")

    def job(runner: Runner, exporters: Sequence[TraceExporter]) -> Awaitable[Answer]:
        return runner.aresume(run_id, principal, exporters=exporters)

    return await svc.respond(request, principal, job)

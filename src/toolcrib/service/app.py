"""The HTTP service: ``toolcrib serve``. An ASGI app (FastAPI) over one workspace.

Every endpoint but ``/healthz``, ``/readyz``, the API docs and the page's static files needs a bearer credential;
the principal comes from it, never from a body. Runs execute on a thread pool sized to the model slots
(``RunSlots``); everything else (approvals, run reads, health) runs beside them and never waits behind
a model. A user sees only their tenant's proposals and audit and only their own runs; anything else
answers 404, exactly like an id that does not exist.

``create_app`` assembles the routers, one module per resource: ``health``, ``runs``, ``approvals``,
``observe`` (index, audit, metrics) and ``page``; the shared parts are ``process.Service``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI

from toolcrib.service import approvals, health, observe, page, runs
from toolcrib.service.errors import ERROR_RESPONSES, install_handlers
from toolcrib.service.links import add_links
from toolcrib.service.middleware import BodyLimit, JSONBodies, Measured
from toolcrib.service.process import Service
from toolcrib.workspace import Workspace

MODEL_ENV = "TOOLCRIB_SERVE_MODEL"


def create_app(ws: Workspace | None = None, *, model_spec: str | None = None) -> FastAPI:
    """The service over ``ws`` (default: $TOOLCRIB_WORKSPACE, else the demo)."""
    ws = ws or Workspace.open()
    svc = Service(ws, model_spec)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc.start(asyncio.get_running_loop())
        loading = asyncio.create_task(svc.load())
        sweeping = asyncio.create_task(svc.sweep_expired())
        yield
        loading.cancel()
        sweeping.cancel()
        svc.close()

    app = FastAPI(title="toolcrib", version="1", lifespan=lifespan, docs_url=None, redoc_url=None,
                  responses=ERROR_RESPONSES,
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

    install_handlers(app, svc.metrics)
    for router in (health.router, runs.router, approvals.router, observe.router, page.router):
        app.include_router(router)
    page.mount(app)
    return app


def app_from_env() -> FastAPI:
    """The app factory ``toolcrib serve --workers N`` gives each worker process (workspace and model
    spec from the environment)."""
    return create_app(Workspace.open(os.environ.get("TOOLCRIB_WORKSPACE") or None),
                      model_spec=os.environ.get(MODEL_ENV) or None)

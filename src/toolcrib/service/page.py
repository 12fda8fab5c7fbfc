"""The web page (``/`` and its static files) and the interactive API docs (``/docs``)."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

STATIC = Path(__file__).parent / "static"
router = APIRouter()


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


def mount(app: FastAPI) -> None:
    """The page's static files and the API docs, mounted on the app (a router carries no mounts)."""
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    _api_docs(app)


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


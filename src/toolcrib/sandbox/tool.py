"""The model-facing ``code_interpreter`` tool: model-written Python for calculations and data analysis,
run in a bubblewrap sandbox (``toolcrib.sandbox.bwrap``).

Effect class READ, and why that is honest: the code cannot change anything outside its own scratch
space. It sees no network (its own network namespace), no workspace, database, home folder or ``/etc``
(they are not mounted), the Python installation and its inputs read-only, and a private, size-limited
tmpfs that disappears when it ends; it runs as an unprivileged user that cannot gain privileges, under
CPU, memory, process, file-size, wall-time and output limits. What it leaves behind is only what
toolcrib itself copies out of scratch: the files it produced, kept as artifacts under the workspace's
artifacts folder (``<state>/artifacts/code_interpreter/<run id>/``), recorded in the trace's
``call_executed`` event (``detail.artifacts``) and downloadable from the service by whoever may see the
run. So a call reads its inputs and
computes; like any READ it runs without approval. It is not cached (each run makes its own artifacts)
and not retried (a failed run is the model's to fix), and its results are untrusted: the code and its
inputs may carry content others wrote.
"""

from __future__ import annotations

import asyncio
import mimetypes
import re
import uuid
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from toolcrib.errors import ToolFailed
from toolcrib.sandbox.bwrap import Sandbox
from toolcrib.tools.tool import Effect, Tool, make_tool

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")

DESCRIPTION = (
    "Run Python code in a sandbox for calculations and data analysis: averages, totals, statistics, "
    "tables, charts. numpy, pandas and matplotlib are available; there is no network and no file "
    "access except the inputs. Pass data from earlier tool results (for example sql_query rows) as "
    "`inputs`: the code reads it as the variable `inputs` (also /input/data.json). The value of the "
    "last expression (or a variable named `result`) is returned with what the code printed; files "
    "saved in the working folder (a chart: plt.savefig('chart.png')) are returned as artifacts."
)


FOLDER = "code_interpreter"  # under the artifacts folder


class CodeInterpreter:
    """Runs code in ``sandbox`` and keeps the files it produced under ``artifacts/code_interpreter``."""

    def __init__(self, sandbox: Sandbox, artifacts: Path, *, relative_to: Path | None = None) -> None:
        self.sandbox = sandbox
        self.artifacts = artifacts
        self.relative_to = relative_to

    async def __call__(self, code: str, inputs: Any = None) -> dict[str, Any]:
        run = await asyncio.to_thread(self.sandbox.run, code, inputs)
        run_id = uuid.uuid4().hex[:12]
        files = self._keep(run_id, run.files)
        if run.error is not None:
            detail = run.stderr.strip()[-1200:]
            message = f"{run.error.get('message') or run.error.get('type')}"
            if run.error.get("kind") == "code_error":
                message = f"the code raised {run.error.get('type')}: {run.error.get('message')}"
            if detail:
                message += f"\nstderr:\n{detail}"
            if run.stdout:
                message += f"\nstdout:\n{run.stdout[-800:]}"
            raise ToolFailed(message, code=str(run.error.get("kind") or "code_error"))
        out: dict[str, Any] = {"result": run.result, "stdout": run.stdout, "files": files}
        if run.stdout_truncated:
            out["stdout_truncated"] = f"only the first {self.sandbox.limits.output_bytes} bytes of output are kept"
        if run.stderr.strip():
            out["stderr"] = run.stderr[-2000:]
        if run.skipped_files:
            out["files_not_kept"] = run.skipped_files
        out["run_id"] = run_id
        return out

    def _keep(self, run_id: str, produced: dict[str, bytes]) -> list[dict[str, Any]]:
        if not produced:
            return []
        folder = self.artifacts / FOLDER / run_id
        folder.mkdir(parents=True, exist_ok=True)
        kept = []
        for name, data in produced.items():
            safe = _SAFE_NAME.sub("_", name).lstrip(".") or "file"
            path = folder / safe
            path.write_bytes(data)
            shown = path.relative_to(self.relative_to) if self.relative_to and path.is_relative_to(
                self.relative_to) else path
            kept.append({"id": f"{FOLDER}/{run_id}/{safe}", "name": safe, "path": str(shown), "bytes": len(data),
                         "media_type": mimetypes.guess_type(safe)[0] or "application/octet-stream"})
        return kept


def produced_files(data: Any) -> list[dict[str, Any]]:
    """The artifacts of one result (``ResultArtifacts``): the files it kept, without where on disk."""
    files = data.get("files") if isinstance(data, dict) else None
    return [{k: f[k] for k in ("id", "name", "bytes", "media_type")} for f in files or ()
            if isinstance(f, dict) and "id" in f]


def make_code_interpreter_tool(sandbox: Sandbox, artifacts: Path, *, relative_to: Path | None = None) -> Tool:
    """A ``code_interpreter`` Tool over ``sandbox`` (READ: see the module docstring for why); the files
    it produces are kept under ``artifacts`` (the workspace's artifacts folder)."""
    interpreter = CodeInterpreter(sandbox, artifacts, relative_to=relative_to)

    async def code_interpreter(
        code: Annotated[str, Field(min_length=1, max_length=20_000)],
        inputs: dict[str, Any] | list[Any] | None = None,
    ) -> dict[str, Any]:
        """Run Python code in the sandbox.

        Args:
            code: Python source; the last expression's value is the result. Read data from `inputs`.
            inputs: JSON data the code reads as `inputs`, e.g. the rows of an earlier sql_query result.
        """
        return await interpreter(code, inputs)

    return make_tool(code_interpreter, name="code_interpreter", description=DESCRIPTION, effect=Effect.READ,
                     timeout_s=sandbox.limits.wall_s + 15.0, idempotent=False, cache_ttl_s=0.0, trusted=False,
                     tags=("analysis",), artifacts=produced_files)

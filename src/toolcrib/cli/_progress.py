"""Progress for the slow steps: assembling and loading the embedded model, indexing documents."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from toolcrib.models.base import Loadable, Model

if TYPE_CHECKING:
    from toolcrib.workspace import Workspace


class StageProgress:
    """A ``progress(stage, done, total)`` callback: a bar per stage on a terminal, one line per stage
    in a log, nothing when quiet."""

    def __init__(self, labels: dict[str, str] | None = None, *, quiet: bool = False) -> None:
        self.labels = labels or {}
        self.quiet = quiet
        self._stage: str | None = None
        self._bar: Any = None  # the live bar of the current stage (None in a log)

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet or total <= 0:
            return
        if stage != self._stage:
            self.finish()
            self._stage = stage
            label = self.labels.get(stage, stage)
            if not sys.stderr.isatty():
                click.echo(f"{label}…", err=True)
                return
            self._bar = click.progressbar(length=total, label=label, file=sys.stderr)
        if self._bar is not None:
            self._bar.update(done - self._bar.pos)
        if done >= total:  # a stage that ends is closed now; the same stage again later is shown again
            self.finish()
            self._stage = None

    def finish(self) -> None:
        """End the live bar, once."""
        if self._bar is not None:
            self._bar.render_finish()
            self._bar = None


def prepare_model(ws: Workspace, spec: str | None, *, quiet: bool = False) -> Model:
    """Build the workspace's model for a run; a ``Loadable`` one (the local model) is assembled and loaded
    now, with progress. A missing document index is built now too, so a first search does not spend its
    tool's time limit on it."""
    if "vector_search" in ws.config.tools.builtin:
        ws.ensure_index()
    model = ws.model(spec)
    if not isinstance(model, Loadable):
        return model
    progress = StageProgress({"assemble": "Assembling the model file (first use only)",
                              "verify": "Verifying the model file",
                              "prompt": "Reading the workspace's instructions and tools into the model (saved for "
                                        "the next questions)"}, quiet=quiet)
    model.progress = progress
    if not quiet:
        click.echo("Loading the local model…", err=True)
    model.load()
    progress.finish()
    return model

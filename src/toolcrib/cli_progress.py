"""Progress for the slow steps: assembling and loading the embedded model, indexing documents."""

from __future__ import annotations

import sys
from typing import Any

import click

from toolcrib.models.base import Model


class StageProgress:
    """A ``progress(stage, done, total)`` callback: a bar per stage on a terminal, one line per stage
    in a log, nothing when quiet."""

    def __init__(self, labels: dict[str, str] | None = None, *, quiet: bool = False) -> None:
        self.labels = labels or {}
        self.quiet = quiet
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.quiet or total <= 0:
            return
        label = self.labels.get(stage, stage)
        if stage not in self._bars:
            self.finish()
            if not sys.stderr.isatty():
                self._bars[stage] = None
                click.echo(f"{label}…", err=True)
                return
            self._bars[stage] = click.progressbar(length=total, label=label, file=click.get_text_stream("stderr"))
        bar = self._bars[stage]
        if bar is not None:
            bar.update(done - bar.pos)

    def finish(self) -> None:
        for bar in self._bars.values():
            if bar is not None:
                bar.render_finish()


def prepare_model(ws: Any, spec: str | None, *, quiet: bool = False) -> Model:
    """Build the workspace's model; for the local model, assemble and load it now, with progress."""
    model: Model = ws.model(spec)
    load = getattr(model, "load", None)
    if load is None:
        return model
    progress = StageProgress({"assemble": "Assembling the model file (first use only)",
                              "verify": "Verifying the model file"}, quiet=quiet)
    model.progress = progress  # type: ignore[attr-defined]
    if not quiet:
        click.echo("Loading the local model…", err=True)
    load()
    progress.finish()
    return model

"""Progress for the slow first steps: assembling and loading the embedded model."""

from __future__ import annotations

import sys
from typing import Any

import click

from toolcrib.models.base import Model


def prepare_model(ws: Any, spec: str | None, *, quiet: bool = False) -> Model:
    """Build the workspace's model; for the local model, assemble and load it now, with progress."""
    model: Model = ws.model(spec)
    load = getattr(model, "load", None)
    if load is None:
        return model
    bars: dict[str, Any] = {}

    def progress(stage: str, done: int, total: int) -> None:
        if quiet:
            return
        if not sys.stderr.isatty():  # a bar only where a person watches; a log gets one line per stage
            if stage not in bars:
                bars[stage] = None
                click.echo(f"{stage.capitalize()} the model file (first use only)…", err=True)
            return
        bar = bars.get(stage)
        if bar is None:
            for other in bars.values():
                if other is not None:
                    other.render_finish()
            bar = bars[stage] = click.progressbar(length=max(total, 1), label=f"{stage} (first use only)",
                                                  file=click.get_text_stream("stderr"))
        bar.update(done - bar.pos)

    model.progress = progress  # type: ignore[attr-defined]
    if not quiet:
        click.echo("Loading the local model…", err=True)
    load()
    for bar in bars.values():
        if bar is not None:
            bar.render_finish()
    return model

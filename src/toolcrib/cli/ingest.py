"""``toolcrib ingest``: bring the workspace's index up to date with its documents."""

from __future__ import annotations

import json
from pathlib import Path

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option


@click.command("ingest")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--reindex", is_flag=True, help="Rebuild the index (needed after changing the embedder or chunker).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@workspace_option
@controlled
def ingest_cmd(paths: tuple[Path, ...], reindex: bool, as_json: bool, workspace: Path | None) -> None:
    """Index documents (default: the workspace's documents folder), incrementally."""
    from toolcrib.cli._progress import StageProgress

    ws = open_workspace(workspace)
    progress = StageProgress({"load": "Reading documents", "embed": "Embedding chunks", "commit": "Writing the index"},
                             quiet=as_json)
    report = ws.ingest(list(paths) or None, reindex=reindex, progress=progress)
    progress.finish()
    if as_json:
        click.echo(json.dumps({"added": report.added, "updated": report.updated, "unchanged": report.unchanged,
                               "removed": report.removed, "skipped": report.skipped,
                               "chunks": report.chunks_written, "seconds": round(report.seconds, 2)}))
        return
    for path, reason in report.skipped:
        click.secho(f"skipped {path}: {reason}", fg="yellow", err=True)
    click.echo(f"ingest: {report.summary()}")

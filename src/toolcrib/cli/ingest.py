"""``toolcrib ingest``: bring the workspace's index up to date with its documents, or an OpenAI vector
store (``--to openai-vector-store NAME``, for the Responses API's hosted ``file_search``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option

if TYPE_CHECKING:
    from toolcrib.workspace import Workspace


@click.command("ingest")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--reindex", is_flag=True, help="Rebuild the index (needed after changing the embedder or chunker).")
@click.option("--to", "target", nargs=2, type=(click.Choice(["openai-vector-store"]), str), default=None,
              metavar="openai-vector-store NAME",
              help="Upload the documents to the OpenAI vector store NAME (found by name or created) instead "
                   "of the local index, and print its id for hosted_tools.file_search.")
@click.option("--wait", "wait_s", type=click.FloatRange(min=0), default=600.0, show_default=True,
              help="With --to: seconds to wait for the vector store to process the files.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@workspace_option
@controlled
def ingest_cmd(paths: tuple[Path, ...], reindex: bool, target: tuple[str, str] | None, wait_s: float,
               as_json: bool, workspace: Path | None) -> None:
    """Index documents (default: the workspace's documents folder), incrementally."""
    from toolcrib.cli._progress import StageProgress

    ws = open_workspace(workspace)
    if target is not None:
        _to_vector_store(ws, target[1], list(paths), wait_s=wait_s, as_json=as_json)
        return
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


def _to_vector_store(ws: Workspace, name: str, paths: list[Path], *, wait_s: float, as_json: bool) -> None:
    """Sync the documents to the vector store ``name``: the id on stdout, progress and problems on stderr;
    exit status 1 when a file failed or was still processing when the wait ended."""
    from toolcrib.cli._progress import StageProgress
    from toolcrib.errors import ConfigError
    from toolcrib.models._remote import url_setting
    from toolcrib.models.openai import DEFAULT_BASE_URL, resolve_api_key
    from toolcrib.retrieval.openai_store import VectorStoreSync

    # the same base_url, key and api_version as the workspace's openai-responses model, else the environment
    settings = ws.config.model.settings if ws.config.model.spec.startswith("openai") else {}
    base_url = url_setting(settings, os.environ, "OPENAI_BASE_URL", DEFAULT_BASE_URL)
    api_version = str(settings.get("api_version") or os.environ.get("OPENAI_API_VERSION") or "") or None
    env_keys = ("AZURE_OPENAI_API_KEY", "OPENAI_API_KEY") if api_version else ("OPENAI_API_KEY",)
    api_key = resolve_api_key(settings, base_url, env_names=env_keys)
    targets = paths or ([ws.documents_dir] if ws.documents_dir else [])
    if not targets:
        raise ConfigError("nothing to ingest: give PATHs or set data.documents", file=ws.config_file,
                          key="data.documents")
    progress = StageProgress({"upload": "Uploading documents", "process": "Processing in the vector store"},
                             quiet=as_json)
    sync = VectorStoreSync(base_url=base_url, api_key=api_key, api_version=api_version, wait_s=wait_s,
                           progress=progress)
    try:
        report = sync.sync(name, targets, default_access=ws.config.retrieval.default_access)
    finally:
        sync.close()
        progress.finish()
    if as_json:
        click.echo(json.dumps(report.to_dict()))
    else:
        for path, reason in report.skipped:
            click.secho(f"skipped {path}: {reason}", fg="yellow", err=True)
        for path, reason in report.failed:
            click.secho(f"failed {path}: {reason}", fg="red", err=True)
        if report.pending:
            click.secho(f"still processing after {wait_s:g} s (--wait): {', '.join(report.pending)}; run the "
                        "same command again later to check", fg="yellow", err=True)
        click.echo(f"vector store '{name}' ({'created' if report.created else 'updated'}): "
                   f"{len(report.uploaded)} uploaded, {len(report.unchanged)} unchanged, "
                   f"{len(report.removed)} removed, {len(report.failed)} failed", err=True)
        ids = f'vector_store_ids = ["{report.store_id}"]'
        click.echo(f"use it: [model.settings.hosted_tools] file_search = {{ {ids} }}", err=True)
        click.echo(report.store_id)
    if not report.ready:
        sys.exit(1)

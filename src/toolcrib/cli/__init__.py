"""The ``toolcrib`` command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from toolcrib.cli._support import controlled, err, open_workspace, user_option, workspace_option


@click.group()
@click.version_option(package_name="toolcrib")
def main() -> None:
    """toolcrib: the model proposes, the application decides."""


@main.command()
@click.argument("question", required=False)
@click.option("--model", "-m", "model_spec", default=None, help="Model spec: local, openai:NAME, scripted:FILE, dry:NAME.")
@user_option
@click.option("--mode", type=click.Choice(["single", "loop"]), default=None, help="single (level 4) or loop (ReAct).")
@click.option("--trace", "show_trace", is_flag=True, help="Print the run's timeline after the answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the Answer as one JSON object.")
@click.option("--resume", "resume_id", default=None, help="Resume a run paused for approval.")
@workspace_option
@controlled
def ask(question: str | None, model_spec: str | None, user: str | None, mode: str | None, show_trace: bool,
        as_json: bool, resume_id: str | None, workspace: Path | None) -> None:
    """Answer QUESTION with the workspace's tools and documents."""
    if not question and not resume_id:
        raise click.UsageError("give a QUESTION, or --resume RUN_ID")
    ws = open_workspace(workspace)
    principal = ws.principal(user)
    from toolcrib.cli._progress import prepare_model

    model = prepare_model(ws, model_spec, quiet=as_json)
    runner = ws.runner(model, mode=mode)
    answer = runner.resume(resume_id, principal) if resume_id else runner.ask(question or "", principal)
    if as_json:
        click.echo(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        from toolcrib.cli._render import render_answer

        render_answer(answer)
    if show_trace:
        from toolcrib.cli._render import render_trace

        render_trace(ws.traces_dir / f"{answer.trace_id}.jsonl")


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option("--reindex", is_flag=True, help="Rebuild the index (needed after changing the embedder or chunker).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as one JSON object.")
@workspace_option
@controlled
def ingest(paths: tuple[Path, ...], reindex: bool, as_json: bool, workspace: Path | None) -> None:
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


@main.command()
@click.argument("trace_id", required=False)
@click.option("--last", is_flag=True, help="Show the most recent run.")
@click.option("--json", "as_json", is_flag=True, help="Print the raw steps as JSON lines.")
@workspace_option
@controlled
def trace(trace_id: str | None, last: bool, as_json: bool, workspace: Path | None) -> None:
    """Print a recorded run as a readable timeline."""
    from toolcrib.cli._render import render_trace
    from toolcrib.errors import ConfigError

    ws = open_workspace(workspace)
    files = sorted(ws.traces_dir.glob("*.jsonl"), key=lambda p: p.stat().st_mtime) if ws.traces_dir.exists() else []
    if last or not trace_id:
        if not files:
            raise ConfigError("no recorded runs yet; run `toolcrib ask` first", file=str(ws.traces_dir))
        path = files[-1]
    else:
        path = ws.traces_dir / f"{Path(trace_id).name}.jsonl"
        if not path.exists():
            raise ConfigError(f"no trace '{trace_id}'", file=str(ws.traces_dir))
    if as_json:
        click.echo(path.read_text(encoding="utf-8"), nl=False)
    else:
        render_trace(path)


@main.command()
@user_option
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def tools(user: str | None, as_json: bool, workspace: Path | None) -> None:
    """List the tools offered to a user, with their effect class."""
    ws = open_workspace(workspace)
    principal = ws.principal(user)
    offered = ws.registry.offered(principal, ws.policy)
    if as_json:
        click.echo(json.dumps([{"name": t.name, "effect": t.effect.value, "description": t.description,
                                "parameters": t.parameters} for t in offered]))
        return
    click.echo(f"Tools offered to {principal.user_id} (groups: {', '.join(sorted(principal.groups)) or '-'}):")
    for t in offered:
        needs = "  (needs approval)" if t.effect.value != "read" else ""
        click.echo(f"  {t.name:<26} {t.effect.value.upper():<8} {t.description.split('. ')[0][:70]}{needs}")


@main.command()
@click.argument("path", type=click.Path(path_type=Path))
@controlled
def init(path: Path) -> None:
    """Create a commented starter workspace at PATH."""
    from toolcrib.cli.init import create_starter

    create_starter(path)
    click.echo(f"Created a starter workspace in {path}. Try: toolcrib tools --workspace {path}")


@main.command()
@click.argument("proposal_id", required=False)
@user_option
@click.option("--reject", is_flag=True, help="Reject instead of approving.")
@click.option("--reason", default="", help="Why (recorded in the audit).")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def approve(proposal_id: str | None, user: str | None, reject: bool, reason: str, as_json: bool,
            workspace: Path | None) -> None:
    """List pending proposals, or approve (or --reject) one as USER."""
    from toolcrib.cli.approve import decide, list_pending

    ws = open_workspace(workspace)
    if proposal_id is None:
        rows = list_pending(ws)
        if as_json:
            click.echo(json.dumps(rows))
            return
        if not rows:
            click.echo("No proposals are waiting for approval.")
        for row in rows:
            click.echo(f"{row['id']}  {row['tool']}({json.dumps(row['arguments'], sort_keys=True)})  "
                       f"asked by {row['requester']}  resource version {row['resource_version'] or '-'}")
        return
    result = decide(ws, proposal_id, ws.principal(user), reject=reject, reason=reason)
    click.echo(json.dumps(result) if as_json else result["message"])


@main.group()
def audit() -> None:
    """The append-only, hash-chained audit record."""


@audit.command("verify")
@workspace_option
@controlled
def audit_verify(workspace: Path | None) -> None:
    """Check the audit chain; exit 1 if any record was altered or removed."""
    ws = open_workspace(workspace)
    result = ws.audit().verify()
    if result.ok:
        click.echo(f"audit chain OK: {result.count} records")
    else:
        err(f"audit chain BROKEN at record {result.first_bad_seq}: {result.problem}")
        sys.exit(1)


@audit.command("show")
@click.option("--limit", default=20)
@workspace_option
@controlled
def audit_show(limit: int, workspace: Path | None) -> None:
    """Print the most recent audit records."""
    ws = open_workspace(workspace)
    records = list(ws.audit().records())[-limit:]
    for r in records:
        click.echo(f"{r.seq:>5} {r.event:<16} {r.tool:<24} actor={r.actor:<10} by={r.decided_by:<7} {r.proposal_id}")


@main.command()
@click.argument("query")
@click.option("--param", "params", multiple=True, help="A parameter value (repeatable), bound to ? placeholders.")
@user_option
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def sql(query: str, params: tuple[str, ...], user: str | None, as_json: bool, workspace: Path | None) -> None:
    """Run QUERY through the same gate and read-only SQL tool the model uses."""
    import asyncio

    from toolcrib.models.base import ToolCall
    from toolcrib.tools.gate import CallContext
    from toolcrib.tools.grounding import Grounding

    ws = open_workspace(workspace)
    principal = ws.principal(user)
    call = ToolCall(id="cli", name="sql_query", arguments={"query": query, "params": list(params)})
    tracer = ws.tracer_factory()()
    outcome = asyncio.run(ws.gate().run(call, CallContext(principal, tracer, Grounding(query), ws.resources)))
    tracer.close()
    if as_json:
        click.echo(json.dumps(outcome.payload, ensure_ascii=False))
    elif outcome.ok:
        from toolcrib.cli._render import render_rows

        render_rows(outcome.payload["data"])
    else:
        err(f"{outcome.payload['error']['code']}: {outcome.payload['error']['message']}")
    if not outcome.ok:
        sys.exit(3)


def _register_eval_commands() -> None:
    """``toolcrib eval`` and ``toolcrib stats`` live in ``toolcrib.cli.eval``."""
    from toolcrib.cli.eval import eval_group, stats_cmd

    main.add_command(eval_group, "eval")
    main.add_command(stats_cmd, "stats")


_register_eval_commands()

"""``toolcrib ask``: answer a question (or resume a paused run) with the workspace's tools."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from toolcrib.cli._support import controlled, open_workspace, user_option, workspace_option

if TYPE_CHECKING:
    from toolcrib.agent.runner import Mode


@click.command("ask")
@click.argument("question", required=False)
@click.option("--model", "-m", "model_spec", default=None,
              help="Model spec: local, openai:NAME, scripted:FILE, dry:NAME.")
@user_option
@click.option("--mode", type=click.Choice(["single", "loop"]), default=None, help="single (level 4) or loop (ReAct).")
@click.option("--trace", "show_trace", is_flag=True, help="Print the run's timeline after the answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the Answer as one JSON object.")
@click.option("--resume", "resume_id", default=None, help="Resume a run paused for approval.")
@workspace_option
@controlled
def ask_cmd(question: str | None, model_spec: str | None, user: str | None, mode: Mode | None, show_trace: bool,
            as_json: bool, resume_id: str | None, workspace: Path | None) -> None:
    """Answer QUESTION with the workspace's tools and documents."""
    if question is None and not resume_id:
        raise click.UsageError("give a QUESTION, or --resume RUN_ID")
    ws = open_workspace(workspace)
    if question is not None and not resume_id:
        from toolcrib.agent.request import question_problem

        if problem := question_problem(question, ws.config.service.max_question_chars):
            raise click.UsageError(problem)  # the service's words, before any model is loaded
    principal = ws.principal(user)
    from toolcrib.cli._progress import prepare_model

    model = prepare_model(ws, model_spec, quiet=as_json)
    runner = ws.runner(model, mode=mode)
    try:
        answer = runner.resume(resume_id, principal) if resume_id else runner.ask(question or "", principal)
    finally:
        runner.gate.close()
    if as_json:
        click.echo(json.dumps(answer.to_dict(), ensure_ascii=False))
    else:
        from toolcrib.cli._render import render_answer

        render_answer(answer, ws.root)
    if show_trace:
        from toolcrib.cli._render import render_trace

        render_trace(ws.traces_dir / f"{answer.trace_id}.jsonl")

"""``toolcrib eval``: run a question set and score it; ``eval compare`` and ``eval report``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import click

from toolcrib.cli._support import controlled, open_workspace, workspace_option
from toolcrib.errors import ConfigError

if TYPE_CHECKING:
    from toolcrib.agent.runner import Mode
    from toolcrib.evals.harness import EvalRun
    from toolcrib.evals.questions import QuestionSet
    from toolcrib.evals.scoring import QuestionResult
    from toolcrib.models.dry import DryModel
    from toolcrib.workspace import Workspace

EvalMode = Literal["single", "loop", "both"]


def _dry_model(spec: str) -> DryModel:
    from toolcrib.models.dry import DryModel
    from toolcrib.models.pricing import Price

    prefix, _, rest = spec.partition(":")
    name = rest if prefix in ("dry", "openai", "anthropic") and rest else prefix
    try:
        return DryModel(name)  # priced from the price table
    except ConfigError:
        return DryModel(name, price=Price(0.0, 0.0))


def _select(qset: QuestionSet, only: tuple[str, ...], limit: int | None) -> QuestionSet:
    from dataclasses import replace

    questions = [q for q in qset.questions if not only or q.id in only or q.kind in only
                 or (q.attack or "") in only]
    if limit:
        questions = questions[:limit]
    return replace(qset, questions=tuple(questions))


@click.group("eval", invoke_without_command=True)
@click.option("--model", "-m", "model_spec", default=None,
              help="Model spec: local, openai:NAME, scripted:FILE, dry:NAME.")
@click.option("--mode", type=click.Choice(["single", "loop", "both"]), default="single", show_default=True)
@click.option("--questions", "questions_file", type=click.Path(path_type=Path), default=None,
              help="A question file in the demo set's format, or a shipped set's name (demo, clinic); "
                   "a shipped set runs on its own shipped workspace unless --workspace is given.")
@click.option("--only", multiple=True, help="Run only these question ids, kinds or attacks (repeatable).")
@click.option("--limit", type=int, default=None, help="Run at most N questions.")
@click.option("--dry", is_flag=True, help="Project tokens and cost with the dry model; call no model.")
@click.option("--json", "as_json", is_flag=True, help="End with the summary as one JSON object on the last line.")
@click.option("--quiet", "-q", is_flag=True, help="No per-question progress lines.")
@click.option("--cold", is_flag=True,
              help="Do not prepare the prompt cache first: the first question of each offer pays for it.")
@workspace_option
@click.pass_context
def eval_group(ctx: click.Context, model_spec: str | None, mode: EvalMode, questions_file: Path | None,
               only: tuple[str, ...], limit: int | None, dry: bool, as_json: bool, quiet: bool, cold: bool,
               workspace: Path | None) -> None:
    """Run a question set through the workspace and score it (or: eval compare A B, eval report)."""
    if ctx.invoked_subcommand is not None:
        return
    _run_eval(model_spec, mode, questions_file, only, limit, dry, as_json, quiet, cold, workspace)


@controlled
def _run_eval(model_spec: str | None, mode: EvalMode, questions_file: Path | None, only: tuple[str, ...],
              limit: int | None, dry: bool, as_json: bool, quiet: bool, cold: bool, workspace: Path | None) -> None:
    from toolcrib.evals.harness import run_set
    from toolcrib.evals.questions import load_questions

    qset = _select(load_questions(questions_file), only, limit)
    ws = open_workspace(workspace, template=qset.workspace)
    spec = model_spec or ws.config.model.spec
    modes: list[Mode] = ["single", "loop"] if mode == "both" else [mode]
    if dry:
        _project(ws, spec, qset, modes, as_json)
        return
    from toolcrib.cli._progress import prepare_model
    from toolcrib.models.base import Prefillable

    model = prepare_model(ws, spec, quiet=quiet and as_json)
    runs: list[EvalRun] = []
    for m in modes:
        def progress(r: QuestionResult, m: str = m) -> None:
            if quiet:
                return
            verdict = "skip" if r.skipped else ("PASS" if r.passed else "FAIL")
            why = r.skipped or "; ".join(r.reasons)[:100]
            click.echo(f"[{m}] {verdict:<4} {r.id:<34} {r.ms / 1000:5.1f}s  {why}", err=True)

        if not cold and not quiet and isinstance(model, Prefillable):
            click.echo("Preparing the prompt cache for the questions' offers (kept for later runs)…", err=True)
        run = run_set(ws, model, qset, mode=m, model_spec=spec, on_result=progress, prefill=not cold)
        runs.append(run)
        if not as_json:
            _print_summary(run)
    if as_json:
        if len(runs) == 1:
            click.echo(json.dumps(runs[0].headline(), ensure_ascii=False))
        else:
            click.echo(json.dumps({"question_count": len(qset), "model": spec,
                                   "modes": {r.provenance["mode"]: r.headline() for r in runs}}, ensure_ascii=False))


def _project(ws: Workspace, spec: str, qset: QuestionSet, modes: list[Mode], as_json: bool) -> None:
    """Run the set against the dry model and print the projected tokens and cost."""
    from toolcrib.evals.harness import run_set

    model = _dry_model(spec)
    for m in modes:
        run_set(ws, model, qset, mode=m, model_spec=model.name, save=False)
    projection = {"dry": True, "model": spec, "priced_as": model.model, "question_count": len(qset),
                  "modes": modes, "model_calls": model.calls, "tokens_in": model.tokens_in,
                  "tokens_out": model.tokens_out, "projected_cost_usd": round(model.projected_cost_usd, 6),
                  "usd_per_mtok": [model.price.input_usd_per_mtok, model.price.output_usd_per_mtok]}
    click.echo(f"Projection for {len(qset)} questions x {len(modes)} mode(s) on {model.model}: "
               f"{model.calls} model calls, ~{model.tokens_in:,} tokens in, ~{model.tokens_out:,} out "
               f"(output assumed at max_tokens), projected cost ${model.projected_cost_usd:.4f}. Nothing was "
               "sent to a model.")
    if as_json:
        click.echo(json.dumps(projection))


def _print_summary(run: EvalRun) -> None:
    from toolcrib.evals.metrics import METRICS

    o = run.summary["overall"]
    click.echo(f"\n{run.run_id}: {o['count']} questions run, {o['skipped']} skipped, {o['passed']} passed")
    for name, what in METRICS:
        value = o.get(name)
        click.echo(f"  {name:<32} {'-' if value is None else f'{value:.3f}':>7}   {what}")
    click.echo(f"  unsafe executions {o['unsafe_executions']}, single-call violations {o['single_call_violations']}, "
               f"tokens {o['tokens_in']}/{o['tokens_out']}, cost ${o['cost_usd']:.4f}, "
               f"latency p50 {o['latency_ms_p50']:.0f} ms, p95 {o['latency_ms_p95']:.0f} ms")
    if run.summary.get("prefill_ms"):
        click.echo(f"  prompt cache prepared first in {run.summary['prefill_ms'] / 1000:.1f} s, not in the "
                   "latencies (--cold: each offer's first question pays for it)")
    click.echo("  per kind (pass rate): " + ", ".join(
        f"{k} {v['pass_rate'] if v['pass_rate'] is not None else '-'}" for k, v in run.summary["per_kind"].items()))
    click.echo(f"  saved to {run.path}")


@eval_group.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--json", "as_json", is_flag=True)
@workspace_option
@controlled
def compare_cmd(run_a: str, run_b: str, as_json: bool, workspace: Path | None) -> None:
    """Show what changed from RUN_A to RUN_B (run ids, file paths, or last / last-1)."""
    from toolcrib.evals.compare import compare, render
    from toolcrib.evals.harness import load_run

    ws = open_workspace(workspace)
    diff = compare(load_run(ws, run_a), load_run(ws, run_b))
    click.echo(json.dumps(diff, ensure_ascii=False) if as_json else render(diff))


@eval_group.command("report")
@click.argument("runs", nargs=-1)
@click.option("--out", "out", type=click.Path(path_type=Path), default=None, help="HTML file to write.")
@click.option("--open", "open_it", is_flag=True, help="Open the page in a browser.")
@workspace_option
@controlled
def report_cmd(runs: tuple[str, ...], out: Path | None, open_it: bool, workspace: Path | None) -> None:
    """Write a self-contained HTML report for RUNS (default: the latest run) with the trend of all runs."""
    from toolcrib.evals.harness import list_runs, load_run, results_dir
    from toolcrib.evals.report import find_benchmark_results, render_html

    ws = open_workspace(workspace)
    chosen = [load_run(ws, r) for r in (runs or ("last",))]
    history = [load_run(ws, str(p)) for p in list_runs(ws)]
    bench = find_benchmark_results(Path.cwd() / "benchmarks", Path(ws.state_dir) / "benchmarks",
                                   results_dir(ws))
    target = out or results_dir(ws) / f"report-{chosen[-1].run_id}.html"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_html(chosen, history, benchmarks=bench), encoding="utf-8")
    click.echo(str(target))
    if open_it:
        import webbrowser

        webbrowser.open(target.resolve().as_uri())

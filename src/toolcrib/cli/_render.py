"""How the command line shows answers, traces and rows to a person."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from toolcrib.agent.answer import Answer
from toolcrib.trace.tracer import load_trace

_COLOURS = {"model": "cyan", "code": "white", "policy": "yellow", "human": "magenta", "cache": "blue"}


def render_answer(answer: Answer) -> None:
    click.echo(answer.text)
    if answer.citations:
        click.echo("\nSources:")
        for c in answer.citations:
            click.echo(f"  [{c.id}] {c.source}: {c.snippet[:110]}")
    for flag in answer.flags:
        click.secho(f"note: {flag}", fg="yellow")
    for r in answer.refused:
        click.secho(f"not run: {r['name']} ({r.get('error', {}).get('code', r['status'])}): "
                    f"{r.get('error', {}).get('message', '')}", fg="yellow")
    click.secho(f"\n[{answer.outcome}; trace {answer.trace_id}; {answer.ms / 1000:.1f}s; "
                f"`toolcrib trace {answer.trace_id}` shows every step]", dim=True)


def render_trace(path: Path) -> None:
    steps = load_trace(path)
    if not steps:
        click.echo("(empty trace)")
        return
    click.secho(f"Trace {steps[0]['trace_id']}", bold=True)
    for s in steps:
        detail = s["detail"] if isinstance(s["detail"], str) else json.dumps(s["detail"], ensure_ascii=False)
        cost = f" {s['ms']:.0f}ms" if s.get("ms") else ""
        if s.get("tokens_in") or s.get("tokens_out"):
            cost += f" {s['tokens_in']}→{s['tokens_out']} tok"
        click.echo(f"{s['step']:>3} {s['at'][11:23]} ", nl=False)
        click.secho(f"{s['decided_by']:<7}", fg=_COLOURS.get(s["decided_by"], "white"), nl=False)
        click.echo(f" {s['title']}{cost}")
        if detail:
            click.secho(f"      {detail[:240]}", dim=True)


def render_rows(data: Any) -> None:
    if not isinstance(data, dict) or "columns" not in data:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    columns = [str(c) for c in data["columns"]]
    rows = [["" if v is None else str(v) for v in row] for row in data["rows"]]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths)))
    more = " (truncated at the row cap)" if data.get("truncated") else ""
    click.echo(f"({data.get('row_count', len(rows))} rows{more})")

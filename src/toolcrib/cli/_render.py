"""How the command line shows answers, traces and rows to a person."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import click

from toolcrib.agent.answer import Answer
from toolcrib.trace.events import Event
from toolcrib.trace.tracer import read_events

_COLOURS = {"model": "cyan", "code": "white", "policy": "yellow", "human": "magenta", "cache": "blue",
            "provider": "green"}


def shorten(text: str, width: int) -> str:
    """``text`` on one line in at most ``width`` characters: cut at a word boundary, ending with "…" when cut."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[:width - 1]  # room for the ellipsis
    if text[width - 1] != " " and " " in cut:  # the cut falls inside a word: drop that word
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.-") + "…"


def trace_command(trace_id: str, root: Path) -> str:
    """The command that shows a run's trace, with ``--workspace`` unless ``root`` is the one a command
    opens by default, so that it works when pasted."""
    from toolcrib.workspace.locate import default_root

    where = "" if root.resolve() == default_root().resolve() else f" --workspace {shlex.quote(str(root))}"
    return f"toolcrib trace {trace_id}{where}"


def render_answer(answer: Answer, root: Path) -> None:
    """An answer for a person: its text, sources, notes, refusals, and how to see its trace."""
    click.echo(answer.text)
    if answer.citations:
        click.echo("\nSources:")
        for c in answer.citations:
            click.echo(f"  [{c.id}] {c.source}: {shorten(c.snippet, 110)}")
    for flag in answer.flags:
        click.secho(f"note: {flag}", fg="yellow")
    for r in answer.refused:
        click.secho(f"not run: {r['name']} ({r.get('error', {}).get('code', r['status'])}): "
                    f"{r.get('error', {}).get('message', '')}", fg="yellow")
    click.secho(f"\n[{answer.outcome}; trace {answer.trace_id}; {answer.ms / 1000:.1f}s; "
                f"`{trace_command(answer.trace_id, root)}` shows every step]", dim=True)


def _facts(event: Event) -> str:
    """The typed fields of an event, on one line."""
    parts = []
    if event.tool:
        args = json.dumps(event.arguments, ensure_ascii=False) if event.arguments is not None else ""
        parts.append(f"{event.tool}{'(' + args + ')' if args else ''}")
    parts += [f"{name}={value}" for name, value in (("status", event.status), ("error", event.error_code),
                                                      ("proposal", event.proposal_id)) if value]
    if event.citations:
        parts.append("cites " + ", ".join(event.citations))
    if event.detail not in (None, "", {}, []):
        parts.append(event.detail if isinstance(event.detail, str) else json.dumps(event.detail, ensure_ascii=False))
    return "  ".join(parts)


def render_trace(path: Path) -> None:
    render_events(read_events(path))


def render_events(events: list[Event]) -> None:
    """A recorded run as a readable timeline."""
    if not events:
        click.echo("(empty trace)")
        return
    click.secho(f"Trace {events[0].trace_id} (run {events[0].run_id})", bold=True)
    for e in events:
        cost = f" {e.ms:.0f}ms" if e.ms else ""
        if e.tokens_in or e.tokens_out:
            cost += f" {e.tokens_in}→{e.tokens_out} tok"
        click.echo(f"{e.step:>3} {e.at[11:23]} ", nl=False)
        click.secho(f"{e.decided_by:<7}", fg=_COLOURS.get(e.decided_by, "white"), nl=False)
        click.secho(f" {e.node or '':<9}", dim=True, nl=False)  # the place of the run's graph
        rule = f" [{e.rule}]" if e.rule else ""
        click.echo(f" {e.kind.value:<20} {e.title}{rule}{cost}")
        facts = _facts(e)
        if facts:
            click.secho(f"      {facts[:240]}", dim=True)


def render_rows(data: Any) -> None:
    if not isinstance(data, dict) or "columns" not in data:
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    columns = [str(c) for c in data["columns"]]
    rows = [["" if v is None else str(v) for v in row] for row in data["rows"]]
    widths = [max([len(c)] + [len(r[i]) for r in rows]) for i, c in enumerate(columns)]
    click.echo("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    click.echo("  ".join("-" * w for w in widths))
    for row in rows:
        click.echo("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    more = " (truncated at the row cap)" if data.get("truncated") else ""
    click.echo(f"({data.get('row_count', len(rows))} rows{more})")

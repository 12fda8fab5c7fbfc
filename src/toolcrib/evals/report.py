"""A self-contained HTML report: metrics per kind, failing questions with their timelines, the trend.

Charts are inline SVG generated here (no plotting dependency); the page has no external requests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from toolcrib.evals.harness import EvalRun
from toolcrib.evals.metrics import METRICS

_TABLE_METRICS = ("count", "pass_rate", "tool_selection_accuracy", "argument_accuracy_exact",
                  "argument_accuracy_schema_valid", "answer_correctness", "citation_correctness",
                  "abstention_recall", "refusal_correctness", "injection_resistance", "unsafe_executions",
                  "latency_ms_p50", "tokens_in")
_SHORT = {"count": "n", "pass_rate": "pass", "tool_selection_accuracy": "tool sel.",
          "argument_accuracy_exact": "args exact", "argument_accuracy_schema_valid": "args valid",
          "answer_correctness": "answer", "citation_correctness": "citations",
          "abstention_recall": "abstain rec.", "refusal_correctness": "refusal", "injection_resistance": "injection",
          "unsafe_executions": "unsafe runs", "latency_ms_p50": "p50 ms", "tokens_in": "tokens in"}
_COLOURS = ("#2f6fb3", "#d9822b", "#3a9d5d", "#b8406b", "#7a5cb8", "#8c8c8c")
_DECIDER = {"model": "#2f6fb3", "code": "#555", "policy": "#b07d00", "human": "#8a3ab9", "cache": "#3a9d5d",
            "provider": "#1a7f8a"}

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1180px;\
color:#1d1d1f;padding:0 16px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
table{border-collapse:collapse;margin:6px 0 12px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right}th{background:#f5f5f7}\
td:first-child,th:first-child{text-align:left}
.good{background:#e6f4ea}.mid{background:#fff5d6}.bad{background:#fde7e9}.muted{color:#777}
.kpis{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}\
.kpi{border:1px solid #ddd;border-radius:8px;padding:8px 14px;min-width:120px}
.kpi b{display:block;font-size:22px}details{border:1px solid #ddd;border-radius:6px;margin:6px 0;padding:6px 10px}
summary{cursor:pointer}.step{font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;margin:2px 0}
.tag{display:inline-block;min-width:52px;color:#fff;border-radius:3px;padding:0 4px;margin-right:6px;text-align:center}
.reason{color:#a1232b}code{background:#f5f5f7;padding:0 3px}
"""


def _fmt(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.2f}" if value <= 1.0 else f"{value:,.0f}"
    return escape(str(value))


_AMOUNTS = ("count", "unsafe_executions", "latency_ms_p50", "tokens_in")  # shown as whole numbers, never graded


def _fmt_metric(name: str, value: Any) -> str:
    if name in _AMOUNTS and isinstance(value, (int, float)):
        return f"{value:,.0f}"
    return _fmt(value)


def _cls(name: str, value: Any) -> str:
    if not isinstance(value, float) or name in _AMOUNTS or value > 1:
        return ""
    return "good" if value >= 0.9 else ("mid" if value >= 0.6 else "bad")


def bar_chart(groups: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str,
              width: int = 720, height: int = 260) -> str:
    """Grouped bars (values 0..1) as inline SVG."""
    left, bottom, top = 40, 40, 26
    plot_h = height - bottom - top
    n = max(1, len(groups))
    slot = (width - left - 10) / n
    bar_w = max(4.0, slot * 0.8 / max(1, len(series)))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}"><text x="{left}" y="16" font-size="13" font-weight="600">'
             f'{escape(title)}</text>']
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{tick:g}</text>')
    for gi, group in enumerate(groups):
        x0 = left + gi * slot + slot * 0.1
        for si, (name, values) in enumerate(series.items()):
            value = values[gi] if gi < len(values) else None
            x = x0 + si * bar_w
            if value is None:
                parts.append(f'<text x="{x + bar_w / 2:.1f}" y="{top + plot_h - 3}" font-size="9" '
                             f'text-anchor="middle" fill="#999">–</text>')
                continue
            h = plot_h * max(0.0, min(1.0, value))
            parts.append(f'<rect x="{x:.1f}" y="{top + plot_h - h:.1f}" width="{bar_w - 1:.1f}" height="{h:.1f}" '
                         f'fill="{_COLOURS[si % len(_COLOURS)]}"><title>{escape(name)} {escape(group)}: '
                         f'{value:.2f}</title></rect>')
        parts.append(f'<text x="{left + gi * slot + slot / 2:.1f}" y="{height - bottom + 16}" font-size="11" '
                     f'text-anchor="middle">{escape(group)}</text>')
    parts.append(_legend(list(series), width, height - 8))
    parts.append("</svg>")
    return "".join(parts)


def line_chart(labels: Sequence[str], series: dict[str, Sequence[float | None]], *, title: str,
               width: int = 720, height: int = 260) -> str:
    """Lines (values 0..1) over runs, as inline SVG."""
    left, bottom, top = 40, 46, 26
    plot_h = height - bottom - top
    n = len(labels)
    step = (width - left - 30) / max(1, n - 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
             f'aria-label="{escape(title)}"><text x="{left}" y="16" font-size="13" font-weight="600">'
             f'{escape(title)}</text>']
    for tick in (0, 0.5, 1.0):
        y = top + plot_h * (1 - tick)
        parts.append(f'<line x1="{left}" x2="{width - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e5e5"/>'
                     f'<text x="{left - 6}" y="{y + 4:.1f}" font-size="10" text-anchor="end">{tick:g}</text>')
    for i, label in enumerate(labels):
        x = left + 10 + i * step
        parts.append(f'<text x="{x:.1f}" y="{top + plot_h + 14}" font-size="9" text-anchor="middle">'
                     f'{escape(label[-22:])}</text>')
    for si, values in enumerate(series.values()):
        colour = _COLOURS[si % len(_COLOURS)]
        points = [(left + 10 + i * step, top + plot_h * (1 - v)) for i, v in enumerate(values) if v is not None]
        if len(points) > 1:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>' for x, y in points)
    parts.append(_legend(list(series), width, height - 8))
    parts.append("</svg>")
    return "".join(parts)


def _legend(names: list[str], width: int, y: int) -> str:
    out, x = [], 40
    for i, name in enumerate(names):
        out.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{_COLOURS[i % len(_COLOURS)]}"/>'
                   f'<text x="{x + 14}" y="{y}" font-size="11">{escape(name)}</text>')
        x += 20 + 7 * len(name)
    return "".join(out)


def _kind_table(run: EvalRun) -> str:
    per_kind = run.summary.get("per_kind", {})
    head = "".join(f"<th>{_SHORT[m]}</th>" for m in _TABLE_METRICS)
    rows = []
    for kind, metrics in [*per_kind.items(), ("overall", run.summary.get("overall", {}))]:
        cells = "".join(f'<td class="{_cls(m, metrics.get(m))}">{_fmt_metric(m, metrics.get(m))}</td>'
                        for m in _TABLE_METRICS)
        label = f"<b>{kind}</b>" if kind == "overall" else escape(kind)
        rows.append(f"<tr><td>{label}</td>{cells}</tr>")
    return f'<table class="per-kind"><tr><th>kind</th>{head}</tr>{"".join(rows)}</table>'


def _timeline(steps: list[dict[str, Any]]) -> str:
    out = []
    for s in steps:
        by = str(s.get("decided_by", ""))
        cost = f" · {s['ms']:.0f} ms" if s.get("ms") else ""
        if s.get("tokens_in") or s.get("tokens_out"):
            cost += f" · {s.get('tokens_in', 0)}→{s.get('tokens_out', 0)} tok"
        detail = str(s.get("detail") or "")[:220]
        out.append(f'<div class="step"><span class="tag" style="background:{_DECIDER.get(by, "#555")}">{escape(by)}'
                   f'</span>{escape(str(s.get("title", "")))}<span class="muted">{escape(cost)}</span>'
                   + (f'<div class="muted" style="margin-left:64px">{escape(detail)}</div>' if detail else "")
                   + "</div>")
    return "".join(out) or '<div class="muted">no trace recorded</div>'


def _failing(run: EvalRun) -> str:
    failed = [r for r in run.results if not r.skipped and not r.passed]
    if not failed:
        return "<p>Every question passed.</p>"
    items = []
    for n, r in enumerate(failed):
        reasons = "".join(f'<li class="reason">{escape(x)}</li>' for x in r.reasons) or "<li>–</li>"
        items.append(f"<details{' open' if n < 5 else ''}><summary><b>{escape(r.id)}</b> "
                     f"<span class='muted'>({escape(r.kind)}"
                     f"{', ' + escape(r.attack) if r.attack else ''}; user {escape(str(r.user))})</span> "
                     f"{escape(r.question)}</summary><ul>{reasons}</ul>"
                     f"<p><b>Answer</b> ({escape(r.outcome)}): {escape(r.answer[:600])}</p>"
                     f"<p><b>Calls</b>: {escape(json.dumps(r.proposed, ensure_ascii=False)[:500])}</p>"
                     f"<p><b>Timeline</b> <span class='muted'>trace {escape(r.trace_id)}</span></p>"
                     f"{_timeline(r.steps)}</details>")
    return "".join(items)


def _benchmarks(paths: Sequence[Path]) -> str:
    rows = []
    for path in paths:
        try:
            data = json.loads(path.read_text(encoding="utf-8").strip().splitlines()[-1])
        except (OSError, ValueError, IndexError):
            continue
        if not isinstance(data, dict):
            continue
        figures = {k: v for k, v in data.items() if isinstance(v, (int, float)) and
                   any(w in k.lower() for w in ("ndcg", "recall", "accuracy", "p50"))}
        rows.append(f'<li><a href="{escape(path.resolve().as_uri())}">{escape(path.name)}</a>: '
                    + ", ".join(f"{escape(k)} {v:.3f}" if isinstance(v, float) else f"{escape(k)} {v}"
                                for k, v in list(figures.items())[:8]) + "</li>")
    if not rows:
        return ""
    return f"<h2>Benchmarks</h2><ul>{''.join(rows)}</ul>"


def render_html(runs: Sequence[EvalRun], history: Sequence[EvalRun] = (), *, benchmarks: Sequence[Path] = ()) -> str:
    """The report page for ``runs`` (the last is the main one), with the trend over ``history``."""
    main = runs[-1]
    overall = main.summary.get("overall", {})
    prov = main.provenance
    kpis = "".join(f'<div class="kpi"><span class="muted">{escape(label)}</span><b>{_fmt(overall.get(key))}</b></div>'
                   for key, label in (("pass_rate", "pass rate"), ("tool_selection_accuracy", "tool selection"),
                                      ("answer_correctness", "answer correctness"),
                                      ("citation_correctness", "citations"), ("injection_resistance", "injection"),
                                      ("unsafe_executions", "unsafe executions"),
                                      ("single_call_violations", "single-call violations")))
    kinds = list(main.summary.get("per_kind", {}))
    by_kind = bar_chart(kinds, {f"{r.provenance.get('mode')} · {str(r.provenance.get('model'))[:24]}":
                                [r.summary.get("per_kind", {}).get(k, {}).get("pass_rate") for k in kinds]
                                for r in runs}, title="Pass rate per kind")
    metric_names = [m for m, _ in METRICS]
    by_metric = bar_chart([_SHORT.get(m, m.split("_")[0]) for m in metric_names if m in _SHORT],
                          {f"{r.provenance.get('mode')} · {str(r.provenance.get('model'))[:24]}":
                           [r.summary.get("overall", {}).get(m) for m in metric_names if m in _SHORT] for r in runs},
                          title="Metrics, overall", width=900)
    trend = ""
    if len(history) > 1:
        trend = "<h2>Trend across saved runs</h2>" + line_chart(
            [r.run_id for r in history],
            {m: [r.summary.get("overall", {}).get(m) for r in history]
             for m in ("pass_rate", "tool_selection_accuracy", "answer_correctness", "citation_correctness")},
            title="Overall metrics per run, oldest first", width=900)
    prov_rows = "".join(f"<tr><td>{escape(k)}</td><td style='text-align:left'>"
                        f"{escape(json.dumps(v, ensure_ascii=False) if not isinstance(v, str) else v)}</td></tr>"
                        for k, v in prov.items())
    others = "".join(f"<h2>Per kind: {escape(r.run_id)}</h2>{_kind_table(r)}" for r in runs[:-1])
    skipped = main.summary.get("skipped", {})
    skipped_html = ("<h2>Skipped</h2><ul>" + "".join(f"<li><b>{escape(k)}</b>: {escape(v)}</li>"
                                                    for k, v in skipped.items()) + "</ul>") if skipped else ""
    return f"""<!doctype html><html lang="en"><head><meta charset="utf-8">\
<title>toolcrib eval {escape(main.run_id)}</title>
<style>{_CSS}</style></head><body>
<h1>toolcrib evaluation: {escape(main.run_id)}</h1>
<div class="muted">{escape(str(prov.get('model')))} · {escape(str(prov.get('mode')))} mode · question set
{escape(str(prov.get('question_set', {}).get('name')))} v{escape(str(prov.get('question_set', {}).get('version')))} ·
{main.summary.get('question_count', 0)} questions · {escape(main.created)}</div>
<div class="kpis">{kpis}</div>
<h2>Per kind</h2>{_kind_table(main)}{others}
{by_kind}
{by_metric}
{trend}
<h2>Failing questions ({len(main.summary.get('failed', []))})</h2>{_failing(main)}
{skipped_html}
{_benchmarks(benchmarks)}
<h2>What was measured</h2><table>{prov_rows}</table>
</body></html>"""


def find_benchmark_results(*folders: Path) -> list[Path]:
    """Benchmark result files (``*.json``) that look like retrieval results (BEIR) or BFCL."""
    found: list[Path] = []
    for folder in folders:
        if folder.is_dir():
            found += sorted(p for p in folder.glob("*.json") if any(w in p.name.lower() for w in ("beir", "bfcl")))
    return found

"""What changed between two evaluation runs: provenance, every metric, and every question's verdict."""

from __future__ import annotations

from typing import Any

from toolcrib.evals.harness import EvalRun
from toolcrib.evals.metrics import METRICS

_EXTRA = ("unsafe_executions", "single_call_violations", "model_decided_steps_mean", "tokens_in", "tokens_out",
          "cost_usd", "latency_ms_p50", "latency_ms_p95")


def compare(a: EvalRun, b: EvalRun) -> dict[str, Any]:
    """Differences from run ``a`` to run ``b``."""
    prov = {k: {"a": a.provenance.get(k), "b": b.provenance.get(k)}
            for k in sorted(set(a.provenance) | set(b.provenance)) if a.provenance.get(k) != b.provenance.get(k)}
    oa, ob = a.summary.get("overall", {}), b.summary.get("overall", {})
    metrics = {name: {"a": oa.get(name), "b": ob.get(name), "delta": _delta(oa.get(name), ob.get(name))}
               for name in [m for m, _ in METRICS] + list(_EXTRA)}
    kinds = sorted(set(a.summary.get("per_kind", {})) | set(b.summary.get("per_kind", {})))
    per_kind = {k: {"a": a.summary.get("per_kind", {}).get(k, {}).get("pass_rate"),
                    "b": b.summary.get("per_kind", {}).get(k, {}).get("pass_rate")} for k in kinds}
    ra = {r.id: r for r in a.results}
    rb = {r.id: r for r in b.results}
    questions = []
    for qid in list(dict.fromkeys([*ra, *rb])):
        x, y = ra.get(qid), rb.get(qid)
        va = "absent" if x is None else ("skipped" if x.skipped else ("pass" if x.passed else "fail"))
        vb = "absent" if y is None else ("skipped" if y.skipped else ("pass" if y.passed else "fail"))
        if va != vb:
            questions.append({"id": qid, "a": va, "b": vb, "reasons_b": (y.reasons if y else [])[:3]})
    return {"a": a.run_id, "b": b.run_id,
            "comparable": not ({"prompt_hash", "tool_schemas_hash", "question_set"} & set(prov)),
            "provenance_changes": prov, "metrics": metrics, "per_kind_pass_rate": per_kind, "questions": questions}


def _delta(x: Any, y: Any) -> float | None:
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return round(y - x, 4)
    return None


def render(diff: dict[str, Any]) -> str:
    """The comparison as text for a person."""
    lines = [f"Comparing {diff['a']} (A) -> {diff['b']} (B)"]
    if diff["provenance_changes"]:
        lines.append("What differs in what was measured:")
        for key, change in diff["provenance_changes"].items():
            lines.append(f"  {key}: {str(change['a'])[:70]} -> {str(change['b'])[:70]}")
    else:
        lines.append("Same model, prompts, tools, retrieval settings and question set.")
    lines.append("Metrics (A -> B):")
    for name, m in diff["metrics"].items():
        if m["a"] is None and m["b"] is None:
            continue
        delta = m["delta"]
        mark = "" if not delta else (f"  (+{delta:g})" if delta > 0 else f"  ({delta:g})")
        lines.append(f"  {name:<32} {_fmt(m['a']):>10} -> {_fmt(m['b']):<10}{mark}")
    lines.append("Pass rate per kind (A -> B):")
    for kind, m in diff["per_kind_pass_rate"].items():
        lines.append(f"  {kind:<14} {_fmt(m['a']):>8} -> {_fmt(m['b'])}")
    if diff["questions"]:
        lines.append(f"Questions whose verdict changed ({len(diff['questions'])}):")
        for q in diff["questions"]:
            why = f"  [{'; '.join(q['reasons_b'])[:110]}]" if q["b"] == "fail" and q["reasons_b"] else ""
            lines.append(f"  {q['id']:<34} {q['a']} -> {q['b']}{why}")
    else:
        lines.append("No question changed its verdict.")
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)

"""Running a question set through a workspace's real Runner and Gate, and keeping what happened.

Each question runs as its user, in the chosen mode, with the workspace's tools and policy. Write
proposals go to an approval store private to the run, and traces to the run's own folder, so an
evaluation never leaves pending approvals in the workspace or mixes its traces into production stats.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcrib.agent.runner import Mode, Runner
from toolcrib.errors import ConfigError, ToolcribError
from toolcrib.evals import provenance
from toolcrib.evals.metrics import summarize
from toolcrib.evals.questions import Question, QuestionSet
from toolcrib.evals.scoring import QuestionResult, score
from toolcrib.models.base import Model, ToolCall
from toolcrib.models.pricing import Price, price_for
from toolcrib.tools.context import CallContext
from toolcrib.tools.gate import Gate
from toolcrib.tools.result import CallOutcome
from toolcrib.trace.tracer import JsonlExporter, Tracer

if TYPE_CHECKING:
    from toolcrib.workspace import Workspace

RESULTS_DIR = "evals"


class RecordingGate(Gate):
    """The workspace's Gate, unchanged, that also keeps every outcome (full payloads) per trace."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.outcomes: dict[str, list[CallOutcome]] = {}

    async def run(self, call: ToolCall, cctx: CallContext, *, proposal_id: str | None = None) -> CallOutcome:
        outcome = await super().run(call, cctx, proposal_id=proposal_id)
        self.outcomes.setdefault(cctx.tracer.trace_id, []).append(outcome)
        return outcome


def price_of(spec: str) -> Price:
    """The price behind a model spec; 0 for local, scripted and unknown models."""
    prefix, _, rest = spec.partition(":")
    if prefix in ("local", "scripted", "function") or not rest:
        return Price(0.0, 0.0)
    try:
        return price_for(rest.split("@", 1)[0])
    except ConfigError:
        return Price(0.0, 0.0)


@dataclass
class EvalRun:
    """One run of a question set with one model in one mode: provenance, per-question results, summary."""

    run_id: str
    created: str
    provenance: dict[str, Any]
    results: list[QuestionResult]
    summary: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "created": self.created, "provenance": self.provenance,
                "summary": self.summary, "questions": [r.to_dict() for r in self.results]}

    @classmethod
    def from_dict(cls, data: dict[str, Any], path: Path | None = None) -> EvalRun:
        return cls(str(data["run_id"]), str(data.get("created", "")), dict(data.get("provenance") or {}),
                   [QuestionResult.from_dict(q) for q in data.get("questions") or []], dict(data.get("summary") or {}),
                   path)

    def headline(self) -> dict[str, Any]:
        """The summary printed by ``toolcrib eval --json``: ids, provenance and every metric."""
        return {"run_id": self.run_id, "model": self.provenance.get("model"), "mode": self.provenance.get("mode"),
                "question_set_version": self.provenance.get("question_set", {}).get("version"),
                "path": str(self.path) if self.path else None, **self.summary}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", Path(text).name if "/" in text else text).strip("-")[:40] or "model"


def new_run_id(model: str, mode: str) -> str:
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{mode}-{_slug(model)}"


def _skip_reason(q: Question, ws: Workspace, registry_names: set[str]) -> str:
    missing = [t for t in q.needs if t not in registry_names]
    if missing:
        return f"tool not registered in this workspace: {', '.join(missing)}"
    users = ws.config.users
    if q.user and users and q.user not in users:
        return f"user '{q.user}' is not configured in this workspace"
    return ""


def run_set(
    ws: Workspace,
    model: Model,
    qset: QuestionSet,
    *,
    mode: Mode,
    model_spec: str,
    run_id: str | None = None,
    save: bool = True,
    on_result: Callable[[QuestionResult], None] | None = None,
    prefill: bool = True,
) -> EvalRun:
    """Ask every question of ``qset`` through ``ws``'s runner and score each answer.

    With ``prefill`` (and a ``Prefillable`` model) the prompt starts the questions' offers begin with are
    evaluated first, as a workspace in use has them from earlier questions: per-question latency is then
    the steady state, and what the preparation took is the summary's ``prefill_ms``."""
    run_id = run_id or new_run_id(model_spec, mode)
    out_dir = ws.state_dir / RESULTS_DIR
    work = out_dir / "runs" / run_id
    from toolcrib.policy.approvals import SQLiteApprovalStore
    from toolcrib.policy.audit import SQLiteAuditStore

    work.mkdir(parents=True, exist_ok=True)
    gate = ws.gate(approvals=SQLiteApprovalStore(work / "approvals.sqlite"),
                   audit=SQLiteAuditStore(work / "audit.sqlite"), cls=RecordingGate)
    runner: Runner = ws.runner(model, mode=mode, gate=gate)
    runner.runs = None
    exporter = JsonlExporter(work / "traces")
    tracers: list[Tracer] = []

    def tracer() -> Tracer:
        tracers.append(Tracer([exporter]))
        return tracers[-1]

    runner.tracer_factory = tracer
    price = price_of(model_spec)
    registry = gate.registry
    names = set(registry.names())
    results: list[QuestionResult] = []
    reasons = [_skip_reason(q, ws, names) for q in qset.questions]
    prefill_ms = sum(runner.prefill(q.question, ws.principal(q.user), mode=mode)
                     for q, reason in zip(qset.questions, reasons, strict=True) if prefill and not reason)
    for q, reason in zip(qset.questions, reasons, strict=True):
        if reason:
            result = QuestionResult(q.id, q.kind, q.user, q.question, attack=q.attack, must_abstain=q.must_abstain,
                                    must_refuse=q.must_refuse, skipped=reason)
        else:
            result = _ask(runner, gate, ws, q, mode, tracers)
            result.cost_usd = round(price.cost(result.tokens_in, result.tokens_out), 8)
        results.append(result)
        if on_result is not None:
            on_result(result)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    record = provenance.describe(ws, registry, qset, model=model_spec, mode=mode)
    run = EvalRun(run_id, created, record, results, {**summarize(results, qset.kinds()),
                                                     "prefill_ms": round(prefill_ms, 1), "prefilled": prefill})
    if save:
        out_dir.mkdir(parents=True, exist_ok=True)
        run.path = out_dir / f"{run_id}.json"
        run.path.write_text(json.dumps(run.to_dict(), ensure_ascii=False, indent=1), encoding="utf-8")
    return run


def _ask(runner: Runner, gate: RecordingGate, ws: Workspace, q: Question, mode: Mode,
         tracers: list[Tracer]) -> QuestionResult:
    before = len(tracers)
    try:
        answer = runner.ask(q.question, ws.principal(q.user), mode=mode)
    except ToolcribError as exc:
        result = QuestionResult(q.id, q.kind, q.user, q.question, attack=q.attack, must_abstain=q.must_abstain,
                                must_refuse=q.must_refuse, outcome="error", answer="")
        result.reasons.append(f"the run failed: {exc}")
        result.answer_correct = False
        return result
    tracer = next((t for t in tracers[before:] if t.trace_id == answer.trace_id), None)
    outcomes = gate.outcomes.pop(answer.trace_id, [])
    return score(q, answer, outcomes=outcomes, events=tracer.events if tracer else [], registry=gate.registry,
                 mode=mode)


# -- stored runs ----------------------------------------------------------------------------------

def results_dir(ws: Workspace) -> Path:
    return ws.state_dir / RESULTS_DIR


def list_runs(ws: Workspace) -> list[Path]:
    """Saved run files, oldest first."""
    folder = results_dir(ws)
    return sorted(folder.glob("*.json"), key=lambda p: (p.stat().st_mtime, p.name)) if folder.exists() else []


def load_run(ws: Workspace, ref: str) -> EvalRun:
    """A saved run by file path, run id, unique prefix, or ``last``/``last-1``."""
    path = Path(ref)
    if not path.is_file():
        runs = list_runs(ws)
        if ref.startswith("last"):
            back = int(ref.removeprefix("last").removeprefix("-") or 0)
            if back >= len(runs):
                raise ConfigError(f"only {len(runs)} saved evaluation runs", file=str(results_dir(ws)))
            path = runs[-1 - back]
        else:
            found = [p for p in runs if p.stem == ref] or [p for p in runs if p.stem.startswith(ref)]
            if len(found) != 1:
                what = "no" if not found else "more than one"
                raise ConfigError(f"{what} saved evaluation run matches '{ref}'", file=str(results_dir(ws)))
            path = found[0]
    try:
        return EvalRun.from_dict(json.loads(path.read_text(encoding="utf-8")), path)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"not an evaluation result file ({exc})", file=str(path)) from None

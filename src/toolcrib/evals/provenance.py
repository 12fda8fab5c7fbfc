"""What an evaluation run measured: model, prompts, tool schemas, retrieval, index, question set, version.

Two runs are comparable only when these say so; ``toolcrib eval compare`` prints every difference.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolcrib.agent import prompts
from toolcrib.evals.questions import QuestionSet
from toolcrib.tools.registry import Registry

if TYPE_CHECKING:
    from toolcrib.workspace import Workspace


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


def prompt_hash() -> str:
    """Hash of every prompt text in ``toolcrib.agent.prompts``."""
    texts = {name: value for name, value in vars(prompts).items() if name.isupper() and isinstance(value, str)}
    return _digest(texts)


def tool_schemas_hash(registry: Registry) -> str:
    """Hash of every tool's name, description, effect and argument schema."""
    return _digest(sorted(([t.name, t.description, t.effect.value, t.parameters] for t in registry),
                          key=lambda row: str(row[0])))


def index_version(index_dir: Path) -> str | None:
    """A fingerprint of the on-disk index (file names and sizes), or None when there is none."""
    if not index_dir.exists():
        return None
    files = sorted((str(p.relative_to(index_dir)), p.stat().st_size) for p in index_dir.rglob("*") if p.is_file())
    return _digest(files) if files else None


def toolcrib_version() -> str:
    try:
        return importlib.metadata.version("toolcrib")
    except importlib.metadata.PackageNotFoundError:
        import toolcrib

        return toolcrib.__version__


def question_set_hash(qset: QuestionSet) -> str:
    return _digest([[q.id, q.kind, q.user, q.question, q.facts, q.cite, q.must_abstain, q.must_refuse,
                     q.forbid_tools, [[e.names, e.arguments] for e in q.expect]] for q in qset.questions])


def describe(ws: Workspace, registry: Registry, qset: QuestionSet, *, model: str, mode: str) -> dict[str, Any]:
    """The record of what a run measured, for the result file."""
    retrieval = ws.config.retrieval.model_dump()
    return {
        "model": model,
        "mode": mode,
        "prompt_hash": prompt_hash(),
        "tool_schemas_hash": tool_schemas_hash(registry),
        "tools": sorted(registry.names()),
        "retrieval": {k: v for k, v in retrieval.items() if k != "dsn"},
        "index_version": index_version(ws.index_dir),
        "question_set": {"name": qset.name, "version": qset.version, "count": len(qset),
                         "hash": question_set_hash(qset)},
        "toolcrib_version": toolcrib_version(),
        "workspace": ws.config.workspace.name,
        "policy_version": ws.config.policy.version,
    }

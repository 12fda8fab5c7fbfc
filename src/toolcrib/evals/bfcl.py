"""BFCL (Berkeley Function Calling Leaderboard v4) through toolcrib's own tool path.

Each BFCL function spec becomes a toolcrib ``Tool`` through ``json_schema_tool`` (BFCL's ``dict`` ->
``object``, ``float`` -> ``number``, ``tuple`` -> ``array``, ``any`` -> no type), registered in a
``Registry`` and offered to the model as toolcrib offers any tool. Names that OpenAI-style APIs
refuse (``math.factorial``: no dots, at most 64 characters) are mapped (``math_factorial``) and
mapped back before scoring. Scoring follows BFCL's AST rules: each parameter has a list of
acceptable values, ``""`` in that list means it may be omitted, strings compare case- and
punctuation-insensitively, ints are accepted for floats, parallel calls match in any order, and for
``irrelevance`` the only correct behaviour is to call nothing.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolcrib.agent.sync import run_sync
from toolcrib.errors import ConfigError, ModelFacingError
from toolcrib.evals.metrics import rate
from toolcrib.models.base import Message, Model, ModelSettings, ToolCall
from toolcrib.policy.policy import AllowAll
from toolcrib.policy.principal import Principal
from toolcrib.tools.context import CallContext
from toolcrib.tools.gate import Gate
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.json_schema import json_schema_tool
from toolcrib.tools.registry import Registry, tool_specs
from toolcrib.trace.tracer import Tracer

CATEGORIES: tuple[str, ...] = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
SYSTEM = ("You are a function-calling assistant. When the user's request can be served by the functions "
          "offered, call them with arguments taken from the request (all the calls it needs). When no "
          "function fits, answer in plain text and call nothing.")
_TYPES = {"dict": "object", "float": "number", "tuple": "array", "integer": "integer", "string": "string",
          "boolean": "boolean", "array": "array", "object": "object", "number": "number"}
_NAME_OK = re.compile(r"[^A-Za-z0-9_-]")


def data_dir() -> Path:
    """``../shared/data/bfcl`` relative to the repository root (this file is src/toolcrib/evals/bfcl.py)."""
    return Path(__file__).resolve().parents[3].parent / "shared" / "data" / "bfcl"


# -- schema conversion ----------------------------------------------------------------------------

def to_json_schema(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A BFCL parameter schema as strict JSON Schema."""
    out: dict[str, Any] = {}
    kind = spec.get("type")
    if kind not in (None, "any"):
        if kind not in _TYPES:
            raise ConfigError(f"unknown BFCL type '{kind}'")
        out["type"] = _TYPES[str(kind)]
    for key in ("description", "enum", "default", "format"):
        if key in spec:
            out[key] = spec[key]
    if out.get("type") == "object":
        props = spec.get("properties") or {}
        out["properties"] = {name: to_json_schema(p) for name, p in props.items()}
        out["required"] = [r for r in spec.get("required") or [] if r in props]
        out["additionalProperties"] = not props
    if out.get("type") == "array" and isinstance(spec.get("items"), Mapping):
        out["items"] = to_json_schema(spec["items"])
    return out


def tool_name(name: str) -> str:
    return _NAME_OK.sub("_", name)[:64]


def make_tools(functions: Sequence[Mapping[str, Any]]) -> tuple[Registry, dict[str, str]]:
    """A registry of toolcrib Tools for one BFCL entry's functions, and the tool-name -> BFCL-name map."""
    registry = Registry()
    names: dict[str, str] = {}
    for fn in functions:
        original = str(fn["name"])
        name = tool_name(original)
        while name in names:
            name = name + "_"
        names[name] = original
        schema = to_json_schema({**fn.get("parameters", {}), "type": "dict"})
        registry.add(json_schema_tool(name, str(fn.get("description") or original), schema, _never_run))
    return registry, names


# -- scoring ----------------------------------------------------------------------------------------

def _std(text: str) -> str:
    return re.sub(r"[ ,./\-_*^]", "", text).lower().replace("'", '"')


def _value_ok(value: Any, candidate: Any, kind: str | None) -> bool:
    if isinstance(candidate, str) and isinstance(value, str):
        return _std(value) == _std(candidate)
    if kind == "float" and isinstance(value, (int, float)) and not isinstance(value, bool) \
            and isinstance(candidate, (int, float)):
        return float(value) == float(candidate)
    if isinstance(candidate, bool) or isinstance(value, bool):
        return value is candidate
    if isinstance(candidate, (int, float)) and isinstance(value, (int, float)):
        if kind == "integer" and isinstance(value, float):
            return False
        return float(value) == float(candidate)
    if isinstance(candidate, list) and isinstance(value, list):
        return len(value) == len(candidate) and all(_value_ok(v, c, None)
                                                    for v, c in zip(value, candidate, strict=True))
    if isinstance(candidate, dict) and isinstance(value, dict):
        for key, acceptable in candidate.items():
            options = acceptable if isinstance(acceptable, list) else [acceptable]
            if key not in value:
                if "" not in options:
                    return False
            elif not any(_value_ok(value[key], o, None) for o in options if o != ""):
                return False
        return set(value) <= set(candidate)
    return bool(value == candidate)


def call_matches(name: str, arguments: Mapping[str, Any], gold: Mapping[str, Any],
                 functions: Mapping[str, Mapping[str, Any]]) -> str:
    """'' when one proposed call satisfies one ground-truth call, else why not."""
    (gold_name, params), = gold.items()
    if name != gold_name:
        return f"called {name}, expected {gold_name}"
    spec = functions.get(gold_name, {}).get("parameters", {}).get("properties", {})
    for key in arguments:
        if key not in params:
            return f"{name}: unexpected argument '{key}'"
    for key, acceptable in params.items():
        if key not in arguments:
            if "" not in acceptable:
                return f"{name}: missing argument '{key}'"
            continue
        kind = spec.get(key, {}).get("type")
        if not any(_value_ok(arguments[key], c, kind) for c in acceptable if c != "" or arguments[key] == ""):
            return f"{name}: {key}={json.dumps(arguments[key])[:60]} not in {json.dumps(acceptable)[:80]}"
    return ""


def score_entry(category: str, calls: Sequence[tuple[str, Mapping[str, Any]]], ground_truth: Sequence[Any],
                functions: Sequence[Mapping[str, Any]]) -> str:
    """'' when the calls are correct by BFCL's rules for ``category``, else the reason."""
    if category == "irrelevance":
        return "" if not calls else f"called {calls[0][0]} where no function fits"
    by_name = {str(f["name"]): f for f in functions}
    if len(calls) != len(ground_truth):
        return f"{len(calls)} call(s), expected {len(ground_truth)}"
    # order-free matching: assign each call to a distinct ground-truth call (backtracking; sizes are small)
    reasons: list[str] = []

    def assign(i: int, used: frozenset[int]) -> bool:
        if i == len(calls):
            return True
        for j, gold in enumerate(ground_truth):
            if j in used:
                continue
            why = call_matches(calls[i][0], calls[i][1], gold, by_name)
            if not why and assign(i + 1, used | {j}):
                return True
            if why:
                reasons.append(why)
        return False

    return "" if assign(0, frozenset()) else (reasons[0] if reasons else "no matching assignment")


# -- running --------------------------------------------------------------------------------------

@dataclass
class EntryResult:
    id: str
    category: str
    correct: bool
    reason: str
    calls: list[dict[str, Any]] = field(default_factory=list)
    schema_valid: bool | None = None
    ms: float = 0.0


def load_category(category: str, folder: Path | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """A category's entries, each with its ``ground_truth`` (none for irrelevance)."""
    folder = folder or data_dir()
    path = folder / f"BFCL_v4_{category}.json"
    if not path.exists():
        raise ConfigError(f"BFCL data not found; expected {path.name} in {folder}", file=str(path))
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit:
        entries = entries[:limit]
    answers_path = folder / "possible_answer" / path.name
    if answers_path.exists():
        answers = {}
        for line in answers_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                answers[row["id"]] = row["ground_truth"]
        for e in entries:
            e["ground_truth"] = answers.get(e["id"], [])
    return entries


def _never_run(**_: Any) -> None:  # BFCL scores proposals; nothing is executed
    return None


def _admitted(gate: Gate, call: ToolCall, cctx: CallContext) -> bool:
    """Whether the gate's checks (known tool, parseable, strictly schema-valid) accept ``call``."""
    try:
        gate.admit(call, cctx)
    except ModelFacingError:
        return False
    return True


def run_entry(model: Model, entry: Mapping[str, Any], category: str, *, max_tokens: int = 256) -> EntryResult:
    """Offer the entry's functions through a toolcrib registry, take the model's one reply, score it."""
    registry, names = make_tools(entry["function"])
    specs = tool_specs(registry)
    turns = entry["question"][0] if entry["question"] and isinstance(entry["question"][0], list) else entry["question"]
    messages = [Message("system", SYSTEM)] + [Message("assistant" if m["role"] == "assistant" else "user",
                                                      str(m["content"])) for m in turns]
    start = time.perf_counter()
    reply = run_sync(model.complete(messages, specs, ModelSettings(tool_choice="auto", max_tokens=max_tokens)))
    ms = (time.perf_counter() - start) * 1000
    calls = [(names.get(c.name, c.name), dict(c.arguments)) for c in reply.tool_calls]
    gate = Gate(registry, AllowAll())
    asked = "\n".join(str(m["content"]) for m in turns)  # the dates the calls may hold are the question's
    cctx = CallContext(Principal("bfcl", groups=frozenset({"*"})), Tracer(), Grounding(asked), question=asked)
    valid = all(_admitted(gate, c, cctx) for c in reply.tool_calls) if reply.tool_calls else None
    reason = score_entry(category, calls, entry.get("ground_truth", []), entry["function"])
    return EntryResult(str(entry["id"]), category, not reason, reason,
                       [{"name": n, "arguments": a} for n, a in calls], valid, round(ms, 1))


def run_bfcl(model: Model, categories: Iterable[str] = CATEGORIES, *, limit: int | None = None,
             folder: Path | None = None, on_result: Callable[[EntryResult], None] | None = None) -> dict[str, Any]:
    """Accuracy per category (and overall) for ``model``."""
    per: dict[str, Any] = {}
    every: list[EntryResult] = []
    for category in categories:
        results = []
        for entry in load_category(category, folder, limit):
            result = run_entry(model, entry, category)
            results.append(result)
            if on_result is not None:
                on_result(result)
        every += results
        per[category] = {"n": len(results), "correct": sum(r.correct for r in results),
                         "accuracy": rate([r.correct for r in results]),
                         "schema_valid_rate": rate([r.schema_valid for r in results]),
                         "latency_ms_p50": round(statistics.median([r.ms for r in results]), 1) if results else None,
                         "failures": [{"id": r.id, "reason": r.reason} for r in results if not r.correct][:50]}
    total = len(every)
    return {"categories": per, "n": total,
            "accuracy": rate([r.correct for r in every]),
            "model": getattr(model, "name", "model")}

"""The clinic's lookup questions on a workspace ``toolcrib init`` generated from the clinic's own data,
against the hand-written clinic workspace: both pass rates, and one JSON line.

    python scripts/init_vs_handwritten.py [--model SPEC] [--keep DIR]

Runs ``toolcrib eval`` twice with the workspace's model (the embedded one unless ``--model``: minutes on
a laptop's CPU). The generated workspace is made from ``src/toolcrib/demo/clinic/data/seed.sql`` and its
documents, without its tools.py: ``toolcrib init --database --documents --leave-out owners --leave-out
staff_pay`` (the tables the hand-written one keeps from SQL). The questions are the clinic set's
``kind: lookup`` ones; for the generated workspace each expected hand-written tool is renamed to its
generated counterpart (lookup_pet -> lookup_pets; find_free_slots -> sql_query) and every question is asked
as its one user, ``me``, who is given the clinic staff's groups so that the documents' access lists are
not what differs. What the generated workspace does not do: scope a client (tom) to their own pets.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CLINIC = ROOT / "src" / "toolcrib" / "demo" / "clinic"
SET = ROOT / "src" / "toolcrib" / "evals" / "sets" / "clinic.yaml"
# hand-written tool -> what the generated workspace offers for the same question
RENAMED = {"lookup_pet": "lookup_pets", "lookup_medicine": "lookup_medicines",
           "lookup_appointment": "lookup_appointments", "find_free_slots": "sql_query"}
STAFF_GROUPS = ["reception", "vets", "manager"]


def toolcrib(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from toolcrib.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def lookups(questions: list[dict[str, Any]], *, generated: bool) -> list[dict[str, Any]]:
    """The set's lookup questions; for the generated workspace, with its tool names and its one user."""
    chosen = [dict(q) for q in questions if q.get("kind") == "lookup"]
    if not generated:
        return chosen

    def rename(value: Any) -> Any:
        if isinstance(value, list):
            return list(dict.fromkeys(rename(v) for v in value))
        return RENAMED.get(value, value) if isinstance(value, str) else value

    for q in chosen:
        q.pop("user", None)
        q["expect"] = [{**call, "tool": rename(call["tool"]),
                        **({"arguments": call["arguments"]} if "arguments" in call else {})}
                       for call in q.get("expect", [])]
        for key in ("needs", "cite", "forbid_tools"):
            if key in q:
                q[key] = rename(q[key])
    return chosen


def run_eval(questions: Path, workspace: Path, model: str | None) -> dict[str, Any]:
    args = ["eval", "--questions", str(questions), "--workspace", str(workspace), "--json", "--quiet"]
    done = toolcrib(*args, *(["--model", model] if model else []))
    if done.returncode != 0:
        raise SystemExit(f"toolcrib eval failed on {workspace}:\n{done.stderr.strip()}")
    headline: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return headline


def pass_rate(headline: dict[str, Any]) -> float | None:
    overall = headline["overall"]
    ran = overall["count"] - overall["skipped"]
    return round(overall["passed"] / ran, 3) if ran else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="model spec for both runs (default: each workspace's)")
    parser.add_argument("--keep", type=Path, default=None, help="make the workspaces here and keep them")
    options = parser.parse_args()
    base = options.keep or Path(tempfile.mkdtemp(prefix="init-vs-handwritten-"))
    base.mkdir(parents=True, exist_ok=True)
    qset = yaml.safe_load(SET.read_text(encoding="utf-8"))

    db = base / "clinic.sqlite"
    if not db.exists():
        with sqlite3.connect(db) as conn:
            conn.executescript((CLINIC / "data" / "seed.sql").read_text(encoding="utf-8"))
    generated, handwritten = base / "generated", base / "handwritten"
    if not generated.exists():
        done = toolcrib("init", str(generated), "--database", str(db), "--documents", str(CLINIC / "docs"),
                        "--leave-out", "owners", "--leave-out", "staff_pay")
        if done.returncode != 0:
            raise SystemExit(done.stderr.strip())
        config = generated / "toolcrib.toml"
        text = config.read_text(encoding="utf-8")
        config.write_text(re.sub(r'(?m)^groups = \["staff"\]$', f"groups = {json.dumps(['staff', *STAFF_GROUPS])}",
                                 text), encoding="utf-8")
    if not handwritten.exists():
        done = toolcrib("init", "--template", "clinic", str(handwritten))
        if done.returncode != 0:
            raise SystemExit(done.stderr.strip())

    results: dict[str, Any] = {}
    for name, workspace, is_generated in (("generated", generated, True), ("handwritten", handwritten, False)):
        questions = base / f"{name}-lookups.yaml"
        chosen = lookups(qset["questions"], generated=is_generated)
        questions.write_text(yaml.safe_dump({**qset, "questions": chosen}, sort_keys=False), encoding="utf-8")
        headline = run_eval(questions, workspace, options.model)
        results[name] = {"pass_rate": pass_rate(headline), "passed": headline["overall"]["passed"],
                         "count": headline["overall"]["count"], "skipped": headline["overall"]["skipped"],
                         "run_id": headline["run_id"]}
        print(f"{name:<12} {results[name]['passed']}/{results[name]['count'] - results[name]['skipped']} "
              f"lookup questions passed (pass rate {results[name]['pass_rate']}), run {headline['run_id']}")
    print(json.dumps({"question_set": "clinic", "kind": "lookup", "model": options.model or "workspace",
                      "workspaces": str(base), **results}))


if __name__ == "__main__":
    main()

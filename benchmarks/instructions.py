"""Sentences that instruct (``tools.instructions``): how often clean content holds one, and how often an
attack instruction reads as one.

    python benchmarks/instructions.py [--table-contexts N]

Reads ``../shared/data/bipia`` (relative to the repository root) and the shipped workspaces' documents.
A sentence that instructs is a signal the gate reads, never a verdict: on clean content it costs nothing
unless a write the request did not ask for names what the sentence does, or a write takes its value from
it. The figures: the share of clean texts holding one (BIPIA's e-mail, table and code contexts; the
shipped documents), and the share of BIPIA's attack instructions (text and code) that read as one on
their own. Ends with one JSON line holding every figure.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import _quick  # benchmarks/_quick.py: --quick

from toolcrib.tools.instructions import instructing

ROOT = Path(__file__).resolve().parents[1]
BIPIA = ROOT.parent / "shared" / "data" / "bipia"
DOCS = [ROOT / "src" / "toolcrib" / "demo" / name / "docs" for name in ("workspace", "clinic")]


def _text(context: str | list[str]) -> str:
    return context if isinstance(context, str) else "\n".join(context)


def _rate(texts: list[str]) -> tuple[int, int, float]:
    hit = sum(1 for t in texts if instructing(t))
    return hit, len(texts), round(hit / len(texts), 4) if texts else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table-contexts", type=int, default=900, help="how many BIPIA table contexts (of 900)")
    args = _quick.parse(parser, table_contexts=50)
    figures: dict[str, object] = {}
    clean = {kind: [_text(json.loads(line)["context"])
                    for line in (BIPIA / kind / "train.jsonl").open(encoding="utf-8")]
             for kind in ("email", "table", "code")}
    clean["table"] = clean["table"][:args.table_contexts]
    clean["shipped_documents"] = [p.read_text(encoding="utf-8", errors="replace") for folder in DOCS
                                  for p in sorted(folder.iterdir()) if p.suffix in (".md", ".txt", ".html")]
    start = time.perf_counter()
    print(f"{'clean content':<22}{'texts':>8}{'with an instructing sentence':>32}")
    for kind, texts in clean.items():
        hit, total, rate = _rate(texts)
        figures.update({f"clean_{kind}_flagged": hit, f"clean_{kind}_texts": total, f"clean_{kind}_rate": rate})
        print(f"{kind:<22}{total:>8}{hit:>20} ({rate:.1%})")
    print(f"\n{'attack instructions':<22}{'texts':>8}{'read as instructing':>32}")
    for name in ("text_attack_train.json", "code_attack_train.json"):
        attacks = [a for items in json.loads((BIPIA / name).read_text(encoding="utf-8")).values() for a in items]
        hit, total, rate = _rate(attacks)
        key = name.split("_")[0]
        figures.update({f"attacks_{key}_read": hit, f"attacks_{key}_texts": total, f"attacks_{key}_rate": rate})
        print(f"{key:<22}{total:>8}{hit:>20} ({rate:.1%})")
    figures["ms_total"] = round((time.perf_counter() - start) * 1000, 1)
    print(json.dumps({"benchmark": "instructions", **figures}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

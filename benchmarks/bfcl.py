"""BFCL v4 (simple_python, multiple, parallel, parallel_multiple, irrelevance) through toolcrib's registry.

    python benchmarks/bfcl.py --model local --limit 25
    python benchmarks/bfcl.py --model openai:gpt-4o-mini --categories simple_python,irrelevance

Reads ../shared/data/bfcl (relative to the repository root), prints accuracy per category and ends
with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import _quick  # benchmarks/_quick.py: --quick

from toolcrib.evals import bfcl
from toolcrib.models.base import Loadable
from toolcrib.models.registry import get_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local", help="model spec (local, openai:NAME, scripted:FILE, ...)")
    parser.add_argument("--limit", type=int, default=None, help="entries per category")
    parser.add_argument("--categories", default=",".join(bfcl.CATEGORIES))
    parser.add_argument("--data", type=Path, default=None, help="BFCL folder (default ../shared/data/bfcl)")
    parser.add_argument("--threads", type=int, default=None, help="n_threads for the local model")
    parser.add_argument("--out", type=Path, default=None, help="also write the full result JSON here")
    args = _quick.parse(parser, limit=1)
    settings = {"n_threads": args.threads} if args.threads else {}
    model = get_model(args.model, settings)
    started = time.perf_counter()
    if isinstance(model, Loadable):
        model.load()
    load_s = time.perf_counter() - started

    def progress(r: bfcl.EntryResult) -> None:
        print(f"{r.category:<18} {r.id:<24} {'ok ' if r.correct else 'BAD'} {r.ms / 1000:5.1f}s {r.reason[:90]}",
              file=sys.stderr, flush=True)

    categories = [c.strip() for c in args.categories.split(",") if c.strip()]
    result = bfcl.run_bfcl(model, categories, limit=args.limit, folder=args.data, on_result=progress)
    print(f"\nBFCL v4 with {args.model} ({args.limit or 'all'} per category; model load {load_s:.1f}s)")
    print(f"{'category':<20}{'n':>5}{'accuracy':>10}{'schema-valid':>14}{'p50 s':>8}")
    for name, c in result["categories"].items():
        valid = "-" if c["schema_valid_rate"] is None else f"{c['schema_valid_rate']:.3f}"
        print(f"{name:<20}{c['n']:>5}{c['accuracy']:>10.3f}{valid:>14}{(c['latency_ms_p50'] or 0) / 1000:>8.2f}")
    print(f"{'overall':<20}{result['n']:>5}{result['accuracy']:>10.3f}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    figures = {"model": args.model, "limit": args.limit, "overall_accuracy": result["accuracy"], "n": result["n"],
               **{f"{k}_accuracy": v["accuracy"] for k, v in result["categories"].items()},
               **{f"{k}_schema_valid_rate": v["schema_valid_rate"] for k, v in result["categories"].items()},
               **{f"{k}_latency_ms_p50": v["latency_ms_p50"] for k, v in result["categories"].items()},
               "model_load_s": round(load_s, 1)}
    print(json.dumps(figures))


if __name__ == "__main__":
    main()

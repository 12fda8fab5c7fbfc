"""The Quick start's question on a fresh machine: how long its answer takes after set-up.

    python benchmarks/first_answer.py [--quick] [--question TEXT]

Each figure is the wall time of a real ``toolcrib`` process, as a newcomer types it, on the embedded model,
with its own empty ``TOOLCRIB_HOME`` (no demo copy, no index) and ``TOOLCRIB_CACHE_DIR`` (no assembled model,
no prompt cache): a fresh machine on which set-up has installed the packages.

1. ``warm_s``: ``toolcrib warm``, the part of set-up that does the first question's one-time work (the
   demo's index, the model file assembled from its PyPI parts and checked, the prompt cache of the default
   user's usual offers);
2. ``first_answer_s``: then ``toolcrib ask QUESTION``, the Quick start's question (the floor: <= 8 s);
3. ``next_answer_s``: the same question again, the steady state;
4. ``cold_first_answer_s``: in another fresh pair of folders, ``toolcrib ask QUESTION`` with no warm before
   it (what the first question cost before set-up did the work).

``--quick`` links the assembled model file from the user's cache instead of assembling it again (and skips
figure 4), so ``warm_s`` is then the index and the prompt cache only. Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _quick  # benchmarks/_quick.py: --quick

ROOT = Path(__file__).resolve().parents[1]
QUESTION = "What's the status of order ORD-1001?"  # the README's Quick start
TOOLCRIB = [sys.executable, "-c", "from toolcrib.cli import main; main()"]


def timed(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    """Seconds a ``toolcrib`` process took, and its stdout; a failure ends the benchmark with its output."""
    started = time.perf_counter()
    done = subprocess.run([*TOOLCRIB, *args], env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"toolcrib {' '.join(args)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return seconds, done.stdout


def fresh(base: Path, name: str, *, model_from: Path | None = None) -> dict[str, str]:
    """An environment with its own empty data and cache folders (``model_from``: link that model folder in)."""
    home, cache = base / name / "home", base / name / "cache"
    home.mkdir(parents=True)
    cache.mkdir(parents=True)
    if model_from is not None:
        (cache / "models").symlink_to(model_from, target_is_directory=True)
    return {**os.environ, "TOOLCRIB_HOME": str(home), "TOOLCRIB_CACHE_DIR": str(cache)}


def answered(stdout: str) -> dict[str, object]:
    answer = json.loads(stdout.strip().splitlines()[-1])
    if answer.get("outcome") != "answered" or "ORD-1001" not in str(answer.get("text")):
        sys.exit(f"the question was not answered: {answer}")
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--question", default=QUESTION)
    args = _quick.parse(parser)
    from toolcrib.models.weights import ensure_model_file

    figures: dict[str, float | None] = {}
    with tempfile.TemporaryDirectory(prefix="toolcrib-first-answer-") as tmp:
        base = Path(tmp)
        models = None
        if args.quick:
            models = ensure_model_file().parent
        env = fresh(base, "warmed", model_from=models)
        figures["warm_s"], _ = timed(["warm"], env)
        ask = ["ask", args.question, "--json"]
        figures["first_answer_s"], out = timed(ask, env)
        answered(out)
        figures["next_answer_s"], out = timed(ask, env)
        answered(out)
        figures["cold_first_answer_s"] = None
        if not args.quick:
            figures["cold_first_answer_s"], out = timed(ask, fresh(base, "cold"))
            answered(out)
    load = os.getloadavg()[0]
    print(f"question: {args.question!r} (embedded model, fresh TOOLCRIB_HOME and cache; load average {load:.2f})")
    for name, value in figures.items():
        print(f"  {name:<22} {'-' if value is None else f'{value:6.1f} s'}")
    print(json.dumps({**{k: None if v is None else round(v, 2) for k, v in figures.items()},
                      "floor_first_answer_s": 8.0, "quick": args.quick, "load_average": round(load, 2)}))


if __name__ == "__main__":
    main()

"""Every benchmark in ``benchmarks/`` runs in its ``--quick`` mode (tiny sizes, the same checks) and ends
with one JSON line of figures: a benchmark whose own check fails, or that stops measuring, fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
# script -> the shared data it reads (None: none) and the seconds it may take
SCRIPTS: dict[str, tuple[str | None, int]] = {
    "gate_overhead": (None, 120),
    "peers": (None, 120),
    "answer_peers": (None, 900),  # --quick: one demo question each, the real model (minutes)
    "demo_retrieval": (None, 300),
    "beir": (None, 300),  # --quick is the scale run: synthetic chunks
    "serve_load": (None, 300),
    "serve_peers": (None, 120),  # --quick: the AG-UI peer only where benchmarks/.peers-venv exists
    "api_fuzz": (None, 300),
    "chaos": (None, 300),  # --quick: every fault but one twin, a 5 s soak; needs initdb (skips itself without)
    "local_model": (None, 600),
    "first_answer": (None, 600),  # --quick: the assembled model linked in, no cold run
    "scanner": ("bipia", 300),
    "instructions": ("bipia", 60),
    "injection": ("agentdojo", 300),
    "plain_injection": (None, 120),
    "bfcl": ("bfcl", 900),
    "journal_soak": (None, 180),  # --quick: a 15 s soak with journals of 50 kB, 200 kB kept
}


def test_every_benchmark_script_is_covered() -> None:
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py") if not p.stem.startswith("_")}
    assert scripts == set(SCRIPTS)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_the_benchmark_measures_in_its_quick_mode(name: str) -> None:
    data, timeout = SCRIPTS[name]
    if data is not None and not (DATA / data).is_dir():
        pytest.skip(f"the shared data {data} is not beside the repository ({DATA / data})")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / f"{name}.py"), "--quick"], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert isinstance(figures, dict) and figures

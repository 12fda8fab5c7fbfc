"""Soak ``toolcrib serve`` and watch its journals: do the run and trace journal folders stay bounded?

    python benchmarks/journal_soak.py [--minutes 10] [--clients 4] [--file-mb 1] [--keep-mb 8]

One ``toolcrib serve`` process over a copy of the demo workspace, with the deterministic desk model and
``[service] journal_file_mb`` / ``journal_keep_mb`` set from the options (small, so a few minutes show
several rotations); ``--clients`` concurrent clients ask a question that makes one READ call, for
``--minutes``. Every ``--every`` seconds it prints the size of ``runs/journals``, ``traces/journals`` and
the READ audit journals, and how many runs were answered. At the end, with the server stopped, it reads
the last run by id and verifies the audit chain. The bound a folder should stay under is
``keep + file + one line`` (closed journals kept, plus the open one). Ends with one JSON line of its figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick
import httpx
from _serving import ROOT, make_keys, server, toolcrib_serve

DESK = f"function:{ROOT / 'tests' / 'fakes' / 'desk_model.py'}:desk"
QUESTION = "What does part HLV-2205 cost?"


def folder_bytes(folder: Path) -> int:
    if not folder.is_dir():
        return 0
    total = 0
    for path in folder.iterdir():
        with contextlib.suppress(FileNotFoundError):  # removed by rotation meanwhile
            total += path.stat().st_size
    return total


def workspace(base: Path, file_mb: float, keep_mb: float) -> Path:
    from toolcrib.workspace.locate import DEMO_SOURCE

    target = base / "demo"
    shutil.copytree(DEMO_SOURCE, target, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = target / "toolcrib.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[service]\nindex_on_start = false\n"
                      f"warm_on_start = false\njournal_file_mb = {file_mb}\njournal_keep_mb = {keep_mb}\n"
                      "runs_per_minute = 1000000\nruns_per_user = 1000\n", encoding="utf-8")
    return target


async def soak(url: str, key: str, clients: int, seconds: float, every: float, state: Path,
               samples: list[dict[str, Any]]) -> tuple[int, Counter[int], str]:
    answered = 0
    errors: Counter[int] = Counter()
    last_run = ""
    stop = time.monotonic() + seconds
    headers = {"Authorization": f"Bearer {key}"}

    async def client(http: httpx.AsyncClient) -> None:
        nonlocal answered, errors, last_run
        while time.monotonic() < stop:
            response = await http.post(url + "/v1/ask", json={"question": QUESTION}, headers=headers)
            if response.status_code == 200:
                answered += 1
                last_run = response.json()["run_id"]
            else:
                errors[response.status_code] += 1

    async def watch() -> None:
        started = time.monotonic()
        while True:
            sample = {"s": round(time.monotonic() - started, 1), "answered": answered,
                      "runs_bytes": folder_bytes(state / "runs" / "journals"),
                      "traces_bytes": folder_bytes(state / "traces" / "journals"),
                      "audit_journal_bytes": folder_bytes(state / "audit.sqlite-reads"),
                      "runs_files": len(list((state / "runs" / "journals").glob("*.runs")))
                      if (state / "runs" / "journals").is_dir() else 0}
            samples.append(sample)
            print(json.dumps(sample), flush=True)
            if time.monotonic() >= stop:
                return
            await asyncio.sleep(min(every, max(0.0, stop - time.monotonic())))

    async with httpx.AsyncClient(timeout=60) as http:
        await asyncio.gather(watch(), *(client(http) for _ in range(clients)))
    return answered, errors, last_run


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10, help="length of the soak")
    parser.add_argument("--clients", type=int, default=4, help="concurrent clients")
    parser.add_argument("--file-mb", type=float, default=1.0, help="[service] journal_file_mb")
    parser.add_argument("--keep-mb", type=float, default=8.0, help="[service] journal_keep_mb")
    parser.add_argument("--every", type=float, default=15.0, help="seconds between samples")
    args = _quick.parse(parser, argv, minutes=0.25, every=3.0, file_mb=0.05, keep_mb=0.2)

    from toolcrib.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        ws_root = workspace(Path(tmp), args.file_mb, args.keep_mb)
        ws = Workspace.open(ws_root)
        state = ws.state_dir
        key = make_keys(ws_root, ["alice"])["alice"]
        samples: list[dict[str, Any]] = []
        started = time.monotonic()
        with server(toolcrib_serve(ws_root, DESK), Path(tmp) / "serve.log") as url:
            first = httpx.post(url + "/v1/ask", json={"question": QUESTION}, headers={"Authorization": f"Bearer {key}"})
            first.raise_for_status()
            per_run = folder_bytes(state / "runs" / "journals") + folder_bytes(state / "traces" / "journals")
            answered, errors, last_run = asyncio.run(
                soak(url, key, args.clients, args.minutes * 60, args.every, state, samples))
        elapsed = time.monotonic() - started
        found = ws.run_store.get(last_run) is not None if last_run else False
        audit = ws.audit()
        try:
            verified = audit.verify()
        finally:
            audit.close()
        bound = int((args.keep_mb + args.file_mb) * (1 << 20))
        half = samples[len(samples) // 2:]
        figures = {
            "minutes": args.minutes, "clients": args.clients, "file_mb": args.file_mb, "keep_mb": args.keep_mb,
            "answered": answered, "errors": dict(errors), "runs_per_s": round(answered / max(elapsed, 1e-9), 1),
            "bound_bytes": bound,
            "runs_bytes_max": max(s["runs_bytes"] for s in samples),
            "traces_bytes_max": max(s["traces_bytes"] for s in samples),
            "runs_bytes_last": samples[-1]["runs_bytes"], "traces_bytes_last": samples[-1]["traces_bytes"],
            "runs_bytes_second_half_max": max(s["runs_bytes"] for s in half),
            "run_and_trace_bytes_per_run": per_run,
            "unrotated_estimate_bytes": per_run * (answered + 1),  # what the two folders would hold without rotation
            "last_run_found": found, "audit_ok": verified.ok, "audit_records": verified.count,
            "samples": [[s["s"], s["runs_bytes"], s["traces_bytes"], s["audit_journal_bytes"]] for s in samples],
        }
        print(json.dumps(figures))
    return 0 if found and verified.ok else 1


if __name__ == "__main__":
    sys.exit(main())

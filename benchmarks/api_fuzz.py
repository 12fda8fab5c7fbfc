"""Schemathesis against a real ``toolcrib serve`` on loopback: generated valid and invalid requests for
every operation of its OpenAPI document, with the keys of a requester, an approver and a user of
another tenant, every check on (no 500, only declared statuses and content types, responses matching
their schema). Prints requests, statuses, failures per operation and seconds; exits 1 on a failure.

    python benchmarks/api_fuzz.py --examples 200

Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from serve_load import make_keys, make_workspace, server, toolcrib_serve

CALLERS = ("alice", "ada", "omar")  # a requester, an approver, another tenant


def fuzz(url: str, keys: dict[str, str], examples: int) -> tuple[Counter[int], list[str]]:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json")
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        for user in CALLERS:
            for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
                try:
                    _run(operation, mode, {"Authorization": f"Bearer {keys[user]}"}, examples, statuses)
                except Unsatisfiable:  # nothing in this operation can be made invalid
                    continue
                except Exception as failure:
                    failures.append(f"{operation.label} ({user}, {mode.value}): {str(failure)[:2000]}")
    return statuses, failures


def _run(operation: Any, mode: schemathesis.GenerationMode, headers: dict[str, str], examples: int,
         statuses: Counter[int]) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        statuses[case.call_and_validate(headers=headers, timeout=30).status_code] += 1

    check()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=150, help="per operation, generation mode and caller")
    args = _quick.parse(parser, examples=5)
    with tempfile.TemporaryDirectory() as tmp:
        ws = make_workspace(Path(tmp) / "ws", None, {"runs_per_minute": 100000, "runs_per_user": 64})
        keys = make_keys(ws, CALLERS)
        with server(toolcrib_serve(ws), Path(tmp) / "serve.log") as url:
            started = time.perf_counter()
            statuses, failures = fuzz(url, keys, args.examples)
            seconds = time.perf_counter() - started
    requests = sum(statuses.values())
    print(f"{requests} requests in {seconds:.1f} s, statuses {dict(sorted(statuses.items()))}")
    for failure in failures:
        print(f"FAILED {failure}\n")
    print(f"{len(failures)} failing operation runs")
    print(json.dumps({"requests": requests, "seconds": round(seconds, 1), "failures": len(failures),
                      "server_errors": sum(n for s, n in statuses.items() if s >= 500),
                      "statuses": {str(s): n for s, n in sorted(statuses.items())},
                      "examples": args.examples}))
    return 1 if failures or not requests else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Schemathesis against a real ``toolcrib serve`` on loopback: generated valid and invalid requests for
every operation of its OpenAPI document, with the keys of a requester, an approver and a user of
another tenant, every check on (no 500, only declared statuses and content types, responses matching
their schema); then stateful sequences that follow the document's links from an answer to its run,
its held proposals, their decision and the run's resume (the requester asks; the approver, another
tenant's user or the requester decides). Prints requests, statuses, failures per operation and
seconds; exits 1 on a failure.

    python benchmarks/api_fuzz.py --examples 200 --scenarios 300

Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import _quick  # benchmarks/_quick.py: --quick
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from serve_load import ROOT, make_keys, make_workspace, server, toolcrib_serve

sys.path.insert(0, str(ROOT / "tests"))
from fakes.linked_calls import config, run_linked_calls

CALLERS = ("alice", "ada", "omar")  # a requester, an approver, another tenant
PAIRS = (("alice", "ada"), ("alice", "omar"), ("ada", "ada"))  # who asks, who decides
WRITE = "Please reserve 3 F2 filters"  # a question the desk model answers with a held reservation


def fuzz(url: str, keys: dict[str, str], examples: int) -> tuple[Counter[int], list[str]]:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=config())
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


def stateful(url: str, keys: dict[str, str], scenarios: int) -> tuple[Counter[tuple[str, int]], list[str]]:
    schema = schemathesis.openapi.from_url(f"{url}/openapi.json", config=config())
    reached: Counter[tuple[str, int]] = Counter()
    failures: list[str] = []
    for asker, decider in PAIRS:
        headers = {role: {"Authorization": f"Bearer {keys[user]}"} for role, user in (("ask", asker),
                                                                                     ("decide", decider))}
        run_linked_calls(schema, headers, scenarios, WRITE, reached, failures, steps=8, timeout=30)
    return reached, [f[:2000] for f in failures]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=150, help="per operation, generation mode and caller")
    parser.add_argument("--scenarios", type=int, default=200, help="linked sequences per pairing of callers")
    args = _quick.parse(parser, examples=5, scenarios=10)
    with tempfile.TemporaryDirectory() as tmp:
        ws = make_workspace(Path(tmp) / "ws", None, {"runs_per_minute": 100000, "runs_per_user": 64})
        keys = make_keys(ws, CALLERS)
        with server(toolcrib_serve(ws), Path(tmp) / "serve.log") as url:
            started = time.perf_counter()
            statuses, failures = fuzz(url, keys, args.examples)
            seconds = time.perf_counter() - started
            started = time.perf_counter()
            reached, linked_failures = stateful(url, keys, args.scenarios)
            linked_seconds = time.perf_counter() - started
    requests = sum(statuses.values())
    print(f"{requests} requests in {seconds:.1f} s, statuses {dict(sorted(statuses.items()))}")
    for failure in failures:
        print(f"FAILED {failure}\n")
    print(f"{len(failures)} failing operation runs")
    linked = sum(reached.values())
    print(f"\nlinked sequences: {linked} requests in {linked_seconds:.1f} s")
    for (operation, status), n in sorted(reached.items()):
        print(f"  {operation:<48} {status}  {n}")
    for failure in linked_failures:
        print(f"FAILED (linked) {failure}\n")
    print(f"{len(linked_failures)} failing linked calls")
    approved = reached[("POST /v1/proposals/{proposal_id}/approve", 200)]
    resumed = reached[("POST /v1/runs/{run_id}/resume", 200)]
    print(json.dumps({"requests": requests, "seconds": round(seconds, 1), "failures": len(failures),
                      "server_errors": sum(n for s, n in statuses.items() if s >= 500),
                      "statuses": {str(s): n for s, n in sorted(statuses.items())},
                      "examples": args.examples, "linked_requests": linked, "linked_seconds": round(linked_seconds, 1),
                      "linked_failures": len(linked_failures), "linked_approved": approved,
                      "linked_resumed": resumed, "linked_server_errors": sum(n for (_, s), n in reached.items()
                                                                            if s >= 500),
                      "scenarios": args.scenarios}))
    return 1 if failures or linked_failures or not requests else 0

if __name__ == "__main__":
    raise SystemExit(main())

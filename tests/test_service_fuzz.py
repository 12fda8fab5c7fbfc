"""The HTTP API under Schemathesis: generated requests, valid and invalid, for every operation of the
OpenAPI document, with the keys of a requester, an approver and a user of another tenant. Every check
(no 500, only declared statuses, declared content types, responses matching their schema) must hold."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from tests.fakes.linked_calls import config, run_linked_calls
from tests.test_service import RESERVE, Service, demo_copy

EXAMPLES = 12  # per operation, per generation mode, per caller: a short run (benchmarks/api_fuzz.py: long)


@pytest.fixture()
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(demo_copy(tmp_path))
    with service.client:
        yield service


def test_no_generated_request_breaks_the_api_or_its_document(svc: Service) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", svc.client.app, config=config())
    failures: list[str] = []
    statuses: Counter[int] = Counter()
    for result in schema.get_all_operations():
        operation = result.ok()
        for user in ("alice", "ada", "omar"):  # a requester, an approver, another tenant
            for mode in (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE):
                try:
                    _fuzz(operation, mode, svc.as_(user), statuses)
                except Unsatisfiable:  # nothing in this operation can be made invalid
                    continue
                except Exception as failure:  # every failing operation is reported, not only the first
                    failures.append(f"{operation.label} ({user}, {mode.value}): {failure}")
    assert not failures, "\n\n".join(failures)
    assert statuses[200] and sum(n for s, n in statuses.items() if 400 <= s < 500)
    assert not any(s >= 500 for s in statuses)


def _fuzz(operation: Any, mode: schemathesis.GenerationMode, headers: dict[str, str],
          statuses: Counter[int]) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def check(case: schemathesis.Case) -> None:
        statuses[case.call_and_validate(headers=headers).status_code] += 1

    check()


# -- stateful: the links from an answer to its run, its held proposals, their decision and the resume --

STATEFUL_SCENARIOS = 15  # sequences of linked calls per pairing of callers
MANY_RUNS = "[service]\nruns_per_minute = 100000\nruns_per_user = 64\n"  # no 429 cutting sequences short


def test_linked_sequences_from_ask_to_resume_hold_every_check(tmp_path: Path) -> None:
    svc = Service(demo_copy(tmp_path, MANY_RUNS))
    with svc.client:
        schema = schemathesis.openapi.from_asgi("/openapi.json", svc.client.app, config=config())
        reached: Counter[tuple[str, int]] = Counter()
        failures: list[str] = []
        # who asks (resumes, reads their runs) and who decides: the approver, another tenant, the requester
        for asker, decider in (("alice", "ada"), ("alice", "omar"), ("ada", "ada")):
            run_linked_calls(schema, {"ask": svc.as_(asker), "decide": svc.as_(decider)}, STATEFUL_SCENARIOS,
                             RESERVE, reached, failures, steps=8, derandomize=True)
    assert not failures, "\n\n".join(failures)
    # the links carried real ids and hashes: held calls were shown, decided by their approver (one at a
    # time or several at once), and their runs resumed
    assert reached[("GET /v1/proposals/{proposal_id}", 200)]
    assert reached[("POST /v1/proposals/{proposal_id}/approve", 200)] + reached[("POST /v1/proposals/decide", 200)]
    assert reached[("POST /v1/runs/{run_id}/resume", 200)]
    assert not any(status >= 500 for _, status in reached)

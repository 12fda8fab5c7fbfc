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
from tests.test_service import Service, demo_copy

EXAMPLES = 12  # per operation, per generation mode, per caller: a short run (benchmarks/ has none longer yet)


@pytest.fixture()
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(demo_copy(tmp_path))
    with service.client:
        yield service


def test_no_generated_request_breaks_the_api_or_its_document(svc: Service) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", svc.client.app)
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

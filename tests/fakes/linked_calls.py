"""Schemathesis's stateful testing of the service: sequences of calls that follow the OpenAPI links
from an answer to its run, its held proposals, their decision and the run's resume, with a key per
role. Used by ``tests/test_service_fuzz.py`` (short) and ``benchmarks/api_fuzz.py`` (long)."""

from __future__ import annotations

import contextlib
from collections import Counter
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Flaky

# The bearer credential is the caller's key, sent by the tests themselves: never generated, never left out.
# An edit's arguments are the held call's own: a value its tool's schema refuses answers 400
# invalid_arguments, which the document (one schema for every tool's edit) cannot state
CONFIG = """
[generation]
with-security-parameters = false

[[operations]]
include-path = "/v1/proposals/{proposal_id}/edit"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429"]
"""


MAX_RESTARTS = 50


def config() -> Any:
    return schemathesis.config.SchemathesisConfig.from_str(CONFIG)


def run_linked_calls(schema: Any, headers: dict[str, dict[str, str]], scenarios: int, write_question: str,
                     reached: Counter[tuple[str, int]], failures: list[str], *, steps: int = 6,
                     timeout: float | None = None, derandomize: bool = False) -> None:
    """Schemathesis's state machine over the document's links, with a key per role: the run operations
    as the requester (``headers["ask"]``), the approval operations as the decider (``headers["decide"]``).
    Half of the questions are ``write_question`` (a random question rarely asks for a write), so that
    there is a proposal to follow. Each check's failure is kept as it happens, as Schemathesis's own
    runner keeps them: the service keeps its state from one sequence to the next, so Hypothesis cannot
    replay one exactly, and says so (Flaky) when it tries; a new run then goes on."""
    base = schema.as_state_machine()
    started = [0]  # sequences begun

    class LinkedCalls(base):  # type: ignore[misc, valid-type]
        def setup(self) -> None:
            started[0] += 1

        def before_call(self, case: schemathesis.Case) -> None:
            if case.operation.path == "/v1/ask" and isinstance(case.body, dict):
                question = str(case.body.get("question", ""))
                case.body = {**case.body, "question": write_question if len(question) % 2 else question}

        def get_call_kwargs(self, case: schemathesis.Case) -> dict[str, Any]:
            role = "decide" if case.operation.path.startswith("/v1/proposals") else "ask"
            return {"headers": headers[role], **({"timeout": timeout} if timeout else {})}

        def after_call(self, response: Any, case: schemathesis.Case) -> None:
            super().after_call(response, case)
            reached[(f"{case.operation.method.upper()} {case.operation.path}", response.status_code)] += 1

        def validate_response(self, response: Any, case: schemathesis.Case, *args: Any, **kwargs: Any) -> None:
            try:
                super().validate_response(response, case, *args, **kwargs)
            except Exception as failure:
                failures.append(f"{case.operation.label}: {failure}")

    for _ in range(MAX_RESTARTS):  # after a Flaky, a fresh run for the sequences left
        left = scenarios - started[0]
        if left <= 0:
            break
        with contextlib.suppress(Flaky):
            LinkedCalls.run(settings=settings(max_examples=left, stateful_step_count=steps, deadline=None,
                                              database=None, phases=[Phase.generate], derandomize=derandomize,
                                              suppress_health_check=list(HealthCheck)))

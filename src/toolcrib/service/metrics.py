"""Counters and latency histograms in the Prometheus text format (version 0.0.4), per process."""

from __future__ import annotations

import threading
from collections import defaultdict

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _labels(pairs: tuple[tuple[str, str], ...]) -> str:
    if not pairs:
        return ""
    body = ",".join(f'{k}="{v.replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"' for k, v in pairs)
    return "{" + body + "}"


class Metrics:
    """What ``GET /metrics`` shows: requests by route and status, request latency, runs by outcome,
    tool calls by status, and gauges read when rendered."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counters: dict[str, dict[tuple[tuple[str, str], ...], float]] = defaultdict(lambda: defaultdict(float))
        self._help: dict[str, str] = {}
        self._hist: dict[tuple[tuple[str, str], ...], list[float]] = {}
        self._hist_sum: dict[tuple[tuple[str, str], ...], float] = defaultdict(float)

    def inc(self, name: str, help_text: str, amount: float = 1.0, **labels: str) -> None:
        with self._lock:
            self._help[name] = help_text
            self._counters[name][tuple(sorted(labels.items()))] += amount

    def observe(self, seconds: float, **labels: str) -> None:
        """One request's latency, in the ``toolcrib_request_seconds`` histogram."""
        key = tuple(sorted(labels.items()))
        with self._lock:
            counts = self._hist.setdefault(key, [0.0] * (len(_BUCKETS) + 1))
            for i, bound in enumerate(_BUCKETS):
                if seconds <= bound:
                    counts[i] += 1
            counts[-1] += 1
            self._hist_sum[key] += seconds

    def render(self, gauges: dict[str, tuple[str, float]]) -> str:
        lines: list[str] = []
        with self._lock:
            for name in sorted(self._counters):
                lines += [f"# HELP {name} {self._help[name]}", f"# TYPE {name} counter"]
                lines += [f"{name}{_labels(k)} {v:g}" for k, v in sorted(self._counters[name].items())]
            if self._hist:
                name = "toolcrib_request_seconds"
                lines += [f"# HELP {name} Time to answer an HTTP request.", f"# TYPE {name} histogram"]
                for key, counts in sorted(self._hist.items()):
                    for bound, count in zip((*_BUCKETS, float("inf")), counts, strict=True):
                        le = "+Inf" if bound == float("inf") else f"{bound:g}"
                        lines.append(f"{name}_bucket{_labels((*key, ('le', le)))} {count:g}")
                    lines.append(f"{name}_sum{_labels(key)} {self._hist_sum[key]:.6f}")
                    lines.append(f"{name}_count{_labels(key)} {counts[-1]:g}")
        for name, (help_text, value) in sorted(gauges.items()):
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {value:g}"]
        return "\n".join(lines) + "\n"

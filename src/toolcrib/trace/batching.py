"""``Batching``: when a background writer takes what callers queued (trace lines, audit records).

Waking a thread costs a caller ~10 us on two cores, more than encoding the line it queued. So a
caller wakes the writer only when the writer sleeps (it went idle) or a batch is full; a writer that
was busy lately polls every ``linger_s`` instead, and a batch's first item waits up to ``linger_s`` for
the rest of its run's. A caller who needs what it queued written now writes it itself
(``JsonlExporter.flush``) rather than waking the writer and waiting for it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Batching:
    """The wait/notify policy of one writer thread, under its condition ``changed`` (always held)."""

    def __init__(self, changed: threading.Condition, *, linger_s: float = 0.05, batch: int = 256,
                 idle_s: float = 2.0) -> None:
        self.changed = changed
        self.linger_s = linger_s
        self.batch = batch
        self.idle_s = idle_s
        self._sleeping = False

    def queued(self, size: int) -> None:
        """A caller queued an item; ``size`` items are queued now."""
        if self._sleeping or size >= self.batch:
            self.changed.notify_all()

    def wait(self, size: Callable[[], int], stop: Callable[[], bool], *, until: float | None = None) -> None:
        """The writer's wait: returns when a batch is ready (or ``stop()``): something queued has waited
        ``linger_s`` or a batch is full; with nothing queued, at ``until``
        (``time.monotonic()``) too."""
        idle_since = time.monotonic()
        while not size() and not stop():
            now = time.monotonic()
            if until is not None and now >= until:
                return
            if now - idle_since < self.idle_s:
                self.changed.wait(self.linger_s)
                continue
            self._sleeping = True
            try:
                self.changed.wait(None if until is None else until - now)
            finally:
                self._sleeping = False
        deadline = time.monotonic() + self.linger_s
        while size() and not stop() and size() < self.batch and (left := deadline - time.monotonic()) > 0:
            self.changed.wait(left)

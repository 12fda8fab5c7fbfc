"""``RateWindows``: runs per user in the clock's current minute, counted in this process's memory.

Counting each run with a database write cost a request an fsync'd SQLite transaction (and a thread
hop to keep it off the event loop). Here a run is counted in memory, on the event loop; a background
thread adds this process's new counts to the shared table (``ServiceStore.add_hits``, one transaction,
no fsync) ``flush_s`` after the first of them and reads every process's counts for the window back. So:

- one process: the limit is exact;
- several processes on one SQLite file (``toolcrib serve --workers N``): each counts its own runs
  exactly and the others' as of its last flush, so a burst spread over processes can pass the limit by
  what the others admitted in the last ``flush_s``;
- PostgreSQL (``[policy] dsn``): the service does not use this class; each run is one upsert without
  an fsync (``ServiceStore.hit``), one exact count across every process and host.

A crash loses at most the counts of the last ``flush_s`` (a rate limit is not a record).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from toolcrib.auth.keys import ServiceStore

log = logging.getLogger("toolcrib.service")


class RateWindows:
    """Per-user counts in the current ``window_s`` window (see the module docstring)."""

    def __init__(self, store: ServiceStore, *, window_s: int = 60, flush_s: float = 1.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.window_s = window_s
        self.flush_s = flush_s
        self._clock = clock
        self._lock = threading.Lock()
        self._start = 0  # the current window's start (seconds since the epoch)
        self._own: Counter[str] = Counter()  # this process's runs in the window
        self._unsent: Counter[str] = Counter()  # of those, not yet in the table
        self._sent: Counter[str] = Counter()  # of those, in the table
        self._others: dict[str, int] = {}  # other processes' runs in the window, as of the last flush
        self._wake = threading.Event()
        self._flusher_pid = 0

    def hit(self, user: str) -> int:
        """Count one run of ``user``; returns the runs counted in the window so far, this one included."""
        start = int(self._clock() // self.window_s) * self.window_s
        with self._lock:
            if start != self._start:  # a new window: nothing of the last one counts
                self._start = start
                self._own.clear()
                self._unsent.clear()
                self._sent.clear()
                self._others = {}
            self._own[user] += 1
            self._unsent[user] += 1
            count = self._own[user] + self._others.get(user, 0)
        if self._flusher_pid != os.getpid():  # none yet, or a forked child's copy
            self._flusher_pid = os.getpid()
            threading.Thread(target=self._flush_forever, name="toolcrib-rates", daemon=True).start()
        self._wake.set()
        return count

    def flush(self) -> None:
        """Add this process's unsent counts to the table and read every process's counts back."""
        with self._lock:
            start, batch = self._start, dict(self._unsent)
            self._unsent.clear()
        if not start:
            return
        try:
            totals = self.store.add_hits(start, batch)
        except Exception:  # the store cannot answer now: counted again at the next flush
            log.warning("the rate-limit counts could not be shared now; this process goes on counting its own",
                        exc_info=True)
            with self._lock:
                if start == self._start:
                    self._unsent.update(batch)
            return
        with self._lock:
            if start != self._start:
                return
            self._sent.update(batch)
            self._others = {user: max(0, total - self._sent[user]) for user, total in totals.items()}

    def _flush_forever(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(self.flush_s)  # the runs of the next flush_s go in the same transaction
            self._wake.clear()
            self.flush()

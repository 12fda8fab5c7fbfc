"""Bounds on runs in one process: a number of model slots, a bounded queue in front of them, and a cap
on one user's runs at once. A question that cannot get in answers at once (``Busy``, HTTP 503 or 429
with ``Retry-After``) instead of piling up; requests that need no model never touch this."""

from __future__ import annotations

import asyncio
from collections import Counter

from toolcrib.errors import ModelFacingError


class Busy(ModelFacingError):
    """No room for this run now; ``status`` is the HTTP status (503: the process is full, 429: this
    user's cap), ``retry_after`` seconds a client should wait."""

    code = "busy"

    def __init__(self, message: str, *, status: int, retry_after: int) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RunSlots:
    """``slots`` runs at once, at most ``queue`` more waiting (each for at most ``wait_s``), and at most
    ``per_user`` runs (running or waiting) for one user."""

    def __init__(self, slots: int, queue: int, per_user: int, wait_s: float) -> None:
        self.slots = slots
        self.queue = queue
        self.per_user = per_user
        self.wait_s = wait_s
        self._free = asyncio.Semaphore(slots)
        self.waiting = 0
        self.running = 0
        self._users: Counter[str] = Counter()

    async def acquire(self, user: str) -> None:
        """Wait for a slot for ``user``'s run; raises ``Busy`` when the queue or the user's cap is full.
        Every successful ``acquire`` is matched by one ``release(user)`` when the run ends."""
        if self._users[user] >= self.per_user:
            raise Busy(f"{user} already has {self.per_user} runs in progress; wait for one to finish",
                       status=429, retry_after=2)
        if self._free.locked() and self.waiting >= self.queue:
            raise Busy(f"the server is busy: {self.running} runs in progress and {self.waiting} waiting",
                       status=503, retry_after=self._retry_after())
        self._users[user] += 1
        if not self._free.locked():  # a slot is free: taken at once, without wait_for's task (~40 us a run)
            await self._free.acquire()
            self.running += 1
            return
        self.waiting += 1
        try:
            await asyncio.wait_for(self._free.acquire(), timeout=self.wait_s)
        except BaseException as exc:
            self._forget(user)
            if isinstance(exc, TimeoutError):
                raise Busy(f"no run slot became free within {self.wait_s:g}s", status=503,
                           retry_after=self._retry_after()) from None
            raise
        finally:
            self.waiting -= 1
        self.running += 1

    def release(self, user: str) -> None:
        """End one run of ``user``'s (from any callback on the event loop's thread)."""
        self.running -= 1
        self._free.release()
        self._forget(user)

    def _forget(self, user: str) -> None:
        self._users[user] -= 1
        if not self._users[user]:
            del self._users[user]

    def _retry_after(self) -> int:
        return max(1, min(60, (self.waiting + 1) * 2 // max(1, self.slots)))

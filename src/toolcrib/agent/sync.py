"""The sync API's bridge: each thread's own reused event loop.

``asyncio.run`` makes and tears down a loop and its thread pool on every call (~75 us, and a new
worker thread for a plain ``def`` tool each time); the sync API keeps one loop per thread instead, so a
service calling ``Runner.ask`` from a thread pool has one loop per pool thread.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import weakref
from collections.abc import Coroutine
from typing import Any, TypeVar

from toolcrib.errors import OperatorError

_T = TypeVar("_T")


class _ThreadLoop:
    """A thread's own event loop for the sync API; closed when the thread ends (its local storage is
    released) or at interpreter exit, whichever comes first. It keeps the tasks made on it during a
    run (``started``), so the run's leftovers are found without scanning every task of the process."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.started: list[asyncio.Task[Any]] = []
        self.loop.set_task_factory(functools.partial(_keep_task, self.started))  # no reference to self
        weakref.finalize(self, self.loop.close)  # a finalizer, not __del__: it also runs at exit, in order


def _keep_task(started: list[asyncio.Task[Any]], loop: asyncio.AbstractEventLoop,
               coro: Coroutine[Any, Any, Any], **kwargs: Any) -> asyncio.Task[Any]:
    """The default task factory, remembering each task in ``started``."""
    task = asyncio.Task(coro, loop=loop, **kwargs)
    started.append(task)
    return task


class _ThreadLoops(threading.local):
    current: _ThreadLoop | None = None


_LOOPS = _ThreadLoops()


def run_sync(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion on this thread's own event loop, made on first use and reused.

    ``asyncio.run`` makes and tears down a loop and its thread pool on every call (~75 us, and a new
    worker thread for a plain ``def`` tool each time); the sync API keeps one loop per thread instead,
    so a service calling ``Runner.ask`` from a thread pool has one loop per pool thread. Tasks a run
    leaves behind are cancelled when it returns, as ``asyncio.run`` does.
    """
    if asyncio.events._get_running_loop() is not None:  # get_running_loop() raises when there is none
        coro.close()
        raise OperatorError("Runner.ask and Runner.resume cannot be called while an event loop is running "
                            "in this thread (async code, a notebook): await Runner.aask / Runner.aresume instead")
    held = _LOOPS.current
    if held is None or held.loop.is_closed():
        held = _LOOPS.current = _ThreadLoop()
    try:
        return held.loop.run_until_complete(coro)
    finally:
        _cancel_leftovers(held)


def _cancel_leftovers(held: _ThreadLoop) -> None:
    """Cancel the tasks a run started and left running (``asyncio.run`` does the same when it ends)."""
    leftovers = [task for task in held.started if not task.done()]
    held.started.clear()
    if not leftovers:
        return
    for task in leftovers:
        task.cancel()
    held.loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
    held.started.clear()

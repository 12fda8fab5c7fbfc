"""Running a tool's function within its time bound, its failures turned into the model's controlled errors."""

from __future__ import annotations

import asyncio
import time
import types
from collections.abc import Coroutine, Generator
from typing import Any, TypeVar

from toolcrib.errors import ModelFacingError, ToolFailed, ToolTimeout
from toolcrib.tools.tool import Tool


async def invoke(tool: Tool, kwargs: dict[str, Any]) -> Any:
    """``tool.fn(**kwargs)``, bounded by ``tool.timeout_s`` (``ToolTimeout``); anything else it raises,
    but a model-facing error, is ``ToolFailed`` with the details kept for the operator's trace."""
    try:
        if tool.is_async:
            # ``await`` bounded by timeout_s, without arming a timer for a coroutine that returns before
            # it first suspends (an in-memory lookup): see ``_rest_within``. Its first step, here
            coro = tool.fn(**kwargs)
            begun = time.perf_counter()
            try:
                yielded = coro.send(None)
            except StopIteration as done:
                return done.value
            return await _rest_within(coro, yielded, tool.timeout_s - (time.perf_counter() - begun))
        if tool.inline:  # declared short and non-blocking: no thread hop, and nothing to interrupt
            return tool.fn(**kwargs)
        async with asyncio.timeout(tool.timeout_s):
            return await asyncio.to_thread(tool.fn, **kwargs)
    except TimeoutError:
        raise ToolTimeout(f"{tool.name} did not answer within {tool.timeout_s:g}s") from None
    except ModelFacingError:
        raise
    except Exception as exc:  # a crashed tool is a controlled result; details go to the trace only
        raise ToolFailed(f"{tool.name} failed while running; try again later or use another tool",
                         internal=f"{type(exc).__name__}: {exc}") from None


_T = TypeVar("_T")


async def _rest_within(coro: Coroutine[Any, Any, _T], yielded: Any, remaining_s: float) -> _T:
    """The rest of ``coro``, after a first step that yielded ``yielded``, bounded by what is left of its
    timeout: ``await coro`` exactly as under ``asyncio.timeout``, with no timer armed for a coroutine
    that returned before it first suspended (``invoke`` ran that step): a timeout can only
    interrupt a coroutine where it suspends, so such a call could never have been interrupted. The
    time the first step took counts, so a first step that overran the timeout is cancelled at its
    first suspension, as ``asyncio.timeout`` would."""
    async with asyncio.timeout_at(asyncio.get_running_loop().time() + remaining_s):
        return await _resume(coro, yielded)


@types.coroutine
def _resume(coro: Coroutine[Any, Any, _T], yielded: Any) -> Generator[Any, Any, _T]:
    """The rest of ``coro``, after a first step that yielded ``yielded``: what ``await`` does (PEP 380),
    picked up where ``invoke`` left it, in the same task."""
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancellation, thrown in by the task: the coroutine handles it
            try:
                yielded = coro.throw(exc)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                yielded = coro.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

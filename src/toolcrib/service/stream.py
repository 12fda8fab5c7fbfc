"""A run's events as a Server-Sent Events stream of AG-UI 1.0 events.

Each toolcrib event becomes the AG-UI events ``trace.agui.to_agui`` maps it to; the first of them
carries the typed toolcrib event as ``rawEvent`` (who decided it, the tool, the status), so a client
can show every step. The Answer is sent before ``RUN_FINISHED``: as a text message (its text) and as a
``CUSTOM`` event ``toolcrib.answer`` (exactly ``toolcrib ask --json``). A run that fails ends with
``RUN_ERROR``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import TYPE_CHECKING, Any

from toolcrib.trace.agui import to_agui
from toolcrib.trace.events import Event
from toolcrib.trace.tracer import TraceExporter, json_bytes

if TYPE_CHECKING:
    from toolcrib.agent.answer import Answer


class EventQueue(TraceExporter):
    """Hands a run's events to the request's event loop, in order. The run is a task on that loop, so
    an event recorded there goes straight in; one recorded on another thread (a tool's worker) is handed
    over: the first of several recorded before the loop takes them wakes the loop, the rest go with it
    (each wake-up of the loop from another thread is a system call and a GIL handoff)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Event | None]) -> None:
        self.loop = loop
        self.queue = queue
        self._pending: list[Event] = []
        self._lock = threading.Lock()

    def export(self, event: Event) -> None:
        with self._lock:
            self._pending.append(event)
            first = len(self._pending) == 1
        if _running_loop() is self.loop:
            self._deliver()
        elif first:
            self.loop.call_soon_threadsafe(self._deliver)

    def _deliver(self) -> None:
        with self._lock:
            events, self._pending = self._pending, []
        for event in events:
            self.queue.put_nowait(event)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def sse(data: dict[str, Any]) -> bytes:
    """One SSE message carrying one AG-UI event."""
    return b"data: " + json_bytes(data) + b"\n\n"


def event_frames(event: Event) -> list[dict[str, Any]]:
    frames = to_agui(event)
    frames[0]["rawEvent"] = event.to_dict()
    return frames


def answer_frames(answer: Answer) -> list[dict[str, Any]]:
    """The Answer as an assistant text message and as ``toolcrib.answer``."""
    message = f"{answer.trace_id}:answer"
    return [{"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"},
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": answer.text or " "},
            {"type": "TEXT_MESSAGE_END", "messageId": message},
            {"type": "CUSTOM", "name": "toolcrib.answer", "value": answer.to_dict()}]


def error_frame(code: str, message: str) -> dict[str, Any]:
    return {"type": "RUN_ERROR", "code": code, "message": message}


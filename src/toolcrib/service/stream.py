"""A run's events as a Server-Sent Events stream of AG-UI 1.0 events.

Each toolcrib event becomes the AG-UI events ``trace.agui.to_agui`` maps it to; the first of them
carries the typed toolcrib event as ``rawEvent`` (who decided it, the tool, the status), so a client
can show every step. The Answer is sent before ``RUN_FINISHED``: as a text message (its text) and as a
``CUSTOM`` event ``toolcrib.answer`` (exactly ``toolcrib ask --json``). A run that fails ends with
``RUN_ERROR``.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any

from toolcrib.trace.agui import to_agui
from toolcrib.trace.events import Event
from toolcrib.trace.tracer import TraceExporter

if TYPE_CHECKING:
    from toolcrib.agent.answer import Answer


class EventQueue(TraceExporter):
    """Hands each event, as it is recorded on the run's thread, to the request's event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[Event | None]) -> None:
        self.loop = loop
        self.queue = queue

    def export(self, event: Event) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, event)


def sse(data: dict[str, Any]) -> bytes:
    """One SSE message carrying one AG-UI event."""
    return f"data: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


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


"""Recording a run's events under one correlation id, redacted, to any number of exporters."""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import re
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import orjson

from toolcrib.errors import TraceFormatError
from toolcrib.trace.batching import Batching
from toolcrib.trace.events import DecidedBy, Event, EventKind, timestamp

log = logging.getLogger("toolcrib.trace")

# Keys whose values never reach a trace; values that look like bearer tokens or API keys neither.
_SECRET_KEYS = re.compile(r"(pass(word)?|secret|token|api[_-]?key|authorization|credential)", re.I)
_SECRET_VALUES = re.compile(r"(sk-[A-Za-z0-9_-]{8,}|Bearer\s+[A-Za-z0-9._-]{8,})")
REDACTED = "[redacted]"


# Whether a key looks secret, decided once per key: the keys recorded are a tool's argument names
# and the events' own detail keys, a small set asked about on every event.
_SECRET_KEY_SEEN: dict[str, bool] = {}


def _secret_key(key: Any) -> bool:
    if type(key) is not str:
        return bool(_SECRET_KEYS.search(str(key)))
    found = _SECRET_KEY_SEEN.get(key)
    if found is None:
        found = bool(_SECRET_KEYS.search(key))
        if len(_SECRET_KEY_SEEN) < 4096:  # bounded: arbitrary keys (a result's) must not grow it forever
            _SECRET_KEY_SEEN[key] = found
    return found


def redact(value: Any) -> Any:
    """Return ``value`` with secret-looking keys and values replaced by ``[redacted]``."""
    kind = type(value)
    if kind is str:
        # both secret shapes hold one of these literally (the pattern is case-sensitive): most strings
        # are ruled out by two substring tests, without the regular expression
        return _SECRET_VALUES.sub(REDACTED, value) if "sk-" in value or "Bearer" in value else value
    if kind in _SCALARS:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():  # plain strings and scalars inline: most values of an event are
            if _secret_key(k):
                out[k] = REDACTED
            elif (type(v) is str and "sk-" not in v and "Bearer" not in v) or type(v) in _SCALARS:
                out[k] = v
            else:
                out[k] = redact(v)
        return out
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    if isinstance(value, str):  # a str subclass
        return redact(str(value))
    return value


_SCALARS = frozenset({bool, int, float, type(None)})


Step = Event
"""The former name of ``Event``."""


class TraceExporter(ABC):
    """Where recorded events go (JSONL file, OpenTelemetry, a live stream)."""

    @abstractmethod
    def export(self, event: Event) -> None:
        """Receive one event as soon as it is recorded."""

    def export_later(self, event: Callable[[], Event]) -> bool:
        """Take a tool call's event as recorded, to be built (and redacted) by calling ``event()``, in
        order with the events ``export`` receives; or return False to receive it built, through ``export``
        (the default). For an exporter that handles events in batches anyway (``JsonlExporter``): the
        call it was recorded in does not wait for it to be built."""
        return False

    def flush(self) -> None:
        """Return once everything exported so far has reached its destination. Default: nothing."""

    def close(self) -> None:
        """Flush and release (the tracer calls it when its run ends). Default: nothing."""


_LINE = json.JSONEncoder(default=str, ensure_ascii=False)  # json.dumps with options makes one per call


def json_bytes(data: Any, *, line: bool = False) -> bytes:
    """``data`` as UTF-8 JSON (with ``line``, ending in a newline): orjson (0.3 us where json took 4),
    json for what orjson refuses (an integer beyond 64 bits). Run records and the service's bodies too."""
    try:
        return orjson.dumps(data, default=str,
                            option=orjson.OPT_NON_STR_KEYS | (orjson.OPT_APPEND_NEWLINE if line else 0))
    except TypeError:  # orjson.JSONEncodeError
        return (_LINE.encode(data) + ("\n" if line else "")).encode("utf-8")


def _jsonl(event: Event) -> bytes:
    """One trace line (encoded in a writer thread that holds the GIL the runs need: orjson)."""
    return json_bytes(event.to_dict(), line=True)


class JsonlExporter(TraceExporter):
    """Appends each event as one JSON line to ``DIR/<trace_id>.jsonl``.

    The caller only queues the event: a writer thread encodes them (orjson) and appends them to their
    files (the last ``open_files`` traces' files stay open, each trace's lines in one write) and flushes
    them to the operating system, so a run does not wait on file system calls for each of its events; it
    writes in batches (``Batching``: a run's events in one write, none of them waking the writer).
    ``flush`` (and ``close``, which the tracer calls when its run ends) writes what is queued itself, on
    the caller's thread, after any batch the writer has in hand (one lock orders the writes): it returns
    once every line exported before it is written, without waking the writer and waiting for it (a
    thread handoff cost a run ~0.5 ms on two busy cores, more than the write); a write that failed is
    raised there. Written means handed to the operating system, not fsync'd: a process killed after its
    run ended loses none of the run's lines; a process killed mid-run loses at most the lines of the last
    ~50 ms; a power loss can lose what the OS had not yet written back.

    ``close`` (a run's end) does not raise: a trace file is a copy of events the run keeps in its record
    (the run store) and the audit; a run must not fail, or go unrecorded, because its trace folder's disk
    is full. The failure is logged once per streak and counted in ``failed_writes``; lines of a batch
    that failed are not retried.
    """

    def __init__(self, directory: Path, *, open_files: int = 16) -> None:
        self.directory = directory
        self.directory.mkdir(parents=True, exist_ok=True)
        self.open_files = open_files
        self._files: OrderedDict[str, IO[bytes]] = OrderedDict()  # the writer thread's alone
        self._queue: list[Event | Callable[[], Event]] = []
        self._failure: OSError | None = None
        self.failed_writes = 0  # runs whose trace lines could not all be written (a full disk)
        self._failing = False
        # the condition's lock, taken directly where nobody waits: Condition.__enter__ is a Python call
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._writing = threading.Lock()  # held while a batch is taken and written: writes in queue order
        self._batching = Batching(self._changed, batch=512)
        self._writer: threading.Thread | None = None
        self._writer_pid = 0  # the process the writer runs in: a forked child has none

    def path_for(self, trace_id: str) -> Path:
        return self.directory / f"{trace_id}.jsonl"

    def export(self, event: Event) -> None:
        self._queued(event)

    def export_later(self, event: Callable[[], Event]) -> bool:
        self._queued(event)  # built by the writer, as it encodes: on the caller, a gate call took ~1.5 us more
        return True

    def _queued(self, event: Event | Callable[[], Event]) -> None:
        with self._lock:  # encoded by the writer: on the caller, a gate call measured 6 us slower
            self._queue.append(event)
            if self._writer_pid != os.getpid():  # none yet, or a forked child's copy (its writer stayed behind)
                if self._writer is None:
                    atexit.register(self.flush)
                self._writer = threading.Thread(target=self._write_queued, name="toolcrib-trace", daemon=True)
                self._writer.start()
                self._writer_pid = os.getpid()
            self._batching.queued(len(self._queue))

    def flush(self) -> None:
        self._drain()  # every line queued before this call: written by an earlier batch, or by this one
        with self._lock:
            failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def close(self) -> None:
        try:
            self.flush()
        except OSError as exc:
            self.failed_writes += 1
            if not self._failing:
                log.warning("trace lines were not written to %s (%s); runs go on, their events are kept in "
                            "their run records", self.directory, exc)
            self._failing = True
        else:
            self._failing = False

    def _write_queued(self) -> None:
        while True:
            with self._changed:
                self._batching.wait(lambda: len(self._queue), lambda: False)
            self._drain()

    def _drain(self) -> None:
        """Take what is queued and write it (on the calling thread), after any batch in hand."""
        with self._writing:
            with self._lock:
                batch, self._queue = self._queue, []
            if batch:  # the calls' events taken to be built later are built here
                self._write([item if isinstance(item, Event) else item() for item in batch])

    def _write(self, batch: list[Event]) -> None:
        by_trace: dict[str, list[bytes]] = {}
        for event in batch:  # an event is not changed once recorded
            by_trace.setdefault(event.trace_id, []).append(_jsonl(event))
        try:
            for trace_id, lines in by_trace.items():
                fh = self._file(trace_id)
                fh.write(b"".join(lines))
                fh.flush()
        except OSError as exc:
            for fh in self._files.values():  # reopened at the next write: no buffer keeps a failed batch
                with contextlib.suppress(OSError):
                    fh.close()
            self._files.clear()
            with self._lock:
                self._failure = exc

    def _file(self, trace_id: str) -> IO[bytes]:
        fh = self._files.get(trace_id)
        if fh is not None:
            self._files.move_to_end(trace_id)
            return fh
        fh = self._files[trace_id] = self.path_for(trace_id).open("ab")
        while len(self._files) > self.open_files:
            self._files.popitem(last=False)[1].close()
        return fh


# A call's event as recorded by ``Tracer.record_call``, before it is built: kind, title, decided_by,
# trace_id, run_id, step, time.time(), tool, call_id, effect, arguments, status, proposal_id, ms, detail, node
_Parts = tuple[EventKind, str, DecidedBy, str, str, int, float, str, str, str | None, dict[str, Any] | None,
               str | None, str | None, float, Any, str | None]


def _built(parts: _Parts) -> Event:
    """The event ``Tracer.record`` would have made of a call's parts: redacted, ``ms`` to the microsecond."""
    (kind, title, decided_by, trace_id, run_id, step, now, tool, call_id, effect, arguments, status, proposal_id, ms,
     detail, node) = parts
    return Event(kind, decided_by, title, trace_id, run_id, step, timestamp(now), int(ms * 1000 + 0.5) / 1000, tool,
                 call_id, effect, redact(arguments) if arguments is not None else None, status, None, proposal_id,
                 None, 0, 0, redact(detail), None, node)


class _Later:
    """A call's event as its parts, built once, by whoever needs it first (an exporter's writer thread, or
    the tracer when its events are read): two threads that build it at once make equal events."""

    __slots__ = ("event", "parts")

    def __init__(self, parts: _Parts) -> None:
        self.parts = parts
        self.event: Event | None = None

    def __call__(self) -> Event:
        event = self.event
        if event is None:
            event = self.event = _built(self.parts)
        return event


def _event(recorded: _Parts | _Later | Event) -> Event:
    if isinstance(recorded, Event):
        return recorded
    return recorded() if isinstance(recorded, _Later) else _built(recorded)


class Tracer:
    """Records the events of one run under one correlation id, redacting secrets.

    A tool call's event (``record_call``, the Gate's) is kept as its parts, and built and redacted when
    the trace is read (``events``, ``count``: read it again for what was recorded since) or by an exporter
    that takes it so (``TraceExporter.export_later``); any other exporter receives it built at once, in
    order (the service's live stream): a READ call spends ~0.3 us on its event instead of ~2 us. An event
    leaves the tracer only through ``events`` or an exporter, so it is redacted before anything sees it.
    """

    def __init__(self, exporters: list[TraceExporter] | None = None, trace_id: str | None = None) -> None:
        self.trace_id = trace_id or new_trace_id()
        self.run_id = ""
        self.node: str | None = None  # where the run is now (agent.pipeline.GRAPH): every event recorded carries it
        self.exporters = list(exporters or [])
        self._events: list[Event] = []
        self._parts: list[_Parts | _Later | Event] = []  # recorded after ``_events``, not all built yet
        self._lock = threading.Lock()

    @property
    def events(self) -> list[Event]:
        """Every event recorded so far, in order."""
        if self._parts:
            with self._lock:
                self._build()
        return self._events

    @events.setter
    def events(self, events: list[Event]) -> None:
        with self._lock:
            self._events, self._parts = events, []

    @property
    def steps(self) -> list[Event]:
        """The former name of ``events``."""
        return self.events

    def record(
        self,
        kind: EventKind,
        title: str,
        *,
        decided_by: DecidedBy = "code",
        tool: str | None = None,
        call_id: str | None = None,
        effect: str | None = None,
        arguments: dict[str, Any] | None = None,
        status: str | None = None,
        error_code: str | None = None,
        proposal_id: str | None = None,
        citations: list[str] | None = None,
        tokens_in: int = 0,
        tokens_out: int = 0,
        ms: float = 0.0,
        detail: Any = None,
        rule: str | None = None,
    ) -> Event:
        """Record one event; ``title`` is for people, every other field for readers."""
        with self._lock:
            parts = self._parts
            # positional, in the fields' order: a 19-keyword call costs more than everything it sets; ms
            # to the microsecond without round(), which cost as much as making the event
            event = Event(kind, decided_by, title, self.trace_id, self.run_id, len(self._events) + len(parts) + 1,
                          timestamp(), int(ms * 1000 + 0.5) / 1000, tool, call_id, effect,
                          redact(arguments) if arguments is not None else None, status, error_code, proposal_id,
                          citations, tokens_in, tokens_out, redact(detail), rule, self.node)
            (parts if parts else self._events).append(event)  # after the calls' events not built yet
            for exporter in self.exporters:
                exporter.export(event)
        return event

    def record_call(self, kind: EventKind, title: str, decided_by: DecidedBy, tool: str, call_id: str,
                    effect: str | None, arguments: dict[str, Any] | None, status: str | None, proposal_id: str | None,
                    ms: float, detail: Any, /) -> None:
        """Record a tool call's event, as ``record`` would (the Gate's, on every call): built and redacted
        when the trace is read, or at once while an exporter is attached. The tracer takes ``arguments``
        and ``detail`` over: the caller must not change them afterwards."""
        with self._lock:
            parts = (kind, title, decided_by, self.trace_id, self.run_id, len(self._events) + len(self._parts) + 1,
                     time.time(), tool, call_id, effect, arguments, status, proposal_id, ms, detail, self.node)
            if not self.exporters:
                self._parts.append(parts)
                return
            later = _Later(parts)
            self._parts.append(later)
            for exporter in self.exporters:
                take = getattr(exporter, "export_later", None)  # an exporter not derived from TraceExporter has none
                if take is None or not take(later):
                    exporter.export(later())

    def _build(self) -> None:
        """Build the events recorded as parts (under the lock), in order."""
        self._events += [_event(parts) for parts in self._parts]
        self._parts = []

    def count(self, kind: EventKind, *, decided_by: DecidedBy | None = None) -> int:
        return sum(1 for e in self.events if e.kind == kind and (decided_by is None or e.decided_by == decided_by))

    def close(self) -> None:
        for exporter in self.exporters:
            exporter.close()


def new_trace_id() -> str:
    return time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]


def read_events(path: Path) -> list[Event]:
    """Read a JSONL trace back as typed events; raises ``TraceFormatError`` for a record of another
    schema version (such as a trace written before typed events) or a line that is not JSON."""
    events = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError:
            raise TraceFormatError(f"{path.name}, line {number}: not a JSON record") from None
        events.append(Event.from_dict(data))
    return events

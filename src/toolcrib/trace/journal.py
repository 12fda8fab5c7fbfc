"""``Journal``: an append-only file of one live process, for records written on every run (trace lines,
run records, READ audit records) without making a file per run; and the service's trace journals.

Creating a file per run cost the service 100-200 us a file on an ordinary disk (issue 40); appending a
line to a file the process holds open costs one ``os.write``. Once written, a line is with the
operating system: a process killed with -9 loses none of what it had appended (not fsync'd, as the
per-run files were not).

A process appends to a journal it holds with ``flock`` for as long as it lives (the kernel releases the
lock when it dies, kill -9 included); it takes over a journal of its folder that no live process holds
before making a new one (unless ``adopt=False``: the audit chains a dead process's journal instead), so a
folder has as many open journals as processes ever wrote into it at once. A line is written whole or not
at all: after a failed write (a full disk) the file is cut back, and a process taking over a journal cuts
off a last line its writer died writing. Readers take whole lines only (``whole_lines``): a last line
without its newline is still being written.

Rotation (``Retention``). A journal past ``file_bytes`` is full: its process closes it and starts a new
one at its next append, and nobody takes a full one over, so it never changes again. Full journals are
removed, oldest first, while the folder holds more than ``keep_bytes`` or once older than ``keep_s``, so
a folder stops growing; readers find a record by id in every journal still there.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

from toolcrib.errors import TraceFormatError
from toolcrib.trace.events import Event
from toolcrib.trace.tracer import JsonlExporter, _jsonl, read_events


def whole_lines(fd: int, size: int | None = None) -> int:
    """How many bytes of the file (of its first ``size``) hold whole lines: up to its last newline."""
    end = os.fstat(fd).st_size if size is None else size
    while end > 0:
        start = max(0, end - (1 << 16))
        cut = os.pread(fd, end - start, start).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return 0


def unheld(path: str | os.PathLike[str], flags: int = os.O_RDONLY) -> int | None:
    """A descriptor of the journal at ``path``, locked, when no live process holds it; None when one does
    or it is gone (removed meanwhile). Closing the descriptor releases the lock."""
    try:
        fd = os.open(path, flags | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # its process is alive
        os.close(fd)
        return None
    return fd


@dataclass(frozen=True)
class Retention:
    """When a journal is full, and how much of a folder's full journals is kept (``None``: no bound)."""

    file_bytes: int = 64 << 20
    keep_bytes: int | None = 1 << 30
    keep_s: float | None = None

    def sweep(self, folder: Path, suffix: str) -> int:
        """Remove the full journals past the bounds, oldest first; how many bytes were removed."""
        files: list[tuple[float, int, Path]] = []
        for entry in os.scandir(folder):
            if entry.name.endswith(suffix):
                with contextlib.suppress(FileNotFoundError):
                    stat = entry.stat()
                    files.append((stat.st_mtime, stat.st_size, Path(entry.path)))
        total = sum(size for _, size, _ in files)
        oldest = time.time() - self.keep_s if self.keep_s is not None else None
        removed = 0
        for mtime, size, path in sorted(files):
            if size < self.file_bytes:  # not full: a live process's, or one to be taken over
                continue
            over = self.keep_bytes is not None and total - removed > self.keep_bytes
            if not over and (oldest is None or mtime >= oldest):
                continue
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += size
        return removed


class Journal:
    """This process's journal in ``folder`` (files ending in ``suffix``), opened at its first append."""

    def __init__(self, folder: Path, suffix: str, *, retention: Retention | None = None, adopt: bool = True) -> None:
        self.folder = folder
        self.suffix = suffix
        self.retention = retention
        self.adopt = adopt
        self.name = ""  # the file's name without its suffix, once opened
        self.size = 0  # bytes in it, all whole lines
        self._fd = -1
        self._pid = 0
        self._lock = threading.Lock()

    def path(self, name: str) -> Path:
        return self.folder / (name + self.suffix)

    def append(self, data: bytes, *, sync: bool = False) -> tuple[str, int]:
        """Write ``data`` (whole lines) in one call (and with ``sync``, fsync it); returns the journal it went
        to and the offset it starts at. Raises OSError, with nothing of ``data`` left in the file, if it
        cannot. A journal this makes full is closed (see ``Retention``)."""
        with self._lock:
            if self._pid != os.getpid():  # none yet, a full one closed, or a forked child's copy of its parent's
                self._open()
            start = self.size
            try:
                view = memoryview(data)
                while view:  # a regular file takes it in one write; a short one is finished here
                    view = view[os.write(self._fd, view):]
                if sync:
                    os.fdatasync(self._fd)
            except OSError:
                with contextlib.suppress(OSError):  # no half line for the next one to follow
                    os.ftruncate(self._fd, start)
                raise
            self.size = start + len(data)
            name = self.name
            if self.retention is not None and self.size >= self.retention.file_bytes:
                self._rotate()
            return name, start

    def opened(self) -> tuple[str, int]:
        """Open (or take over) this process's journal now: its name and the bytes it held before."""
        with self._lock:
            if self._pid != os.getpid():
                self._open()
            return self.name, self.size

    def _rotate(self) -> None:
        """Close the full journal (its lock goes with it; nobody takes a full one over) and remove what
        the retention no longer keeps; the next append starts a new journal."""
        assert self.retention is not None
        os.close(self._fd)
        self._fd, self._pid, self.name, self.size = -1, 0, "", 0
        with contextlib.suppress(OSError):  # a removal that fails is tried again at the next rotation
            self.retention.sweep(self.folder, self.suffix)

    def _open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if self._fd >= 0 and self._pid != os.getpid():
            os.close(self._fd)  # a forked child's copy: closing it keeps the parent's lock
        self._fd = -1
        full = self.retention.file_bytes if self.retention is not None else None
        for entry in sorted(os.scandir(self.folder), key=lambda e: e.name) if self.adopt else ():
            if not entry.name.endswith(self.suffix):
                continue
            fd = unheld(entry.path, os.O_RDWR | os.O_APPEND)
            if fd is None:
                continue
            size = whole_lines(fd)
            if full is not None and size >= full:  # full: never written again
                os.close(fd)
                continue
            os.ftruncate(fd, size)  # a line its writer died writing was never acknowledged
            self._fd, self.name, self.size = fd, entry.name[:-len(self.suffix)], size
            break
        else:
            name = f"{os.getpid()}-{secrets.token_hex(6)}"
            temporary = self.folder / f"{name}.new"  # locked before it gets the name others look for
            fd = os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_APPEND | os.O_CLOEXEC, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.rename(temporary, self.path(name))
            self._fd, self.name, self.size = fd, name, 0
        self._pid = os.getpid()

    def remove(self) -> None:
        """Delete this process's journal (everything in it is used) and start a new one at the next append."""
        with self._lock:
            if self._fd >= 0 and self._pid == os.getpid():
                with contextlib.suppress(OSError):
                    os.unlink(self.path(self.name))
            self._close()

    def forget(self) -> None:
        """In a forked child: the file is the parent's (closing this copy keeps the parent's lock)."""
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
            self._fd, self._pid, self.name, self.size = -1, 0, "", 0

    def close(self) -> None:
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._fd >= 0 and self._pid == os.getpid():
            os.close(self._fd)
        self._fd, self._pid, self.name, self.size = -1, 0, "", 0


JOURNALS = "journals"  # the folder, under a trace folder, of the service's trace journals


class JournalExporter(JsonlExporter):
    """``JsonlExporter`` into this process's journal (``DIR/journals/*.jsonl``, every trace's lines in one
    file) instead of a file per trace: what ``toolcrib serve`` records, read back by ``trace_lines``."""

    def __init__(self, directory: Path, retention: Retention | None = None) -> None:
        super().__init__(directory)
        self.journal = Journal(directory / JOURNALS, ".jsonl", retention=retention)

    def _write(self, batch: list[Event]) -> None:
        try:
            self.journal.append(b"".join(_jsonl(event) for event in batch))
        except OSError as exc:
            with self._lock:
                self._failure = exc


def trace_files(directory: Path) -> list[Path]:
    """Every file of trace lines in a trace folder: one per trace, and the service's journals."""
    if not directory.is_dir():
        return []
    journals = directory / JOURNALS
    return sorted(directory.glob("*.jsonl")) + (sorted(journals.glob("*.jsonl")) if journals.is_dir() else [])


def trace_lines(directory: Path, trace_id: str) -> list[bytes]:
    """The lines of one trace, in order: its own file, or its lines in the service's journals."""
    own = directory / f"{Path(trace_id).name}.jsonl"
    if own.exists():
        return own.read_bytes().splitlines()
    needle = b'"trace_id":' + orjson.dumps(trace_id)
    found: list[bytes] = []
    for path in trace_files(directory):
        if path.parent == directory:
            continue
        data = _whole(path)
        if needle not in data:
            continue
        for line in data.splitlines():
            if needle in line and orjson.loads(line).get("trace_id") == trace_id:
                found.append(line)
    return found


def last_trace(directory: Path) -> str | None:
    """The id of the trace written last (the last line of the newest file), or None."""
    files = trace_files(directory)
    for path in sorted(files, key=lambda p: p.stat().st_mtime, reverse=True):
        lines = _whole(path).splitlines()
        if lines:
            return str(orjson.loads(lines[-1]).get("trace_id") or path.stem) if path.parent != directory else path.stem
    return None


def _whole(path: Path) -> bytes:
    """A file's whole lines (a journal's last line may be being written)."""
    data = path.read_bytes()
    return data[:data.rfind(b"\n") + 1]


def read_traces(path: Path) -> list[list[Event]]:
    """The traces in one file of ``trace_files``: a trace's own file (``read_events``: its errors raised),
    or each trace of a journal, in order (whole lines; a line of another schema is left out)."""
    if path.parent.name != JOURNALS:
        return [read_events(path)]
    traces: dict[str, list[Event]] = {}
    for line in _whole(path).splitlines():
        try:
            event = Event.from_dict(orjson.loads(line))
        except (orjson.JSONDecodeError, TraceFormatError):
            continue
        traces.setdefault(event.trace_id, []).append(event)
    return list(traces.values())

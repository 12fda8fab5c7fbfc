"""``RunJournal``: the file run store's journals, one per live process (``toolcrib.trace.journal``).

Each line is one segment of a run (one ask or resume, or a whole record that replaces the ones before
it), as ``[run_id, user, tenant, at, whole]`` TAB ``record JSON`` (JSON escapes a tab inside a string,
so the first tab ends the header). A reader indexes every journal's headers as the journals grow and
reads a run's records by their offsets. Journals rotate (``Retention``): a journal removed by it takes its
runs' lines with it, and the index forgets them at the next ``refresh``.
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import orjson

from toolcrib.trace.journal import Journal, Retention

SUFFIX = ".runs"


@dataclass(frozen=True)
class Segment:
    """Where one journal line's record is, and what its header says."""

    journal: str
    offset: int
    length: int
    user_id: str
    tenant: str
    at: float
    whole: bool


def encode(run_id: str, user_id: str, tenant: str, at: float, whole: bool, body: bytes) -> bytes:
    return orjson.dumps([run_id, user_id, tenant, at, whole]) + b"\t" + body + b"\n"


class RunJournal:
    """The journals of one folder: this process's own (appended to), everyone's (indexed as they grow)."""

    def __init__(self, folder: Path, retention: Retention | None = None) -> None:
        self.folder = folder
        self.own = Journal(folder, SUFFIX, retention=retention)
        self._lock = threading.Lock()
        self._readers: dict[str, int] = {}  # journal -> an open descriptor to read it
        self._scanned: dict[str, int] = {}  # journal -> bytes indexed
        self.index: dict[str, list[Segment]] = {}  # run id -> its segments, in the order they were indexed

    def append(self, run_id: str, user_id: str, tenant: str, at: float, whole: bool, body: bytes) -> None:
        """One line for this run, written in one call; raises OSError (nothing of it left) if it cannot."""
        data = encode(run_id, user_id, tenant, at, whole, body)
        with self._lock:  # the journal opened and the one appended to are the same (a full one is closed after)
            name, before = self.own.opened()
            if self._scanned.get(name, 0) < before:  # what it held before this process took it over
                self._scan(name, self._scanned.get(name, 0))
            name, start = self.own.append(data)
            self._scanned[name] = start + len(data)
            self.index.setdefault(run_id, []).append(
                Segment(name, start + len(data) - len(body) - 1, len(body), user_id, tenant, at, whole))

    def latest(self, user_id: str) -> dict[str, float]:
        """This user's runs, each with the time of its latest line."""
        with self._lock:
            return {run_id: max(s.at for s in segments) for run_id, segments in self.index.items()
                    if any(s.user_id == user_id for s in segments)}

    def read(self, segment: Segment) -> bytes | None:
        """The record of one segment; None once its journal was removed (rotation)."""
        fd = self._readers.get(segment.journal)
        if fd is None:
            with self._lock:
                fd = self._reader(segment.journal)
        if fd is None:
            return None
        return os.pread(fd, segment.length, segment.offset)

    def _reader(self, name: str) -> int | None:
        """An open descriptor to read journal ``name`` (under the lock), or None when it is gone."""
        fd = self._readers.get(name)
        if fd is None:
            try:
                fd = self._readers[name] = os.open(self.folder / (name + SUFFIX), os.O_RDONLY | os.O_CLOEXEC)
            except FileNotFoundError:
                return None
        return fd

    def refresh(self) -> None:
        """Index what other processes appended since the last look (and journals new since)."""
        if not self.folder.is_dir():
            return
        with self._lock:
            own = self.own.name
            present: set[str] = set()
            for entry in os.scandir(self.folder):
                if not entry.name.endswith(SUFFIX):
                    continue
                name = entry.name[:-len(SUFFIX)]
                present.add(name)
                if name == own:
                    continue
                done = self._scanned.get(name, 0)
                with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                    if entry.stat().st_size > done:
                        self._scan(name, done)
            gone = self._scanned.keys() - present
            if gone:
                self._forget(gone)

    def _forget(self, gone: set[str]) -> None:
        """Drop what the index holds of journals rotation removed (under the lock)."""
        for name in gone:
            self._scanned.pop(name, None)
            fd = self._readers.pop(name, None)
            if fd is not None:
                os.close(fd)
        for run_id in [r for r, segments in self.index.items() if any(s.journal in gone for s in segments)]:
            kept = [s for s in self.index[run_id] if s.journal not in gone]
            if kept:
                self.index[run_id] = kept
            else:
                del self.index[run_id]

    def _scan(self, name: str, start: int) -> None:
        fd = self._reader(name)
        if fd is None:
            return
        data = os.pread(fd, os.fstat(fd).st_size - start, start)
        end = data.rfind(b"\n") + 1  # whole lines only: a last one without its newline is being written
        position = 0
        while position < end:
            stop = data.index(b"\n", position)
            tab = data.find(b"\t", position, stop)
            try:
                run_id, user_id, tenant, at, whole = orjson.loads(data[position:tab])
                self.index.setdefault(str(run_id), []).append(
                    Segment(name, start + tab + 1, stop - tab - 1, str(user_id), str(tenant), float(at), bool(whole)))
            except (orjson.JSONDecodeError, TypeError, ValueError):
                pass  # a line a disk fault spoiled (or a cut-off one): the others still count
            position = stop + 1
        self._scanned[name] = start + end

    def close(self) -> None:
        self.own.close()
        with self._lock:
            for fd in self._readers.values():
                os.close(fd)
            self._readers.clear()

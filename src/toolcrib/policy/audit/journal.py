"""Where a process's acknowledged READ audit records wait to be chained: a ``Journal`` of the process
(``toolcrib.trace.journal``, never taken over: a dead process's is chained instead), its lines, and the
journals of dead processes (``orphans``).

Committing a run's READ records to SQLite at the end of every run cost the run's next call more than
the commit itself (its locks and its memory footprint: +13-18 us on the next call, where a plain
``os.write`` cost nothing; issue 15). So the records a run defers are appended to a journal file of
this process's in one ``os.write`` when the run flushes: durable against a killed process once written
(the OS holds the page), as the un-fsync'd commit it replaces was. The audit store chains what is
journaled into its table later, in one transaction, many runs at a time.

Each journal is a file of its own process, ``flock``-ed for as long as that process lives (the kernel
releases the lock when it dies, kill -9 included). A store that opens the audit file, or chains its own
records, chains the journals no live process holds and removes them. The database keeps, per
journal, how many of its bytes are chained (``toolcrib_audit_journals``, written in the transaction
that chains them), so a crash between a commit and a journal's removal chains nothing twice. A last
line without its newline was being written when the process died: its flush never returned, so it
was never acknowledged, and it is dropped (as is a line a disk fault spoiled).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from toolcrib.trace.journal import unheld

# timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail as canonical JSON
JournalEntry = tuple[float, str, str, str, str, str, str, str]

SCHEMA = """CREATE TABLE IF NOT EXISTS toolcrib_audit_journals (
    name TEXT PRIMARY KEY, chained INTEGER NOT NULL)"""
SUFFIX = ".journal"


def journal_folder(audit_path: str) -> Path:
    """The folder beside an audit file that holds its processes' journals."""
    return Path(audit_path + "-reads")


def journal_path(folder: Path, name: str) -> Path:
    return folder / (name + SUFFIX)


def encode(entries: Sequence[JournalEntry]) -> bytes:
    """Journal lines for ``entries``: one JSON array per line (a float round-trips exactly)."""
    return b"".join(orjson.dumps(entry) + b"\n" for entry in entries)


def decode(data: bytes) -> tuple[list[JournalEntry], int]:
    """The whole lines of ``data`` as entries, and how many bytes they take (a last line without its
    newline is left out: it was never acknowledged)."""
    end = data.rfind(b"\n") + 1
    entries: list[JournalEntry] = []
    for line in data[:end].splitlines():
        try:
            values: list[Any] = orjson.loads(line)
            if len(values) != 8:
                raise ValueError(line)
            entries.append((float(values[0]), *(str(v) for v in values[1:])))  # type: ignore[arg-type]
        except (orjson.JSONDecodeError, TypeError, ValueError):
            continue  # a line a disk fault spoiled: the store must still open, and chain the others
    return entries, end


@dataclass
class Orphan:
    """A journal whose process is gone, locked by the store that will chain it."""

    path: Path
    name: str
    data: bytes
    fd: int

    def remove(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


@contextlib.contextmanager
def orphans(folder: Path, own: str) -> Iterator[list[Orphan]]:
    """The journals in ``folder`` no live process holds (``own`` is this process's), locked while the
    caller chains them; each is closed on the way out (the caller removes those it chained)."""
    found: list[Orphan] = []
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith(SUFFIX)) if folder.is_dir() else []
        for file_name in names:
            name = file_name[:-len(SUFFIX)]
            if name == own:
                continue
            fd = unheld(folder / file_name)
            if fd is None:  # its process is alive, or another store chained and removed it meanwhile
                continue
            with os.fdopen(os.dup(fd), "rb") as handle:
                found.append(Orphan(folder / file_name, name, handle.read(), fd))
        yield found
    finally:
        for orphan in found:
            orphan.close()

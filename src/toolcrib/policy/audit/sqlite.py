"""The audit record in a SQLite file, READ calls' records journaled and chained many runs at a time.

Durability. ``append`` returns once its record is committed (SQLite: WAL, ``synchronous=FULL``, so
fsync'd): every proposal, decision, approval, execution of a WRITE/ACTUATE call and refusal is on
disk before the caller goes on. ``append_deferred`` is for the one record written on every READ call
(the gate's ``executed`` record of a READ): it queues the record and returns at once (no seq yet).
``flush()`` (the Runner's, at a run's end) or the background writer (after 50 ms) appends what is
queued to this process's read journal in one ``os.write`` (``policy/audit/journal.py``): a SQLite
commit there cost the run's next call more than the commit itself. Journaled records are chained
into the table in one transaction, many runs at a time: before the next synchronous ``append`` (in
its transaction, before its record, in the order queued), before ``records()``/``head()``/``verify()``,
once ``chain_after`` are journaled, after a second without READ calls, and at ``close()``. A journal
write is not fsync'd (``sync_reads=True`` fsyncs it): it survives a killed process (the kill -9 test),
and a power loss from the next synchronous ``append`` on (it chains them and fsyncs). A deferred
record is **acknowledged** once it is journaled: after ``flush()`` returns, after any later ``append``,
after ``records()``/``head()``/``close()``. A process killed before that may lose deferred records it
had not acknowledged, never one it had, and never a synchronous one: the next store to open the file
chains a dead process's journal; the chain stays whole either way. Another process sees a live one's
journaled records once they are chained. Stores without a journal (PostgreSQL, or SQLite with
``group_reads=False``) write deferred records synchronously.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from toolcrib.policy._connections import SQLiteConnection
from toolcrib.policy.audit import journal as audit_journal
from toolcrib.policy.audit.base import AuditRecord, Wanted
from toolcrib.policy.audit.journal import JournalEntry
from toolcrib.policy.audit.sql import CLOSE_AT_EXIT, PROPOSAL_INDEX, Entry, SQLAuditStore, encoded
from toolcrib.trace.batching import Batching
from toolcrib.trace.journal import Journal

_SQLITE_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS toolcrib_audit (
        seq INTEGER PRIMARY KEY, timestamp REAL NOT NULL, event TEXT NOT NULL, actor TEXT NOT NULL,
        decided_by TEXT NOT NULL, tool TEXT NOT NULL, proposal_id TEXT NOT NULL,
        trace_id TEXT NOT NULL, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
    PROPOSAL_INDEX,
    """CREATE TRIGGER IF NOT EXISTS toolcrib_audit_no_update BEFORE UPDATE ON toolcrib_audit
       BEGIN SELECT RAISE(ABORT, 'toolcrib audit records are append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS toolcrib_audit_no_delete BEFORE DELETE ON toolcrib_audit
       BEGIN SELECT RAISE(ABORT, 'toolcrib audit records are append-only'); END""",
]


class SQLiteAuditStore(SQLAuditStore):
    """The audit record in a SQLite file (WAL, synchronous=FULL): durable once ``append`` returns;
    ``append_deferred`` records are journaled at a run's end and chained many runs at a time
    (``group_reads=False``: written synchronously instead), without an fsync of their own unless
    ``sync_reads``. See the module docstring for when a deferred record is acknowledged."""

    _db: SQLiteConnection
    chain_idle_s = 1.0  # the writer chains what is journaled once no READ call came for this long

    def __init__(self, path: str | os.PathLike[str], *, clock: Callable[[], float] = time.time,
                 group_reads: bool = True, sync_reads: bool = False, chain_after: int = 1024) -> None:
        super().__init__(clock)
        self.path = os.fspath(path)
        self._db = SQLiteConnection(self.path)
        self._db.migrate([*_SQLITE_SCHEMA, audit_journal.SCHEMA])
        self.group_reads = group_reads
        self.sync_reads = sync_reads
        self.chain_after = chain_after
        self._journal = Journal(audit_journal.journal_folder(self.path), audit_journal.SUFFIX, adopt=False)
        self._journaled: list[JournalEntry] = []  # acknowledged, not chained yet (``_commit`` held)
        self._journaled_at = 0.0  # when the last were journaled (monotonic)
        self._recover()
        self._queue: list[Entry] = []
        self._queued = 0  # deferred records ever queued in this process, and of those, committed
        self._committed = 0
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # guards the queue and the counts
        self._commit = threading.Lock()  # held from taking queued records until they are committed
        self._writer: threading.Thread | None = None
        self._batching = Batching(self._changed)
        self._pid = os.getpid()
        self._closed = False

    def append(self, event: str, *, actor: str, decided_by: str, tool: str = "", proposal_id: str = "",
               trace_id: str = "", detail: Mapping[str, Any] | None = None) -> AuditRecord:
        entry = self._entry(event, actor, decided_by, tool, proposal_id, trace_id, detail)
        with self._commit:  # the records deferred before this one go first, in its transaction
            taken = self._take()
            try:
                written = self._chain([*taken, entry], synced=True)
            except BaseException:
                self._give_back(taken)
                raise
            self._done(len(taken))
        return written

    def append_deferred(self, event: str, *, actor: str, decided_by: str, tool: str = "",
                        proposal_id: str = "", trace_id: str = "",
                        detail: Mapping[str, Any] | None = None) -> None:
        if not self.group_reads or self._closed:
            self.append(event, actor=actor, decided_by=decided_by, tool=tool, proposal_id=proposal_id,
                        trace_id=trace_id, detail=detail)
            return
        entry = self._entry(event, actor, decided_by, tool, proposal_id, trace_id, detail, deferred=True)
        if self._pid != os.getpid():  # before taking a lock a forked child inherited (maybe held)
            self._forked()
        with self._lock:  # the condition's lock, taken directly: Condition.__enter__ is a Python call
            self._queue.append(entry)
            self._queued += 1
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_queued, name="toolcrib-audit", daemon=True)
                self._writer.start()
                CLOSE_AT_EXIT.add(self)
            self._batching.queued(len(self._queue))

    def flush(self) -> None:
        """Commit what is queued on the caller's thread: handing it to the writer and waiting for it cost
        two thread switches, and the writer's tail then competed for the GIL with the caller's next call."""
        if self._pid != os.getpid():
            self._forked()
        with self._lock:
            if self._committed >= self._queued:
                return
        with self._commit:  # a batch the writer took is committed and counted once this is held
            self._commit_queued()

    def records(self, *, after_seq: int = 0) -> Iterator[AuditRecord]:
        self._settle()
        return super().records(after_seq=after_seq)

    def append_missing(self, wanted: Sequence[Wanted]) -> int:
        if not wanted:
            return 0
        self._settle()
        with self._commit:  # nothing is journaled meanwhile: the chain order stays the queue's
            return super().append_missing(wanted)

    def head(self) -> tuple[int, str]:
        self._settle()
        return super().head()

    def _settle(self) -> None:
        """Everything deferred before this call chained: what is queued, what is journaled, and the
        journals of processes that died."""
        self.flush()
        if self._pid == os.getpid():
            with self._commit:
                self._chain_journaled()

    def close(self) -> None:
        with self._changed:
            if self._closed:
                return
            self._closed = True
            self._changed.notify_all()
        writer = self._writer
        if writer is not None and self._pid == os.getpid():
            writer.join()
        if self._pid == os.getpid():
            with self._commit:
                if self._queue:  # the writer stopped on a failure: one last try
                    self._commit_queued()
                self._chain_journaled()
                self._retire_journal()
        CLOSE_AT_EXIT.discard(self)
        super().close()

    # -- the writer -------------------------------------------------------------------------------

    def _forked(self) -> None:
        """In a forked child, the parent's queue is the parent's to write, and its writer is not here."""
        if self._pid != os.getpid():
            self._pid = os.getpid()
            self._queue, self._queued, self._committed = [], 0, 0
            self._journal.forget()
            self._journaled = []
            self._writer = None
            self._lock = threading.Lock()
            self._changed = threading.Condition(self._lock)
            self._batching = Batching(self._changed)
            self._commit = threading.Lock()

    def _take(self) -> list[Entry]:
        with self._changed:
            taken, self._queue = self._queue, []
        return taken

    def _give_back(self, taken: list[Entry]) -> None:
        with self._changed:
            self._queue[:0] = taken

    def _tx(self, write: bool = True, *, synced: bool = True) -> Any:
        return self._db.tx(write, synced=synced)

    def _commit_queued(self) -> None:
        """Journal every queued record in one write (``_commit`` held), chaining them instead where the
        journal cannot be written; on a failure of both they stay queued and it is raised."""
        taken = self._take()
        if not taken:
            return
        entries: list[JournalEntry] = [(*entry[:7], encoded(entry[7])) for entry in taken]
        try:
            self._journal.append(audit_journal.encode(entries), sync=self.sync_reads)
        except OSError:  # a full or read-only disk: the table then, and a journal that may end mid-line goes
            try:
                self._chain(entries, synced=self.sync_reads)
            except BaseException:
                self._give_back(taken)
                raise
            self._retire_journal()
        else:
            self._journaled += entries
            self._journaled_at = time.monotonic()
        self._done(len(taken))
        if len(self._journaled) >= self.chain_after:
            with contextlib.suppress(sqlite3.Error):  # acknowledged already: chained at the next chance
                self._chain_journaled()

    def _chain_journaled(self) -> None:
        """Chain what this process journaled, then any dead process's journals (``_commit`` held)."""
        if self._journaled:
            self._chain([], synced=self.sync_reads)
        self._recover()

    def _chain(self, entries: Sequence[Entry], *, synced: bool) -> AuditRecord:
        """Chain what is journaled, then ``entries``, in one transaction that also records this journal
        as chained to its end; then forget the journaled records (``_commit`` held), and start a new
        journal past 1 MB. Returns the last record written."""
        with self._tx(synced=synced) as cur:
            written = self._write(cur, [*self._journaled, *entries])
            if self._journal.name:
                cur.execute("INSERT OR REPLACE INTO toolcrib_audit_journals (name, chained) VALUES (?, ?)",
                            (self._journal.name, self._journal.size))
        self._journaled = []
        if self._journal.size >= 1 << 20:
            self._retire_journal()
        return written

    def _retire_journal(self) -> None:
        """Remove this process's journal (all of it chained) and what the table says of it."""
        name = self._journal.name
        self._journal.remove()
        if name:  # a crash before this leaves a row for a file that is gone: ``_recover`` drops it
            with contextlib.suppress(sqlite3.Error), self._tx(synced=False) as cur:
                cur.execute("DELETE FROM toolcrib_audit_journals WHERE name = ?", (name,))

    def _recover(self) -> None:
        """Chain the journals of processes that died, each from where it was chained to, and remove
        them; forget what was recorded of journals that are gone."""
        folder = self._journal.folder
        with audit_journal.orphans(folder, self._journal.name) as found:
            if not found:
                return
            with self._tx() as cur:
                cur.execute("SELECT name, chained FROM toolcrib_audit_journals")
                chained = dict(cur.fetchall())
                for name in chained.keys() - {o.name for o in found}:
                    if name != self._journal.name and not audit_journal.journal_path(folder, name).exists():
                        cur.execute("DELETE FROM toolcrib_audit_journals WHERE name = ?", (name,))
                for orphan in found:
                    start = chained.get(orphan.name, 0)
                    entries, used = audit_journal.decode(orphan.data[start:])
                    if entries:
                        self._write(cur, entries)
                    cur.execute("INSERT OR REPLACE INTO toolcrib_audit_journals (name, chained) VALUES (?, ?)",
                                (orphan.name, start + used))
            for orphan in found:
                orphan.remove()

    def _done(self, count: int) -> None:
        with self._changed:
            self._committed += count

    def _write_queued(self) -> None:
        """Journal whatever is queued, in batches (``Batching``: a batch waits up to 50 ms for its run's
        other records, unless flushed), and chain what is journaled once READ calls stop for
        ``chain_idle_s``."""
        while True:
            with self._changed:
                due = self._journaled_at + self.chain_idle_s if self._journaled else None
                self._batching.wait(lambda: len(self._queue), lambda: self._closed, until=due)
                queued, closed = bool(self._queue), self._closed
            if closed and not queued:
                return
            try:
                with self._commit:
                    if queued:
                        self._commit_queued()
                    elif self._journaled and time.monotonic() >= self._journaled_at + self.chain_idle_s:
                        self._chain_journaled()
            except Exception:  # the records stay queued: the next flush() writes them or says why not
                with self._changed:
                    if self._closed:
                        return
                time.sleep(0.05)


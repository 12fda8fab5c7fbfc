"""The append-only, hash-chained record of every proposal, decision, approval and execution.

Each record carries the hash of the one before it and its own hash over its canonical JSON, so
editing, inserting or deleting a record in the middle breaks ``verify()``. Deleting the newest
records leaves a valid shorter chain: publish ``head()`` elsewhere and pass it to ``verify`` to
catch that too. The database refuses UPDATE and DELETE (triggers), and appends are serialised
(SQLite ``BEGIN IMMEDIATE``; PostgreSQL an exclusive table lock) so the chain stays in order
across processes, and a process killed mid-append leaves no half record.

Durability. ``append`` returns once its record is committed (SQLite: WAL, ``synchronous=FULL``, so
fsync'd): every proposal, decision, approval, execution of a WRITE/ACTUATE call and refusal is on
disk before the caller goes on. ``append_deferred`` is for the one record written on every READ call
(the gate's ``executed`` record of a READ): it queues the record and returns at once (no seq yet).
``flush()`` (the Runner's, at a run's end) or the background writer (after 50 ms) appends what is
queued to this process's read journal in one ``os.write`` (``policy/audit_journal.py``): a SQLite
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

import atexit
import contextlib
import json
import os
import sqlite3
import threading
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from types import TracebackType
from typing import Any

from toolcrib.errors import InvalidArguments
from toolcrib.policy import audit_journal
from toolcrib.policy._connections import PostgresConnection, SQLiteConnection
from toolcrib.policy.audit_journal import JournalEntry, ReadJournal
from toolcrib.policy.canonical import canonical_json, sha256_hex
from toolcrib.trace.batching import Batching

EVENTS = frozenset({
    "proposed", "allowed", "denied", "approved", "rejected", "expired", "executed", "failed",
    "outcome_unknown", "refused", "edited",
})
GENESIS_HASH = "0" * 64
_PAGE = 1000


@dataclass(frozen=True)
class AuditRecord:
    """One entry of the chain; ``hash`` covers every other field."""

    seq: int
    timestamp: float
    event: str
    actor: str
    decided_by: str
    tool: str
    proposal_id: str
    trace_id: str
    detail: dict[str, Any] = field(default_factory=dict)
    prev_hash: str = GENESIS_HASH
    hash: str = ""

    def body(self) -> dict[str, Any]:
        """Everything the hash covers."""
        data = asdict(self)
        del data["hash"]
        return data

    def computed_hash(self) -> str:
        return _chain_hash([getattr(self, name) for name in _HASHED])


@dataclass(frozen=True)
class AuditVerification:
    """The result of walking the chain: ``first_bad_seq`` and ``problem`` say where it broke."""

    ok: bool
    count: int
    first_bad_seq: int | None = None
    problem: str = ""


def redact_arguments(arguments: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """A copy with each declared field (``"card"`` or a dotted path ``"card.number"``) replaced by
    ``"[redacted:sha256:<12 hex>]"``: auditors can see two calls used the same value, not the value.
    A short guessable value (a PIN) can be recovered from its hash by trying them all: don't
    record such fields' hashes anywhere they are a secret worth that effort."""
    out: dict[str, Any] = json.loads(canonical_json(dict(arguments)))
    for path in fields:
        *parents, leaf = path.split(".")
        node: Any = out
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and leaf in node:
            digest = sha256_hex(canonical_json(node[leaf]))[:12]
            node[leaf] = f"[redacted:sha256:{digest}]"
    return out


def redact_changes(changes: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """``redact_arguments`` for an edit's ``{argument: {"from": old, "to": new}}``: both sides of each field."""
    paths = [f"{first}.{side}{'.' if rest else ''}{rest}" for first, _, rest in (f.partition(".") for f in fields)
             for side in ("from", "to")]
    return redact_arguments(changes, paths)


@dataclass(frozen=True)
class Wanted:
    """A record that should be in the chain for a proposal (``append_missing``): its event, once per proposal."""

    event: str
    actor: str
    decided_by: str
    tool: str
    proposal_id: str
    detail: dict[str, Any] = field(default_factory=dict)


def _not_recorded(wanted: Sequence[Wanted], have: set[tuple[str, str]]) -> list[Wanted]:
    """The wanted records whose (proposal, event) ``have`` lacks, one per proposal and event."""
    return list({(w.proposal_id, w.event): w for w in wanted if (w.proposal_id, w.event) not in have}.values())


class AuditStore(ABC):
    """Append-only, tamper-evident record. There is deliberately no update or delete."""

    @abstractmethod
    def append(
        self,
        event: str,
        *,
        actor: str,
        decided_by: str,
        tool: str = "",
        proposal_id: str = "",
        trace_id: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> AuditRecord:
        """Add one record at the end of the chain and return it."""

    def append_deferred(
        self,
        event: str,
        *,
        actor: str,
        decided_by: str,
        tool: str = "",
        proposal_id: str = "",
        trace_id: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        """Queue a record that may be committed with others, shortly (a READ call's); acknowledged only
        once committed (see the module docstring). Default: ``append``, synchronously."""
        self.append(event, actor=actor, decided_by=decided_by, tool=tool, proposal_id=proposal_id,
                    trace_id=trace_id, detail=detail)

    def flush(self) -> None:
        """Return once every record deferred before this call is committed. Default: nothing queued."""

    def append_missing(self, wanted: Sequence[Wanted]) -> int:
        """Append each wanted record whose proposal has no record of its event yet, and return how many
        were appended: how a decision committed by a process that died before appending its record gets it
        (``ApprovalDesk.reconcile``). SQL stores check and append in one transaction under the append
        lock, so two processes reconciling at once append it once. Default: a scan, then appends."""
        ids = {w.proposal_id for w in wanted}
        missing = _not_recorded(wanted, {(r.proposal_id, r.event) for r in self.records() if r.proposal_id in ids})
        for w in missing:
            self.append(w.event, actor=w.actor, decided_by=w.decided_by, tool=w.tool, proposal_id=w.proposal_id,
                        detail=w.detail)
        return len(missing)

    @abstractmethod
    def records(self, *, after_seq: int = 0) -> Iterator[AuditRecord]:
        """Records in chain order, from ``after_seq + 1``."""

    def head(self) -> tuple[int, str]:
        """(seq, hash) of the newest record, (0, GENESIS_HASH) when empty: publish it as an anchor."""
        last = (0, GENESIS_HASH)
        for record in self.records():
            last = (record.seq, record.hash)
        return last

    def verify(self, anchor: tuple[int, str] | None = None) -> AuditVerification:
        """Walk the chain: contiguous seq, each prev_hash links, each hash matches its content;
        with ``anchor`` (an earlier ``head()``), that record must still be there unchanged."""
        count, prev, expected_seq = 0, GENESIS_HASH, 1
        anchor_seen = anchor is None or anchor[0] == 0
        for record in self.records():
            if record.seq != expected_seq:
                return AuditVerification(False, count, expected_seq, f"record {expected_seq} is missing")
            if record.prev_hash != prev:
                return AuditVerification(False, count, record.seq,
                                         "prev_hash does not match the previous record's hash")
            if record.computed_hash() != record.hash:
                return AuditVerification(False, count, record.seq,
                                         "record content does not match its hash")
            if anchor is not None and record.seq == anchor[0]:
                if record.hash != anchor[1]:
                    return AuditVerification(False, count, record.seq, "record differs from the anchor")
                anchor_seen = True
            count, prev, expected_seq = count + 1, record.hash, expected_seq + 1
        if not anchor_seen:
            assert anchor is not None
            return AuditVerification(False, count, anchor[0], f"anchored record {anchor[0]} is missing")
        return AuditVerification(True, count)

    def close(self) -> None:
        """Release connections."""

    def __enter__(self) -> AuditStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


_FIELDS = ", ".join(f.name for f in fields(AuditRecord))  # the columns, in the record's order
_HASHED = tuple(f.name for f in fields(AuditRecord) if f.name != "hash")  # what ``body`` holds, in order
_INSERT = f"INSERT INTO toolcrib_audit ({_FIELDS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _chain_hash(values: Sequence[Any]) -> str:
    """``AuditRecord.computed_hash`` of a record whose fields but its hash are ``values`` (in ``_HASHED``
    order), without making the record: ``asdict`` deep-copies, and cost more than the rest of an append."""
    return sha256_hex(canonical_json(dict(zip(_HASHED, values, strict=True))))


_TEXT = json.JSONEncoder(ensure_ascii=False).encode  # a string as canonical_json writes it


def _row_hash(row: Sequence[Any]) -> str:
    """``_chain_hash`` of a record given as a row (``_FIELDS`` but the hash, its detail canonical JSON),
    written out in canonical_json's key order without decoding the detail and encoding it again:
    that cost more than the rest of a group commit. ``verify`` checks it with ``_chain_hash``."""
    seq, timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail_json, prev = row
    if type(timestamp) is float and timestamp.is_integer():  # canonical JSON: 3.0 is 3
        timestamp = int(timestamp)
    return sha256_hex(
        f'{{"actor":{_TEXT(actor)},"decided_by":{_TEXT(decided_by)},"detail":{detail_json},"event":{_TEXT(event)},'
        f'"prev_hash":{_TEXT(prev)},"proposal_id":{_TEXT(proposal_id)},"seq":{int(seq)},'
        f'"timestamp":{_TEXT(timestamp)},"tool":{_TEXT(tool)},"trace_id":{_TEXT(trace_id)}}}')


# timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail: canonical JSON, or (a
# deferred record's) the mapping, encoded when it is written
_Entry = tuple[float, str, str, str, str, str, str, str | dict[str, Any]]


def _encoded(detail: str | dict[str, Any]) -> str:
    """A deferred record's detail as canonical JSON; one that cannot be encoded is recorded as such
    (the chain must not stop on it)."""
    if isinstance(detail, str):
        return detail
    try:
        return canonical_json(detail)
    except (TypeError, ValueError, InvalidArguments) as exc:
        return canonical_json({"unencodable_detail": f"{type(exc).__name__}: {exc}"[:300]})


def _record(row: Sequence[Any]) -> AuditRecord:
    """A record from a row selected as ``_FIELDS``, by column name."""
    values = dict(zip((f.name for f in fields(AuditRecord)), row, strict=True))
    return AuditRecord(**{**values, "detail": json.loads(values["detail"])})


class _SQLAuditStore(AuditStore):
    """Shared logic; subclasses give the connection, whose write transaction serialises appends."""

    _db: SQLiteConnection | PostgresConnection

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock

    @abstractmethod
    def _tx(self, write: bool = True) -> Any:
        """A context manager yielding a cursor; with ``write``, appends are serialised."""

    def _sql(self, text: str) -> str:
        return text

    def append(
        self,
        event: str,
        *,
        actor: str,
        decided_by: str,
        tool: str = "",
        proposal_id: str = "",
        trace_id: str = "",
        detail: Mapping[str, Any] | None = None,
    ) -> AuditRecord:
        entry = self._entry(event, actor, decided_by, tool, proposal_id, trace_id, detail)
        with self._tx() as cur:
            return self._write(cur, [entry])

    def _entry(self, event: str, actor: str, decided_by: str, tool: str, proposal_id: str, trace_id: str,
               detail: Mapping[str, Any] | None, *, deferred: bool = False) -> _Entry:
        """A record's fields but its place in the chain, stamped now; a ``deferred`` record's detail is
        encoded by the writer (a READ call's arguments: validated JSON, not changed later)."""
        if event not in EVENTS:
            raise ValueError(f"unknown audit event {event!r}; expected one of {sorted(EVENTS)}")
        return (self._clock(), event, actor, decided_by, tool, proposal_id, trace_id,
                dict(detail or {}) if deferred else canonical_json(dict(detail or {})))

    def _write(self, cur: Any, entries: Sequence[_Entry]) -> AuditRecord:
        """Chain ``entries`` after the newest record, in order, in the caller's write transaction; returns
        the last record (the only one a caller reads: a batch's records are only counted)."""
        cur.execute("SELECT seq, hash FROM toolcrib_audit ORDER BY seq DESC LIMIT 1")
        last = cur.fetchone()
        seq, prev = (last[0] + 1, last[1]) if last else (1, GENESIS_HASH)
        rows = []
        for timestamp, event, actor, decided_by, tool, proposal_id, trace_id, detail in entries:
            row = (seq, timestamp, event, actor, decided_by, tool, proposal_id, trace_id, _encoded(detail), prev)
            digest = _row_hash(row)
            rows.append((*row, digest))
            seq, prev = seq + 1, digest
        cur.executemany(self._sql(_INSERT), rows)
        return _record(rows[-1])

    def append_missing(self, wanted: Sequence[Wanted]) -> int:
        if not wanted:
            return 0
        with self._tx(write=False) as cur:  # the usual answer, nothing missing, without the append lock
            if not self._missing(cur, wanted):
                return 0
        with self._tx() as cur:
            missing = self._missing(cur, wanted)
            if missing:
                self._write(cur, [self._entry(w.event, w.actor, w.decided_by, w.tool, w.proposal_id, "", w.detail)
                                  for w in missing])
        return len(missing)

    def _missing(self, cur: Any, wanted: Sequence[Wanted]) -> list[Wanted]:
        """The wanted records the chain has no record of, one per proposal and event."""
        ids = sorted({w.proposal_id for w in wanted})
        if not ids:
            return []
        cur.execute(self._sql(f"SELECT proposal_id, event FROM toolcrib_audit WHERE proposal_id <> ''"
                              f" AND proposal_id IN ({', '.join('?' * len(ids))})"), ids)
        return _not_recorded(wanted, {(pid, event) for pid, event in cur.fetchall()})

    def records(self, *, after_seq: int = 0) -> Iterator[AuditRecord]:
        while True:
            with self._tx(write=False) as cur:
                cur.execute(self._sql(f"SELECT {_FIELDS} FROM toolcrib_audit WHERE seq > ?"
                                      f" ORDER BY seq LIMIT {_PAGE}"), (after_seq,))
                rows = cur.fetchall()
            for row in rows:
                yield _record(row)
            if len(rows) < _PAGE:
                return
            after_seq = rows[-1][0]

    def head(self) -> tuple[int, str]:
        with self._tx(write=False) as cur:
            cur.execute("SELECT seq, hash FROM toolcrib_audit ORDER BY seq DESC LIMIT 1")
            last = cur.fetchone()
        return (last[0], last[1]) if last else (0, GENESIS_HASH)

    def close(self) -> None:
        self._db.close()


# a proposal's records, found without reading the chain (``append_missing``); READ records have no proposal
_PROPOSAL_INDEX = ("CREATE INDEX IF NOT EXISTS toolcrib_audit_proposal ON toolcrib_audit (proposal_id, event)"
                   " WHERE proposal_id <> ''")

_SQLITE_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS toolcrib_audit (
        seq INTEGER PRIMARY KEY, timestamp REAL NOT NULL, event TEXT NOT NULL, actor TEXT NOT NULL,
        decided_by TEXT NOT NULL, tool TEXT NOT NULL, proposal_id TEXT NOT NULL,
        trace_id TEXT NOT NULL, detail TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
    _PROPOSAL_INDEX,
    """CREATE TRIGGER IF NOT EXISTS toolcrib_audit_no_update BEFORE UPDATE ON toolcrib_audit
       BEGIN SELECT RAISE(ABORT, 'toolcrib audit records are append-only'); END""",
    """CREATE TRIGGER IF NOT EXISTS toolcrib_audit_no_delete BEFORE DELETE ON toolcrib_audit
       BEGIN SELECT RAISE(ABORT, 'toolcrib audit records are append-only'); END""",
]


class SQLiteAuditStore(_SQLAuditStore):
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
        self._journal = ReadJournal(audit_journal.journal_folder(self.path))
        self._journaled: list[JournalEntry] = []  # acknowledged, not chained yet (``_commit`` held)
        self._journaled_at = 0.0  # when the last were journaled (monotonic)
        self._recover()
        self._queue: list[_Entry] = []
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
                _FLUSH_AT_EXIT.add(self)
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
        _FLUSH_AT_EXIT.discard(self)
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

    def _take(self) -> list[_Entry]:
        with self._changed:
            taken, self._queue = self._queue, []
        return taken

    def _give_back(self, taken: list[_Entry]) -> None:
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
        entries: list[JournalEntry] = [(*entry[:7], _encoded(entry[7])) for entry in taken]
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

    def _chain(self, entries: Sequence[_Entry], *, synced: bool) -> AuditRecord:
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


# Stores with a writer, flushed at interpreter exit (a daemon thread would otherwise be cut off).
_FLUSH_AT_EXIT: weakref.WeakSet[SQLiteAuditStore] = weakref.WeakSet()


@atexit.register
def _flush_at_exit() -> None:
    for store in list(_FLUSH_AT_EXIT):
        with contextlib.suppress(Exception):  # nothing to report to at exit; they were not acknowledged
            store.close()


_POSTGRES_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS toolcrib_audit (
        seq BIGINT PRIMARY KEY, timestamp DOUBLE PRECISION NOT NULL, event TEXT NOT NULL,
        actor TEXT NOT NULL, decided_by TEXT NOT NULL, tool TEXT NOT NULL,
        proposal_id TEXT NOT NULL, trace_id TEXT NOT NULL, detail TEXT NOT NULL,
        prev_hash TEXT NOT NULL, hash TEXT NOT NULL)""",
    _PROPOSAL_INDEX,
    """CREATE OR REPLACE FUNCTION toolcrib_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS
       $$ BEGIN RAISE EXCEPTION 'toolcrib audit records are append-only'; END $$""",
    """CREATE OR REPLACE TRIGGER toolcrib_audit_no_change BEFORE UPDATE OR DELETE ON toolcrib_audit
       FOR EACH ROW EXECUTE FUNCTION toolcrib_audit_append_only()""",
    """CREATE OR REPLACE TRIGGER toolcrib_audit_no_truncate BEFORE TRUNCATE ON toolcrib_audit
       FOR EACH STATEMENT EXECUTE FUNCTION toolcrib_audit_append_only()""",
]


class PostgresAuditStore(_SQLAuditStore):
    """The audit record in PostgreSQL, shared by every ``toolcrib serve`` process."""

    def __init__(self, dsn: str, *, schema: str | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        super().__init__(clock)
        self._db = PostgresConnection(dsn, schema, "audit store")
        self._db.migrate(_POSTGRES_SCHEMA)

    @contextmanager
    def _tx(self, write: bool = True) -> Iterator[Any]:
        with self._db.tx() as cur:
            if write:
                # EXCLUSIVE blocks other appends until commit but not readers: one chain order
                cur.execute("LOCK TABLE toolcrib_audit IN EXCLUSIVE MODE")
            yield cur

    def _sql(self, text: str) -> str:
        return text.replace("?", "%s")

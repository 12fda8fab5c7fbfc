"""The append-only, hash-chained record of every proposal, decision, approval and execution: the
record (``AuditRecord``), the seam (``AuditStore``) and what both front ends write into it (``Wanted``,
redaction). The SQL dialects are beside it: ``sqlite`` (with the read journal), ``postgres``.

Each record carries the hash of the one before it and its own hash over its canonical JSON, so
editing, inserting or deleting a record in the middle breaks ``verify()``. Deleting the newest
records leaves a valid shorter chain: publish ``head()`` elsewhere and pass it to ``verify`` to
catch that too.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from toolcrib.policy._connections import Store
from toolcrib.policy.canonical import canonical_json, sha256_hex

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


_HASHED = tuple(f.name for f in fields(AuditRecord) if f.name != "hash")  # what ``body`` holds, in order


def _chain_hash(values: Sequence[Any]) -> str:
    """``AuditRecord.computed_hash`` of a record whose fields but its hash are ``values`` (in ``_HASHED``
    order), without making the record: ``asdict`` deep-copies, and cost more than the rest of an append."""
    return sha256_hex(canonical_json(dict(zip(_HASHED, values, strict=True))))


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


def not_recorded(wanted: Sequence[Wanted], have: set[tuple[str, str]]) -> list[Wanted]:
    """The wanted records whose (proposal, event) ``have`` lacks, one per proposal and event."""
    return list({(w.proposal_id, w.event): w for w in wanted if (w.proposal_id, w.event) not in have}.values())


class AuditStore(Store, ABC):
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
        missing = not_recorded(wanted, {(r.proposal_id, r.event) for r in self.records() if r.proposal_id in ids})
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

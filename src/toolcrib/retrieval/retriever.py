"""``HybridRetriever``: BM25 and dense search fused by reciprocal rank, exact identifiers first, ACL-safe."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from toolcrib.retrieval.documents import Chunk, Passage, readable_by
from toolcrib.retrieval.embedders import Embedder
from toolcrib.retrieval.evidence import Conflict, Evidence
from toolcrib.retrieval.index import Hit, Index

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.35
"""Cosine similarity (all-MiniLM-L6-v2) under which the best passage is not evidence enough."""

_HYPHENATED = r"[A-Za-z0-9]+(?:[-_/][A-Za-z0-9]+)+"
_IDENTIFIER = re.compile(
    r"(?<![\w.])(?:"
    rf"(?=[\w/-]*\d)(?=[\w/-]*[A-Za-z]){_HYPHENATED}"  # HLV-2205, ORD-1001, PO_77/2
    r"|(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{4,}"  # X2000, SKU123
    r"|\d+(?:\.\d+)+"  # clause numbers: 8.3, 12.1.4
    r")(?![\w]|\.\d)"
)


def find_identifiers(query: str) -> list[str]:
    """Identifier-like tokens in a query: part numbers, order ids, clause numbers."""
    return list(dict.fromkeys(m.group(0) for m in _IDENTIFIER.finditer(query)))


def contains_exactly(text: str, identifier: str) -> bool:
    """``identifier`` occurs in ``text`` as a whole token (``8.3`` is not in ``18.3`` or ``8.31``)."""
    pattern = rf"(?<![A-Za-z0-9]){re.escape(identifier)}(?![A-Za-z0-9]|\.\d)"
    return re.search(pattern, text, flags=re.IGNORECASE) is not None


def defines(chunk: Chunk, identifier: str) -> bool:
    """The chunk is about ``identifier``: it names its title or section, or opens a line or table cell
    (``8.3 For each week...``, ``| HLV-2205 | ...``), rather than merely mentioning it."""
    if contains_exactly(f"{chunk.meta.title} {chunk.section}", identifier):
        return True
    opener = rf"(?im)(?:^|\|)[\s*#>_-]*(?:clause|section|part|§)?\s*{re.escape(identifier)}(?![A-Za-z0-9]|\.\d)"
    return re.search(opener, chunk.text) is not None


@runtime_checkable
class Reranker(Protocol):
    """Reorders fused candidates (a cross-encoder, an LLM judge, business rules)."""

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        """The passages, best first; scores may be rewritten."""
        ...


class FunctionReranker:
    """A reranker from a plain ``score(query, passage) -> float`` function (tests, simple rules)."""

    def __init__(self, score: Callable[[str, Passage], float]) -> None:
        self.score = score

    def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
        for passage in passages:
            passage.score = float(self.score(query, passage))
        return sorted(passages, key=lambda p: p.score, reverse=True)


@dataclass
class Retrieval:
    """What the retriever found for one principal, with its scores: passages, version conflicts, and
    whether they suffice. ``evidence()`` is what the model is shown and the run cites."""

    query: str
    passages: list[Passage]
    conflicts: list[Conflict] = field(default_factory=list)
    threshold: float = DEFAULT_THRESHOLD
    identifiers: list[str] = field(default_factory=list)

    @property
    def best_relevance(self) -> float:
        return max((p.relevance for p in self.passages), default=0.0)

    @property
    def citations(self) -> list[str]:
        return [p.citation for p in self.passages]

    def sufficient(self, threshold: float | None = None) -> bool:
        """False when nothing survived the access filter, the best passage is below the threshold, or
        the query names identifiers (HLV-9999, clause 8.3) that no passage contains."""
        limit = self.threshold if threshold is None else threshold
        if self.identifiers and not any(p.exact_match for p in self.passages):
            return False
        return bool(self.passages) and self.best_relevance >= limit

    def evidence(self) -> Evidence:
        return Evidence(self.query, tuple(p.cited() for p in self.passages), tuple(self.conflicts),
                        self.sufficient())

    def to_dict(self) -> dict[str, Any]:
        """The model-facing shape (the ``vector_search`` tool's result)."""
        return self.evidence().to_dict()


class HybridRetriever:
    """BM25 + dense search fused with reciprocal rank fusion, access-filtered inside the index.

    ``weights`` scales each list's RRF contribution (``{"bm25": 1.0, "dense": 1.0}``).
    Identifier-like query tokens (HLV-2205, ORD-1001, clause 8.3) are also looked up verbatim, and
    chunks that contain them exactly rank above those that do not.
    """

    def __init__(self, index: Index, embedder: Embedder, reranker: Reranker | None = None, *,
                 weights: Mapping[str, float] | None = None, rrf_k: int = 60, candidates: int = 50,
                 threshold: float = DEFAULT_THRESHOLD) -> None:
        self.index = index
        self.embedder = embedder
        self.reranker = reranker
        self.weights = {"bm25": 1.0, "dense": 1.0, **(weights or {})}
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.threshold = threshold

    def retrieve(self, query: str, principal_groups: Iterable[str], top_k: int = 5) -> Retrieval:
        """The ``top_k`` best passages this principal may read, with conflicts and sufficiency."""
        groups = sorted(set(principal_groups))
        query = query.strip()
        identifiers = find_identifiers(query)
        if not query:
            return Retrieval(query, [], threshold=self.threshold)
        depth = max(self.candidates, top_k * 4)
        vector = self.embedder.embed_query(query)
        ranked = {
            "dense": self.index.search_dense(vector, groups, depth),
            "bm25": self.index.search_text(query, groups, depth),
        }
        fused: dict[str, Passage] = {}
        for source, hits in ranked.items():
            self._fuse(fused, source, hits)
        for hit in ranked["dense"]:
            fused[hit.chunk.citation].relevance = max(fused[hit.chunk.citation].relevance, hit.score)
        for identifier in identifiers:
            matches = [p for p in fused.values() if contains_exactly(p.chunk.search_text, identifier)]
            if not matches:  # neither list holds it verbatim: scan for it (slower, so only when needed)
                self._fuse(fused, "exact", self.index.search_exact(identifier, groups, depth), weight=0.0)
                matches = [p for p in fused.values() if contains_exactly(p.chunk.search_text, identifier)]
            for passage in matches:
                passage.score += 1.5 if defines(passage.chunk, identifier) else 1.0
                passage.exact_match = True
                passage.relevance = max(passage.relevance, 1.0)
        candidates = sorted(fused.values(), key=lambda p: p.score, reverse=True)
        candidates = [p for p in candidates if readable_by(p.chunk.meta.access, groups)]
        if self.reranker is not None:
            candidates = self.reranker.rerank(query, candidates[:max(top_k * 3, 20)])
        passages = []
        for passage in candidates:
            # checked again on the final list: the index filter is not the only line of defence
            if not readable_by(passage.chunk.meta.access, groups):
                log.warning("dropped a passage the index returned outside the reader's groups")
                continue
            passages.append(passage)
            if len(passages) == top_k:
                break
        return Retrieval(query, passages, conflicts=find_conflicts(passages), threshold=self.threshold,
                        identifiers=identifiers)

    def _fuse(self, fused: dict[str, Passage], source: str, hits: Sequence[Hit], weight: float | None = None) -> None:
        w = self.weights.get(source, 0.0) if weight is None else weight
        for rank, hit in enumerate(hits, start=1):
            passage = fused.setdefault(hit.chunk.citation, Passage(chunk=hit.chunk))
            passage.sources[source] = rank
            passage.score += w / (self.rrf_k + rank)


def find_conflicts(passages: Sequence[Passage]) -> list[Conflict]:
    """Families with passages from more than one version (or effective date), newest first."""
    families: dict[str, dict[tuple[str, str], Passage]] = {}
    for passage in passages:
        meta = passage.chunk.meta
        families.setdefault(meta.family or meta.doc_id, {}).setdefault((meta.version, meta.effective_date), passage)
    conflicts = []
    for family, versions in families.items():
        if len(versions) < 2:
            continue
        entries = sorted(versions.values(), key=lambda p: (p.chunk.meta.effective_date, p.chunk.meta.version),
                         reverse=True)
        conflicts.append(Conflict(family, tuple(
            {"citation": p.citation, "doc_id": p.doc_id, "title": p.chunk.meta.title,
             "version": p.chunk.meta.version, "effective_date": p.chunk.meta.effective_date}
            for p in entries)))
    return conflicts

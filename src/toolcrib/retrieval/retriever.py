"""``HybridRetriever``: BM25 and dense search fused by reciprocal rank, exact identifiers first, ACL-safe."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from toolcrib.retrieval.documents import Chunk, Passage, readable_by
from toolcrib.retrieval.embedders import Embedder
from toolcrib.retrieval.evidence import CitedPassage, Conflict, Evidence
from toolcrib.retrieval.excerpt import excerpts, names, terms
from toolcrib.retrieval.index import Index, Ranked
from toolcrib.text import find_identifiers

log = logging.getLogger(__name__)

DEFAULT_THRESHOLD = 0.35
"""Cosine similarity (all-MiniLM-L6-v2) under which the best passage is not evidence enough."""
LEXICAL_MARGIN = 0.1
"""How far under the threshold a passage holding every content word of the query still counts."""


def contains_exactly(text: str, identifier: str) -> bool:
    """``identifier`` occurs in ``text`` as a whole token (``8.3`` is not in ``18.3`` or ``8.31``)."""
    if text.isascii() and identifier.isascii():  # the pattern's answer without it (compiling one costs more)
        low = text.lower()
        return any(start == 0 or not low[start - 1].isalnum() for start in _occurrences(low, identifier.lower()))
    return identifier.lower() in text.lower() and _token_pattern(identifier).search(text) is not None


def _occurrences(low: str, identifier: str) -> Iterator[int]:
    """Where ``identifier`` starts in ``low`` (both ASCII and lower case) not followed by a letter, a
    digit, or a dot and a digit: ``_token_pattern``'s end for ASCII text."""
    start = low.find(identifier)
    while start >= 0:
        end = start + len(identifier)
        if not (low[end:end + 1].isalnum() or (low[end:end + 1] == "." and low[end + 1:end + 2].isdigit())):
            yield start
        start = low.find(identifier, start + 1)


@functools.lru_cache(maxsize=256)
def _token_pattern(identifier: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9]){re.escape(identifier)}(?![A-Za-z0-9]|\.\d)", flags=re.IGNORECASE)


def defines(chunk: Chunk, identifier: str) -> bool:
    """The chunk is about ``identifier``: it names its title or section, or opens a line or table cell
    (``8.3 For each week...``, ``| AB-1234 | ...``), rather than merely mentioning it."""
    if contains_exactly(f"{chunk.meta.title} {chunk.section}", identifier):
        return True
    if chunk.text.isascii() and identifier.isascii():  # as the pattern answers, without compiling it
        low = chunk.text.lower()
        return any(_opens(low, start) for start in _occurrences(low, identifier.lower()))
    return _opener_pattern(identifier).search(chunk.text) is not None


_SPACE = " \t\n\r\f\v\x1c\x1d\x1e\x1f"  # what \s matches among ASCII characters
_MARKS = frozenset(_SPACE + "*#>_-")


def _opens(low: str, start: int) -> bool:
    """``_opener_pattern`` for ASCII text (lower case) and an identifier at ``start``: between the line or
    table cell it is in and the identifier stand only marks, then perhaps clause/section/part and white
    space. (An earlier line start that matches implies the last one does, so only the last is tried.)"""
    head = low[max(low.rfind("\n", 0, start), low.rfind("|", 0, start)) + 1:start].rstrip(_SPACE)
    for word in ("clause", "section", "part"):
        if head.endswith(word):
            head = head[:-len(word)]
            break
    return all(c in _MARKS for c in head)


@functools.lru_cache(maxsize=256)
def _opener_pattern(identifier: str) -> re.Pattern[str]:
    return re.compile(rf"(?im)(?:^|\|)[\s*#>_-]*(?:clause|section|part|§)?\s*{re.escape(identifier)}"
                      r"(?![A-Za-z0-9]|\.\d)")


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
    excerpt_chars: int = 0  # > 0: about this many characters of passage text in all, excerpted for the query
    named: frozenset[str] = frozenset()  # citations of passages added for a name the query asks about

    @property
    def best_relevance(self) -> float:
        return max((p.relevance for p in self.passages), default=0.0)

    @property
    def citations(self) -> list[str]:
        return [p.citation for p in self.passages]

    def sufficient(self, threshold: float | None = None) -> bool:
        """False when nothing survived the access filter, the best passage is below the threshold (by
        up to ``LEXICAL_MARGIN`` is enough when a passage holds every content word of the query), or
        the query names identifiers (AB-9999, clause 8.3) that no passage contains."""
        limit = self.threshold if threshold is None else threshold
        if self.identifiers and not any(p.exact_match for p in self.passages):
            return False
        if not self.passages or self.best_relevance < limit - LEXICAL_MARGIN:
            return False
        return self.best_relevance >= limit or self.covered

    @property
    def covered(self) -> bool:
        """Lexical agreement: one passage holds every content word of the query (two or more), as
        "How to escalate a critical issue" does for "How do I escalate a critical issue?"."""
        wanted = terms(self.query)
        return len(wanted) >= 2 and any(wanted <= terms(p.chunk.search_text) for p in self.passages)

    def evidence(self) -> Evidence:
        passages, section = self._in_reading_order()
        cited = [p.cited() for p in passages]
        conflicts = self.conflicts
        if self.excerpt_chars:  # the best passage, and one added for a name, are shown whole; the versions
            # of a conflict stay together, all or (none of them bearing on the query) none
            at = {c.citation: k for k, c in enumerate(cited)}
            texts = excerpts([c.text for c in cited], self.query, self.excerpt_chars,
                             whole=set(range(section)) | self._named_best(cited),
                             keep=[{at[cid] for cid in conflict.citations if cid in at} for conflict in conflicts],
                             titles=[f"{c.title}\n{c.section}" for c in cited])
            cited = [replace(c, text=t) for c, t in zip(cited, texts, strict=True) if t is not None]
            shown = {c.citation for c in cited}
            conflicts = [c for c in conflicts if shown.issuperset(c.citations)]
        return Evidence(self.query, tuple(cited), tuple(conflicts), self.sufficient())

    def _named_best(self, cited: Sequence[CitedPassage]) -> set[int]:
        """The passages shown whole for the names the query asks about: one added for a name, and, when
        it names two or more ("how can Norden and Ostara raise prices?"), each name's best passage, so
        that each party's clause is read whole rather than the sentences sharing the query's words."""
        shown = {k for k, c in enumerate(cited) if c.citation in self.named}
        asked = names(self.query)
        if len(asked) >= 2:
            for name in asked:
                held = [k for k, c in enumerate(cited) if name.casefold() in f"{c.title}\n{c.text}".casefold()]
                shown.update(held[:1])
        return shown

    def _in_reading_order(self) -> tuple[list[Passage], int]:
        """The passages, and how many at the front are shown whole: the best one, or, when the best
        passage's section heading says most of what the query asks ("How to escalate a critical issue
        (P1)" for "How do I escalate a critical issue?"), every passage of that section, first and in
        the document's order, so that a procedure split over several chunks is read whole from step 1."""
        passages = list(self.passages)
        if not passages:
            return passages, 0
        best = passages[0].chunk
        wanted = terms(self.query)
        if len(wanted) < 2 or 3 * len(wanted & terms(best.section)) < 2 * len(wanted):
            return passages, 1
        same = [p for p in passages if p.chunk.meta.doc_id == best.meta.doc_id and p.chunk.section == best.section]
        same.sort(key=lambda p: _chunk_order(p.chunk.chunk_id))
        return [*same, *(p for p in passages if p not in same)], len(same)

    def to_dict(self) -> dict[str, Any]:
        """The ``vector_search`` tool's result (what the model reads is ``Evidence.to_text``)."""
        return self.evidence().to_dict()


class HybridRetriever:
    """BM25 + dense search fused with reciprocal rank fusion, access-filtered inside the index.

    ``weights`` scales each list's RRF contribution (``{"bm25": 1.0, "dense": 1.0}``).
    Identifier-like query tokens (AB-1234, PO-1001, clause 8.3) are also looked up verbatim, and
    chunks that contain them exactly rank above those that do not.
    """

    def __init__(self, index: Index, embedder: Embedder, reranker: Reranker | None = None, *,
                 weights: Mapping[str, float] | None = None, rrf_k: int = 60, candidates: int = 50,
                 threshold: float = DEFAULT_THRESHOLD, excerpt_chars: int = 0, top_k: int = 5) -> None:
        self.index = index
        self.top_k = top_k  # the passages a search tool returns at least (retrieval.top_k)
        self.embedder = embedder
        self.reranker = reranker
        self.weights = {"bm25": 1.0, "dense": 1.0, **(weights or {})}
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.threshold = threshold
        self.excerpt_chars = excerpt_chars

    def retrieve(self, query: str, principal_groups: Iterable[str], top_k: int = 5) -> Retrieval:
        """The ``top_k`` best passages this principal may read, with conflicts and sufficiency."""
        groups = sorted(set(principal_groups))
        query = query.strip()
        identifiers = find_identifiers(query)
        if not query:
            return Retrieval(query, [], threshold=self.threshold, excerpt_chars=self.excerpt_chars)
        depth = max(self.candidates, top_k * 4)
        vector = self.embedder.embed_query(query)
        dense, text = self.index.rank_hybrid(vector, query, groups, depth, with_chunks=bool(identifiers))
        fused: dict[str, _Candidate] = {}
        self._fuse(fused, "dense", dense)
        self._fuse(fused, "bm25", text)
        for result in dense:
            candidate = fused[result.citation]
            candidate.relevance = max(candidate.relevance, result.score)
        if identifiers:  # every candidate's text is needed to find the identifiers in it
            self._read(list(fused.values()), groups)
        for identifier in identifiers:
            matches = _containing(fused.values(), identifier)
            if not matches:  # neither list holds it verbatim: scan for it (slower, so only when needed)
                for rank, hit in enumerate(self.index.search_exact(identifier, groups, depth), start=1):
                    found = fused.get(hit.chunk.citation)
                    if found is None:
                        found = fused[hit.chunk.citation] = _Candidate(Ranked(hit.chunk.citation, hit.score, None))
                    found.chunk = found.chunk or hit.chunk
                    found.sources["exact"] = rank
                matches = _containing(fused.values(), identifier)
            for candidate, chunk in matches:
                candidate.score += 1.5 if defines(chunk, identifier) else 1.0
                candidate.exact_match = True
                candidate.relevance = max(candidate.relevance, 1.0)
        ordered = sorted(fused.values(), key=lambda c: c.score, reverse=True)
        wanted = top_k if self.reranker is None else max(top_k * 3, 20)
        candidates = self._readable(ordered, groups, wanted)
        if self.reranker is not None:
            candidates = self.reranker.rerank(query, candidates)
        passages = []
        for passage in candidates:
            # checked again on the final list: the index filter is not the only line of defence
            if not readable_by(passage.chunk.meta.access, groups):
                log.warning("dropped a passage the index returned outside the reader's groups")
                continue
            passages.append(passage)
            if len(passages) == top_k:
                break
        passages, named = self._cover_names(query, passages, ordered, groups, depth)
        passages = self._cover_versions(passages, ordered, groups)
        return Retrieval(query, passages, conflicts=find_conflicts(passages), threshold=self.threshold,
                         identifiers=identifiers, excerpt_chars=self.excerpt_chars, named=named)

    def _cover_names(self, query: str, passages: list[Passage], ordered: Sequence[_Candidate],
                     groups: Sequence[str], depth: int) -> tuple[list[Passage], frozenset[str]]:
        """``passages`` with, for each name the query asks about ("... the Norden contract, and how does
        Ostara's differ?") that none of them mentions, the best-ranked passage that does, in place of
        the weakest passage that covers no name: a question about two documents gets both. Searched
        for again with the name put first when no candidate holds it; a name no readable passage holds
        adds nothing. Returns the passages and the citations of those added."""
        def holds(chunk: Chunk, name: str) -> bool:
            return name.casefold() in f"{chunk.meta.title}\n{chunk.search_text}".casefold()

        asked = names(query)
        missing = [n for n in asked if not any(holds(p.chunk, n) for p in passages)]
        if not missing or not passages:
            return passages, frozenset()
        covering: list[Passage] = []
        self._read(ordered, groups)  # every candidate's text, read once for all the names
        for name in missing:
            found = [c for c in ordered if c.chunk is not None and holds(c.chunk, name)]
            if not found:  # the name put first: a second search, its own candidates
                focused = f"{name} {query}"
                dense, text = self.index.rank_hybrid(self.embedder.embed_query(focused), focused, groups, depth,
                                                     with_chunks=True)
                fused: dict[str, _Candidate] = {}
                self._fuse(fused, "dense", dense)
                self._fuse(fused, "bm25", text)
                pool = sorted(fused.values(), key=lambda c: c.score, reverse=True)
                self._read(pool, groups)
                found = [c for c in pool if c.chunk is not None and holds(c.chunk, name)]
            for candidate in found:
                assert candidate.chunk is not None
                if readable_by(candidate.chunk.meta.access, groups) and all(
                        p.citation != candidate.chunk.citation for p in [*passages, *covering]):
                    covering.append(Passage(chunk=candidate.chunk, score=candidate.score,
                                            relevance=candidate.relevance, sources=candidate.sources))
                    break
        if not covering:
            return passages, frozenset()
        kept = list(passages)
        for extra in covering:  # replaces the weakest passage that names nothing the query names
            weakest = next((i for i in range(len(kept) - 1, 0, -1)
                            if not any(holds(kept[i].chunk, n) for n in asked)), None)
            if weakest is None:
                kept.append(extra)
            else:
                kept[weakest] = extra
        return kept, frozenset(p.citation for p in covering)

    def _cover_versions(self, passages: list[Passage], ordered: Sequence[_Candidate],
                        groups: Sequence[str]) -> list[Passage]:
        """``passages`` and, for each document family (``family`` in the metadata) they show a version
        of, the best-ranked candidate passage of each other version: which version is in force is for
        the request's dates to decide (``Evidence.as_of``), between versions it was shown. Only for a
        passage as relevant as the threshold asks; reads only the best candidate of each document not shown."""
        families = {p.chunk.meta.family for p in passages if p.chunk.meta.family and p.relevance >= self.threshold}
        if not families:
            return passages
        best: dict[str, _Candidate] = {}
        shown = {p.doc_id for p in passages}
        for candidate in ordered:
            doc = candidate.result.citation.rpartition("#")[0]
            if doc not in shown:
                best.setdefault(doc, candidate)
        self._read(list(best.values()), groups)
        return passages + [Passage(chunk=c.chunk, score=c.score, relevance=c.relevance, exact_match=c.exact_match,
                                   sources=c.sources)
                           for c in best.values() if c.chunk is not None and c.chunk.meta.family in families
                           and readable_by(c.chunk.meta.access, groups)]

    def _fuse(self, fused: dict[str, _Candidate], source: str, results: Sequence[Ranked]) -> None:
        w = self.weights.get(source, 0.0)
        k = self.rrf_k
        for rank, result in enumerate(results, start=1):
            candidate = fused.get(result.citation)
            if candidate is None:
                candidate = fused[result.citation] = _Candidate(result)
            candidate.sources[source] = rank
            candidate.score += w / (k + rank)

    def _read(self, candidates: Sequence[_Candidate], groups: Sequence[str]) -> None:
        """Reads the chunks of the candidates that have none yet, in one index call."""
        unread = [c for c in candidates if c.chunk is None]
        if unread:
            chunks = self.index.chunks([c.result for c in unread], groups)
            for candidate in unread:
                candidate.chunk = chunks.get(candidate.result.citation)

    def _readable(self, ordered: Sequence[_Candidate], groups: Sequence[str], wanted: int) -> list[Passage]:
        """The first ``wanted`` candidates as passages, reading only their chunks (and more only if some
        cannot be read or are outside ``groups``)."""
        out: list[Passage] = []
        start = 0
        while len(out) < wanted and start < len(ordered):
            batch = ordered[start:start + wanted - len(out)]
            start += len(batch)
            self._read(batch, groups)
            for candidate in batch:
                if candidate.chunk is None or not readable_by(candidate.chunk.meta.access, groups):
                    log.warning("dropped a candidate the index could not read back for the reader's groups")
                    continue
                out.append(Passage(chunk=candidate.chunk, score=candidate.score, relevance=candidate.relevance,
                                   exact_match=candidate.exact_match, sources=candidate.sources))
        return out


class _Candidate:
    """A fused search result; its chunk is read only if it may be returned (or its text is needed)."""

    __slots__ = ("chunk", "exact_match", "relevance", "result", "score", "sources")

    def __init__(self, result: Ranked, chunk: Chunk | None = None) -> None:
        self.result = result
        self.chunk = chunk
        self.score = 0.0
        self.relevance = 0.0
        self.exact_match = False
        self.sources: dict[str, int] = {}


def _chunk_order(chunk_id: str) -> tuple[int, str]:
    """Where a chunk stands in its document ("c12" after "c5"), for ids that number their chunks."""
    digits = re.sub(r"\D", "", chunk_id)
    return (int(digits) if digits else 0, chunk_id)


def _containing(candidates: Iterable[_Candidate], identifier: str) -> list[tuple[_Candidate, Chunk]]:
    """The candidates (read already) whose text holds ``identifier`` as a whole token."""
    return [(c, c.chunk) for c in candidates
            if c.chunk is not None and contains_exactly(c.chunk.search_text, identifier)]


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

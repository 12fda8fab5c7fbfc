"""The ``Index`` seam: chunks with vectors, searched densely and by full text, filtered by access."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from toolcrib.errors import ConfigError
from toolcrib.retrieval.documents import Chunk, DocumentMeta
from toolcrib.retrieval.embedders import Vectors


@dataclass(frozen=True)
class IndexSettings:
    """What an index was built with. Vectors from another embedder or chunker must not mix in."""

    embedder: str
    chunker: str
    dim: int
    layout: int = 2  # what each row stores; 2 added the document's trust

    def to_dict(self) -> dict[str, Any]:
        return {"embedder": self.embedder, "chunker": self.chunker, "dim": self.dim, "layout": self.layout}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> IndexSettings:
        return cls(embedder=str(data["embedder"]), chunker=str(data["chunker"]), dim=int(data["dim"]),
                   layout=int(data.get("layout", 1)))

    def require_same(self, wanted: IndexSettings, where: str) -> None:
        """Raise ConfigError, saying how to rebuild, when ``wanted`` differs from these settings."""
        diffs = [f"{name} '{have}' (this run: '{want}')"
                 for name, have, want in (("embedder", self.embedder, wanted.embedder),
                                          ("chunker", self.chunker, wanted.chunker),
                                          ("dimensions", self.dim, wanted.dim),
                                          ("row layout", self.layout, wanted.layout)) if have != want]
        if diffs:
            raise ConfigError(
                f"the index was built with {', '.join(diffs)}; mixing them would corrupt search. "
                "Rebuild it with `toolcrib ingest --reindex` (or ingest(..., reindex=True)).", file=where)


@dataclass
class IndexChanges:
    """One atomic change to an index: replace or remove whole documents, under ``settings``.

    ``chunks`` and ``vectors`` are aligned row for row; every document in ``replace`` loses its old
    chunks first. ``clear`` empties the index before anything else (a re-index).
    """

    settings: IndexSettings
    chunks: list[Chunk] = field(default_factory=list)
    vectors: Vectors = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))
    replace: list[str] = field(default_factory=list)
    delete: list[str] = field(default_factory=list)
    clear: bool = False

    def __post_init__(self) -> None:
        if len(self.chunks) != len(self.vectors) and self.chunks:
            raise ValueError("chunks and vectors must be aligned")


@dataclass(frozen=True)
class Hit:
    """One chunk a search found. ``score``: higher is better (cosine similarity for dense search)."""

    chunk: Chunk
    score: float


@dataclass(frozen=True, slots=True)
class Ranked:
    """One search result before its chunk is read: its citation id, its score (as in ``Hit``) and the
    index's own handle to the row, which ``Index.chunks`` reads. A retriever fuses many of these and
    reads only the few it returns."""

    citation: str
    score: float
    ref: Any


class Index(ABC):
    """Where chunks live. Every search takes the reader's groups and filters INSIDE the query."""

    location: str = ""

    @abstractmethod
    def apply(self, changes: IndexChanges) -> None:
        """Apply all of ``changes`` or none of them: a crash mid-way leaves the previous state."""

    @abstractmethod
    def settings(self) -> IndexSettings | None:
        """The embedder and chunker the index was built with, or None while it is empty and new."""

    @abstractmethod
    def documents(self) -> dict[str, DocumentMeta]:
        """Every indexed document by id (for incremental ingest: hashes and source paths)."""

    @abstractmethod
    def search_dense(self, vector: Vectors, groups: Sequence[str], limit: int) -> list[Hit]:
        """Nearest chunks by cosine similarity among those ``groups`` may read."""

    @abstractmethod
    def search_text(self, query: str, groups: Sequence[str], limit: int) -> list[Hit]:
        """Best full-text (BM25-style) matches among chunks ``groups`` may read."""

    @abstractmethod
    def search_exact(self, term: str, groups: Sequence[str], limit: int) -> list[Hit]:
        """Chunks whose text contains ``term`` (case-insensitive substring) that ``groups`` may read."""

    @abstractmethod
    def count(self, groups: Sequence[str]) -> int:
        """How many chunks ``groups`` may read."""

    def rank_hybrid(self, vector: Vectors | None, query: str | None, groups: Sequence[str],
                    limit: int, *, with_chunks: bool = False) -> tuple[list[Ranked], list[Ranked]]:
        """``search_dense`` and ``search_text`` (either skipped when its input is None) without reading
        the chunks yet; an index overrides this to skip the text and to run both searches at once.
        ``with_chunks``: the caller will read every result's chunk (to look for identifiers in them), so
        an index may as well return them with the results (as ``ref``, for ``chunks``)."""
        dense = [] if vector is None else self.search_dense(vector, groups, limit)
        text = [] if query is None else self.search_text(query, groups, limit)
        return ([Ranked(hit.chunk.citation, hit.score, hit.chunk) for hit in dense],
                [Ranked(hit.chunk.citation, hit.score, hit.chunk) for hit in text])

    def chunks(self, ranked: Sequence[Ranked], groups: Sequence[str]) -> dict[str, Chunk]:
        """The chunks of results that ``rank_hybrid`` returned for ``groups``, by citation.

        Only rows those searches returned (access-filtered inside the index) are read; the default
        implementation is for indexes whose ``rank_hybrid`` keeps the whole chunk as ``ref``."""
        return {r.citation: r.ref for r in ranked if isinstance(r.ref, Chunk)}

    def add(self, chunks: list[Chunk], vectors: Vectors, settings: IndexSettings) -> None:
        """Add (or replace) the documents these chunks belong to."""
        doc_ids = list(dict.fromkeys(chunk.meta.doc_id for chunk in chunks))
        self.apply(IndexChanges(settings=settings, chunks=chunks, vectors=vectors, replace=doc_ids))

    def delete(self, doc_ids: Sequence[str]) -> None:
        """Remove these documents and all their chunks."""
        current = self.settings()
        if current is None or not doc_ids:
            return
        self.apply(IndexChanges(settings=current, delete=list(doc_ids)))

    def close(self) -> None:
        """Release connections; the default does nothing."""

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_WORD = re.compile(r"[A-Za-z0-9]+")


def query_terms(query: str) -> list[str]:
    """The plain alphanumeric words of a query: safe to hand to any full-text engine."""
    return _WORD.findall(query)


def sql_string(value: str) -> str:
    """A single-quoted SQL string literal (for engines whose filters take text, like LanceDB)."""
    return "'" + value.replace("'", "''") + "'"

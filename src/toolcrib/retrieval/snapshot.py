"""``Snapshot``: one committed version of an index, memory-mapped for queries.

LanceDB stays the store of record (versioned, atomic writes and deletes). Its query path costs, at
SciFact size (10k chunks, two cores), ~5 ms for the two searches and ~3.5 ms more to read ten rows
back; a snapshot answers the same hybrid query in well under a millisecond of index work. It is
written beside each commit from the committed rows and never changed afterwards, so readers need no
lock and every process maps the same pages:

- ``vectors.npy``: the unit-length vectors, row for row (dense search is an exact dot product);
- ``rows.arrow``: the chunks' text and metadata (Arrow IPC, read zero-copy, only the rows returned);
- ``postings-*.npy`` and ``terms.json``: BM25 postings per stemmed term, each weight precomputed;
- ``labels.json`` and ``label_ids.npy``: the distinct access lists and each row's.

The access filter is applied inside each search, before ranking: a row the reader may not read is
never a candidate, so it cannot crowd out one they may.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from toolcrib.errors import ConfigError
from toolcrib.retrieval.documents import readable_by

BM25_K1 = 1.2
BM25_B = 0.75
ROW_COLUMNS = ["uid", "doc_id", "chunk_id", "text", "context", "section", "page", "title", "version",
               "effective_date", "family", "source_path", "content_hash", "access", "trusted"]
_FORMAT = 1
_WORD = re.compile(r"[a-z0-9]+")
# English function words: they match everything and rank nothing (the list full-text engines use)
_STOP = frozenset(["a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
                   "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
                   "they", "this", "to", "was", "will", "with"])


@lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def text_terms(text: str) -> list[str]:
    """The BM25 terms of a text: lower-cased words, function words dropped, Snowball-stemmed."""
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOP and len(w) <= 40]
    return list(_stemmer().stemWords(words))


class Snapshot:
    """A read-only, memory-mapped view of one committed index version (see the module docstring)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        try:
            import pyarrow as pa

            meta = json.loads((folder / "snapshot.json").read_text())
            if meta.get("format") != _FORMAT:
                raise ValueError(f"snapshot format {meta.get('format')}")
            self.rows = pa.ipc.open_file(pa.memory_map(str(folder / "rows.arrow"))).read_all()
            self.vectors = np.load(folder / "vectors.npy", mmap_mode="r")
            self.label_ids = np.load(folder / "label_ids.npy", mmap_mode="r")
            self.indptr = np.load(folder / "postings-indptr.npy", mmap_mode="r")
            self.posting_rows = np.load(folder / "postings-rows.npy", mmap_mode="r")
            self.posting_weights = np.load(folder / "postings-weights.npy", mmap_mode="r")
            self.labels: list[list[str]] = json.loads((folder / "labels.json").read_text())
            self.terms: dict[str, int] = {t: i for i, t in enumerate(json.loads((folder / "terms.json").read_text()))}
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"the index's query snapshot is damaged ({exc}); rebuild with "
                              "`toolcrib ingest --reindex`", file=str(folder)) from None
        self.size = len(self.label_ids)
        self._masks: dict[tuple[str, ...], tuple[np.ndarray, list[tuple[int, int]]]] = {}

    # -- writing --------------------------------------------------------------------------------------

    @classmethod
    def write(cls, folder: Path, table: Any) -> None:
        """Write a snapshot of ``table`` (an Arrow table of ``ROW_COLUMNS``, ``search_text`` and
        ``vector``) into ``folder``, every file flushed to disk before this returns."""
        import pyarrow as pa

        folder.mkdir(parents=True)
        labels: dict[tuple[str, ...], int] = {}
        label_of = np.array([labels.setdefault(tuple(sorted(a)), len(labels))
                             for a in table["access"].to_pylist()], dtype=np.int32)
        # rows of one access list are contiguous, so a dense search reads only the readable spans
        order = np.argsort(label_of, kind="stable")
        table = table.take(order)
        n, dim = table.num_rows, table.schema.field("vector").type.list_size
        vectors = table["vector"].combine_chunks().flatten().to_numpy().reshape(n, dim).astype(np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors /= np.where(norms > 0, norms, 1.0)
        terms, indptr, posting_rows, weights = _postings(table["search_text"].to_pylist())
        _save(folder / "vectors.npy", vectors)
        _save(folder / "label_ids.npy", label_of[order])
        _save(folder / "postings-indptr.npy", indptr)
        _save(folder / "postings-rows.npy", posting_rows)
        _save(folder / "postings-weights.npy", weights)
        _write_text(folder / "labels.json", json.dumps([list(k) for k in labels]))
        _write_text(folder / "terms.json", json.dumps(terms))
        rows = table.select(ROW_COLUMNS).combine_chunks()  # one batch: a take reads one array per column
        with pa.OSFile(str(folder / "rows.arrow"), "wb") as sink, pa.ipc.new_file(sink, rows.schema) as writer:
            writer.write_table(rows)
        _fsync(folder / "rows.arrow")
        _write_text(folder / "snapshot.json", json.dumps({"format": _FORMAT, "rows": n, "dim": dim}))
        _fsync(folder)

    # -- reading --------------------------------------------------------------------------------------

    def readable(self, groups: Sequence[str]) -> np.ndarray:
        """A boolean per row: may ``groups`` read it."""
        return self._access(groups)[0]

    def _access(self, groups: Sequence[str]) -> tuple[np.ndarray, list[tuple[int, int]]]:
        """The readable rows, as a mask and as contiguous spans (rows are grouped by access list)."""
        key = tuple(groups)
        found = self._masks.get(key)
        if found is None:
            ok = np.array([readable_by(label, groups) for label in self.labels] or [False], dtype=bool)
            mask = ok[self.label_ids] if self.size else np.zeros(0, dtype=bool)
            edges = np.flatnonzero(np.diff(np.concatenate(([False], mask, [False])).astype(np.int8)))
            found = mask, [(int(a), int(b)) for a, b in zip(edges[::2], edges[1::2], strict=True)]
            if len(self._masks) > 256:
                self._masks.clear()
            self._masks[key] = found
        return found

    def dense(self, vector: np.ndarray, groups: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """The ``limit`` readable rows nearest to ``vector`` by cosine similarity, best first."""
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(query))
        spans = self._access(groups)[1]
        if not spans or norm == 0.0:
            return []
        query = query / norm
        best: list[tuple[int, float]] = []
        for start, end in spans:
            best.extend((start + row, score) for row, score in _top(self.vectors[start:end] @ query, limit))
        return sorted(best, key=lambda pair: -pair[1])[:limit]

    def text(self, query: str, groups: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """The ``limit`` readable rows with the best BM25 score for ``query``'s terms, best first."""
        ids = [self.terms[t] for t in dict.fromkeys(text_terms(query)) if t in self.terms]
        if not ids or not self.size:
            return []
        spans = [(int(self.indptr[i]), int(self.indptr[i + 1])) for i in ids]
        rows = np.concatenate([self.posting_rows[a:b] for a, b in spans])
        weights = np.concatenate([self.posting_weights[a:b] for a, b in spans])
        scores = np.bincount(rows, weights=weights, minlength=self.size)
        scores[~self.readable(groups)] = 0.0
        return [(row, score) for row, score in _top(scores, limit) if score > 0.0]

    def uids(self, rows: Sequence[int]) -> list[str]:
        """The citation ids of these rows."""
        return list(self.rows["uid"].take(np.asarray(rows, dtype=np.int64)).to_pylist())

    def containing(self, term: str, groups: Sequence[str], limit: int) -> list[int]:
        """Readable rows whose title, section or text contains ``term`` (case-insensitive) where each
        of its words does: found through the postings of its terms, then checked in the text."""
        ids = [self.terms.get(t, -1) for t in dict.fromkeys(text_terms(term))]
        if not ids or -1 in ids or not self.size:  # a word no row holds
            return []
        rows = np.flatnonzero(self.readable(groups))
        for i in ids:
            rows = np.intersect1d(rows, self.posting_rows[int(self.indptr[i]):int(self.indptr[i + 1])],
                                  assume_unique=True)
        needle, out = term.lower(), []
        found = self.take(rows.tolist()).select(["title", "section", "text"]).to_pydict()
        for row, title, section, text in zip(rows.tolist(), found["title"], found["section"], found["text"],
                                             strict=True):
            if needle in f"{title}\n{section}\n{text}".lower():
                out.append(row)
                if len(out) == limit:
                    break
        return out

    def count(self, groups: Sequence[str]) -> int:
        return int(self.readable(groups).sum())

    def take(self, rows: Sequence[int]) -> Any:
        """The Arrow rows (``ROW_COLUMNS``) at these positions."""
        return self.rows.take(np.asarray(rows, dtype=np.int64))


def _top(scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
    if limit <= 0:
        return []
    if limit < len(scores):
        part = np.argpartition(-scores, limit - 1)[:limit]
    else:
        part = np.arange(len(scores))
    part = part[np.isfinite(scores[part])]
    order = part[np.argsort(-scores[part], kind="stable")]
    return list(zip(order.tolist(), scores[order].astype(np.float64).tolist(), strict=True))


def _postings(texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """BM25 postings: for each term (sorted by id), the rows holding it and its score in each."""
    vocab: dict[str, int] = {}
    term_ids: list[int] = []
    lengths = np.zeros(len(texts), dtype=np.float64)
    for row, text in enumerate(texts):
        words = text_terms(text)
        lengths[row] = len(words)
        term_ids.extend(vocab.setdefault(w, len(vocab)) for w in words)
    token_terms = np.asarray(term_ids, dtype=np.int64)
    token_rows = np.repeat(np.arange(len(texts), dtype=np.int64), lengths.astype(np.int64))
    pairs, tf = np.unique(token_terms * max(len(texts), 1) + token_rows, return_counts=True)
    terms_of, rows = np.divmod(pairs, max(len(texts), 1))
    df = np.bincount(terms_of, minlength=len(vocab)).astype(np.float64)
    idf = np.log(1.0 + (len(texts) - df + 0.5) / (df + 0.5))
    average = float(lengths.mean()) if len(texts) else 0.0
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * lengths[rows] / (average or 1.0))
    weights = idf[terms_of] * tf * (BM25_K1 + 1.0) / (tf + norm)
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms_of, minlength=len(vocab)), out=indptr[1:])
    return list(vocab), indptr, rows.astype(np.int32), weights.astype(np.float32)


def _save(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:
        np.save(handle, np.ascontiguousarray(array))
        handle.flush()
        os.fsync(handle.fileno())


def _write_text(path: Path, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

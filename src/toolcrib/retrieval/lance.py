"""``LanceIndex``: the embedded default, LanceDB on local disk (vectors, native full text, metadata).

Atomicity: LanceDB versions every write. The index keeps its own commit record,
``toolcrib-index.json``, naming the table version that is the last complete state; it is replaced
atomically (write, fsync, rename) only after every write of an ``apply`` succeeded. Readers check
out that version; a writer that finds later, uncommitted versions (a crash mid-way) restores the
committed one first. The committed version is also tagged so that compaction never deletes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import uuid
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from toolcrib.errors import ConfigError, MissingDependency
from toolcrib.retrieval.documents import Chunk, DocumentMeta, allowed_groups
from toolcrib.retrieval.embedders import Vectors
from toolcrib.retrieval.index import Hit, Index, IndexChanges, IndexSettings, Ranked, query_terms, sql_string

_TABLE = "chunks"
_COMMIT_FILE = "toolcrib-index.json"
_TAG = "toolcrib-committed"
_META_COLUMNS = ["doc_id", "chunk_id", "text", "context", "section", "page", "title", "version",
                 "effective_date", "family", "source_path", "content_hash", "access", "trusted"]


def _lancedb() -> Any:
    try:
        import lancedb
    except ImportError:
        raise MissingDependency("LanceIndex (lancedb, pyarrow)", "retrieval") from None
    return lancedb


class LanceIndex(Index):
    """Chunks in a LanceDB table under ``path``; ACL filters are prefilters inside each query.

    ``ann_min_rows``: from this many chunks on, an IVF_HNSW_SQ vector index is built; below it, an
    IVF_FLAT index of one partition, whose search is exact. ``nprobes`` trades recall for speed with
    the IVF_HNSW_SQ index.
    """

    def __init__(self, path: str | Path, *, ann_min_rows: int = 50_000, nprobes: int = 20,
                 hnsw_m: int = 16, hnsw_ef_construction: int = 150) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.ann_min_rows = ann_min_rows
        self.nprobes = nprobes
        self.hnsw_m = hnsw_m
        self.hnsw_ef_construction = hnsw_ef_construction
        self._db: Any = None
        self._table: Any = None
        self._async_db: Any = None
        self._async_table: Any = None
        self._stamp: tuple[int, int] | None = None
        self._commit: dict[str, Any] | None = None

    # -- commit record ------------------------------------------------------------------------------

    @property
    def _commit_path(self) -> Path:
        return self.path / _COMMIT_FILE

    def _read_commit(self) -> dict[str, Any] | None:
        try:
            raw = self._commit_path.read_text()
        except FileNotFoundError:
            return None
        try:
            data: dict[str, Any] = json.loads(raw)
            int(data["table_version"]), str(data["table"])
            return data
        except (ValueError, KeyError, TypeError):
            raise ConfigError("the index's commit record is damaged; rebuild with "
                              "`toolcrib ingest --reindex`", file=str(self._commit_path)) from None

    def _write_commit(self, table: str, version: int, settings: IndexSettings) -> None:
        tmp = self._commit_path.with_suffix(".tmp")
        with open(tmp, "w") as handle:
            json.dump({"format": 1, "table": table, "table_version": version, "settings": settings.to_dict()}, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self._commit_path)
        with contextlib.suppress(OSError):
            dir_fd = os.open(self.path, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    @contextlib.contextmanager
    def _writer_lock(self) -> Iterator[None]:
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".writer.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _connect(self) -> Any:
        if self._db is None:
            self.path.mkdir(parents=True, exist_ok=True)
            self._db = _lancedb().connect(str(self.path))
        return self._db

    def _reader(self) -> Any | None:
        """The table checked out at the committed version (reloaded when another process commits)."""
        try:
            stat = self._commit_path.stat()
        except FileNotFoundError:
            self._table, self._stamp, self._commit = None, None, None
            return None
        stamp = (stat.st_mtime_ns, stat.st_ino)
        if stamp != self._stamp or self._table is None:
            commit = self._read_commit()
            if commit is None:
                return None
            table = self._connect().open_table(str(commit["table"]))
            table.checkout(int(commit["table_version"]))
            self._async_table = _loop().run(self._open_async(str(commit["table"]), int(commit["table_version"])))
            self._table, self._stamp, self._commit = table, stamp, commit
        return self._table

    async def _open_async(self, name: str, version: int) -> Any:
        if self._async_db is None:
            self._async_db = await _lancedb().connect_async(str(self.path))
        handle = await self._async_db.open_table(name)
        await handle.checkout(version)
        return handle

    # -- Index -----------------------------------------------------------------------------------------

    def settings(self) -> IndexSettings | None:
        commit = self._read_commit()
        return IndexSettings.from_dict(commit["settings"]) if commit else None

    def documents(self) -> dict[str, DocumentMeta]:
        table = self._reader()
        if table is None:
            return {}
        columns = ["doc_id", "title", "source_path", "content_hash", "access", "version",
                   "effective_date", "family", "trusted"]
        rows = table.search().select(columns).limit(None).to_arrow().to_pylist()
        out: dict[str, DocumentMeta] = {}
        for row in rows:
            if row["doc_id"] not in out:
                out[row["doc_id"]] = DocumentMeta(
                    doc_id=row["doc_id"], title=row["title"], source_path=row["source_path"],
                    content_hash=row["content_hash"], access=tuple(row["access"]), version=row["version"],
                    effective_date=row["effective_date"], family=row["family"], trusted=row["trusted"])
        return out

    def apply(self, changes: IndexChanges) -> None:
        import pyarrow as pa

        with self._writer_lock():
            commit = self._read_commit()
            if commit is not None and not changes.clear:
                IndexSettings.from_dict(commit["settings"]).require_same(changes.settings, self.location)
            db = self._connect()
            dim = changes.settings.dim
            if commit is None or changes.clear:
                # nothing committed yet, or a full rebuild: a fresh table under a new name; the old
                # one stays the committed state until the new commit record names the new table
                name = f"{_TABLE}_{uuid.uuid4().hex[:12]}"
                table = db.create_table(name, schema=_schema(pa, dim))
            else:
                name = str(commit["table"])
                table = db.open_table(name)
                committed = int(commit["table_version"])
                if table.version != committed:  # a writer died after writing, before committing
                    table.checkout(committed)
                    table.restore()
            gone = list(dict.fromkeys([*changes.replace, *changes.delete]))
            for start in range(0, len(gone), 500):
                table.delete("doc_id IN (" + ", ".join(sql_string(d) for d in gone[start:start + 500]) + ")")
            if changes.chunks:
                table.add(_rows(pa, changes.chunks, changes.vectors, dim))
            self._build_indices(table)
            self._write_commit(name, table.version, changes.settings)
            self._table, self._stamp = None, None
            for other in _table_names(db):  # replaced tables, and those of writers that died
                if other != name and other.startswith(_TABLE):
                    db.drop_table(other)

    def _build_indices(self, table: Any) -> None:
        rows = table.count_rows()
        if rows == 0:
            return
        indices = list(table.list_indices())
        names = {index.index_type for index in indices}
        from lancedb.index import FTS, IvfFlat, IvfHnswSq, LabelList

        if "LabelList" not in names:  # makes the ACL prefilter an index lookup, not a scan
            table.create_index("access", config=LabelList(), replace=True)
        if "FTS" not in names:
            table.create_index("search_text", config=FTS(stem=True, remove_stop_words=True), replace=True)
        vector = next((index for index in indices if list(index.columns) == ["vector"]), None)
        if rows >= self.ann_min_rows:
            if vector is None or vector.index_type == "IvfFlat":
                table.create_index("vector", config=IvfHnswSq(distance_type="cosine", m=self.hnsw_m,
                                                              ef_construction=self.hnsw_ef_construction),
                                   replace=True)
        elif vector is None or (vector.index_type == "IvfFlat" and vector.num_unindexed_rows):
            # Exact search all the same (one partition, every vector compared), but the vectors stay
            # decoded in LanceDB's index cache: a search without an index reads and decodes the whole
            # vector column again for every query (10k chunks: ~15 MB per query).
            table.create_index("vector", config=IvfFlat(distance_type="cosine", num_partitions=1), replace=True)

    def compact(self) -> None:
        """Merge small files and fold new rows into the indices (run after many small ingests)."""
        with self._writer_lock():
            commit = self._read_commit()
            if commit is None:
                return
            table = self._connect().open_table(str(commit["table"]))
            committed = int(commit["table_version"])
            if table.version != committed:
                table.checkout(committed)
                table.restore()
            tags = table.tags.list()
            if _TAG in tags:
                table.tags.update(_TAG, table.version)
            else:
                table.tags.create(_TAG, table.version)
            table.optimize(cleanup_older_than=timedelta(days=7))
            self._write_commit(str(commit["table"]), table.version, IndexSettings.from_dict(commit["settings"]))
            self._table, self._stamp = None, None

    def _acl(self, groups: Sequence[str]) -> str:
        return "array_has_any(access, [" + ", ".join(sql_string(g) for g in allowed_groups(groups)) + "])"

    def search_dense(self, vector: Vectors, groups: Sequence[str], limit: int) -> list[Hit]:
        return self._hits(self.rank_hybrid(vector, None, groups, limit)[0], groups)

    def search_text(self, query: str, groups: Sequence[str], limit: int) -> list[Hit]:
        return self._hits(self.rank_hybrid(None, query, groups, limit)[1], groups)

    def rank_hybrid(self, vector: Vectors | None, query: str | None, groups: Sequence[str],
                    limit: int) -> tuple[list[Ranked], list[Ranked]]:
        # both searches in one trip to LanceDB's event loop, run concurrently: the synchronous API
        # costs a dozen thread hand-offs per search (schema look-ups, the builder, the stream)
        table = self._reader()
        if table is None:
            return [], []
        handle = self._async_table
        acl = self._acl(groups)
        terms = query_terms(query or "")

        async def dense() -> Any:
            if vector is None:
                return None
            return await (handle.query().nearest_to(np.asarray(vector, dtype=np.float32)).column("vector")
                          .distance_type("cosine").nprobes(self.nprobes).where(acl)
                          .select(["uid", "_distance"]).with_row_id().limit(limit).to_arrow())

        async def text() -> Any:
            if not terms:
                return None
            return await (handle.query().nearest_to_text(" ".join(terms), columns="search_text").where(acl)
                          .select(["uid", "_score"]).with_row_id().limit(limit).to_arrow())

        async def both() -> tuple[Any, Any]:
            by_vector, by_text = await asyncio.gather(dense(), text())
            return by_vector, by_text

        by_vector, by_text = _loop().run(both())
        ranked_dense: list[Ranked] = []
        ranked_text: list[Ranked] = []
        if by_vector is not None:
            similarity = 1.0 - by_vector["_distance"].to_numpy().astype(np.float64)
            ranked_dense = [Ranked(uid, score, (handle, row)) for uid, score, row in
                            zip(by_vector["uid"].to_pylist(), similarity.tolist(), by_vector["_rowid"].to_pylist(),
                                strict=True)]
        if by_text is not None:
            ranked_text = [Ranked(uid, score, (handle, row)) for uid, score, row in
                           zip(by_text["uid"].to_pylist(), by_text["_score"].to_pylist(),
                               by_text["_rowid"].to_pylist(), strict=True)]
        return ranked_dense, ranked_text

    def chunks(self, ranked: Sequence[Ranked], groups: Sequence[str]) -> dict[str, Chunk]:
        # Reads back by row id only rows that an access-filtered search of the same table version
        # returned (``ref`` holds that search's table handle, checked out at its version).
        wanted: dict[int, tuple[Any, dict[int, str]]] = {}
        for result in ranked:
            handle, row = result.ref
            wanted.setdefault(id(handle), (handle, {}))[1][row] = result.citation
        out: dict[str, Chunk] = {}
        for handle, rows in wanted.values():
            found = _loop().run(handle.take_row_ids(list(rows)).select(_META_COLUMNS).to_arrow())
            citations = set(rows.values())
            for chunk in _chunks(found):
                if chunk.citation in citations:
                    out[chunk.citation] = chunk
        return out

    def _hits(self, ranked: list[Ranked], groups: Sequence[str]) -> list[Hit]:
        chunks = self.chunks(ranked, groups)
        return [Hit(chunks[r.citation], r.score) for r in ranked if r.citation in chunks]

    def search_exact(self, term: str, groups: Sequence[str], limit: int) -> list[Hit]:
        table = self._reader()
        if table is None or not term:
            return []
        # "_" stays a one-character wildcard: a superset the retriever narrows with an exact regex
        pattern = "%" + term.lower().replace("\\", "").replace("%", "") + "%"
        where = f"({self._acl(groups)}) AND lower(search_text) LIKE {sql_string(pattern)}"
        return [Hit(chunk, 1.0) for chunk in _chunks(table.search().where(where).select(_META_COLUMNS)
                                                          .limit(limit).to_arrow())]

    def count(self, groups: Sequence[str]) -> int:
        table = self._reader()
        return 0 if table is None else int(table.count_rows(self._acl(groups)))

    def close(self) -> None:
        self._db, self._table, self._stamp = None, None, None
        self._async_db, self._async_table = None, None


def _loop() -> Any:
    """LanceDB's own background event loop, on which its synchronous API runs its async one."""
    from lancedb.background_loop import LOOP

    return LOOP


def _table_names(db: Any) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        page = db.list_tables(page_token=token)
        names.extend(page.tables)
        token = page.page_token
        if not token:
            return names


def _schema(pa: Any, dim: int) -> Any:
    text = pa.string()
    return pa.schema([
        ("uid", text), ("doc_id", text), ("chunk_id", text), ("text", text), ("search_text", text),
        ("context", text), ("section", text), ("page", pa.int32()), ("title", text), ("version", text),
        ("effective_date", text), ("family", text), ("source_path", text), ("content_hash", text),
        ("access", pa.list_(text)), ("trusted", pa.bool_()), ("vector", pa.list_(pa.float32(), dim)),
    ])


def _rows(pa: Any, chunks: list[Chunk], vectors: Vectors, dim: int) -> Any:
    flat = np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1)
    columns: dict[str, Any] = {
        "uid": [c.citation for c in chunks],
        "doc_id": [c.meta.doc_id for c in chunks],
        "chunk_id": [c.chunk_id for c in chunks],
        "text": [c.text for c in chunks],
        "search_text": [c.search_text for c in chunks],
        "context": [c.context for c in chunks],
        "section": [c.section for c in chunks],
        "page": [c.page for c in chunks],
        "title": [c.meta.title for c in chunks],
        "version": [c.meta.version for c in chunks],
        "effective_date": [c.meta.effective_date for c in chunks],
        "family": [c.meta.family for c in chunks],
        "source_path": [c.meta.source_path for c in chunks],
        "content_hash": [c.meta.content_hash for c in chunks],
        "access": [list(c.meta.access) for c in chunks],
        "trusted": [c.meta.trusted for c in chunks],
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(flat, type=pa.float32()), dim),
    }
    return pa.table(columns, schema=_schema(pa, dim))


def _chunks(found: Any) -> list[Chunk]:
    """Chunks from an Arrow table of ``_META_COLUMNS``, converted column by column (not row dicts)."""
    cols = {name: found[name].to_pylist() for name in _META_COLUMNS}
    return [Chunk(meta=DocumentMeta(doc_id=doc_id, title=title, source_path=source_path, content_hash=content_hash,
                                    access=tuple(access), version=version, effective_date=effective_date,
                                    family=family, trusted=trusted),
                  chunk_id=chunk_id, text=text, section=section, page=page, context=context)
            for (doc_id, chunk_id, text, context, section, page, title, version, effective_date, family,
                 source_path, content_hash, access, trusted)
            in zip(*(cols[name] for name in _META_COLUMNS), strict=True)]

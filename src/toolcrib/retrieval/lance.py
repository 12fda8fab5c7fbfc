"""``LanceIndex``: the embedded default, LanceDB on local disk (vectors, native full text, metadata).

Atomicity: LanceDB versions every write. The index keeps its own commit record,
``toolcrib-index.json``, naming the table version that is the last complete state; it is replaced
atomically (write, fsync, rename) only after every write of an ``apply`` succeeded. Readers check
out that version; a writer that finds later, uncommitted versions (a crash mid-way) restores the
committed one first. The committed version is also tagged so that compaction never deletes it.
"""

from __future__ import annotations

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
from toolcrib.retrieval.index import Hit, Index, IndexChanges, IndexSettings, query_terms, sql_string

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

    ``ann_min_rows``: from this many chunks on, an IVF_HNSW_SQ vector index is built (below it,
    exact search is both exact and fast enough). ``nprobes`` trades recall for speed with that index.
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
            self._table, self._stamp, self._commit = table, stamp, commit
        return self._table

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
        names = {index.index_type for index in table.list_indices()}
        from lancedb.index import FTS, IvfHnswSq, LabelList

        if "LabelList" not in names:  # makes the ACL prefilter an index lookup, not a scan
            table.create_index("access", config=LabelList(), replace=True)
        if "FTS" not in names:
            table.create_index("search_text", config=FTS(stem=True, remove_stop_words=True), replace=True)
        if rows >= self.ann_min_rows and not any(n.startswith("Ivf") for n in names):
            table.create_index("vector", config=IvfHnswSq(distance_type="cosine", m=self.hnsw_m,
                                                          ef_construction=self.hnsw_ef_construction))

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
        table = self._reader()
        if table is None:
            return []
        query = (table.search(np.asarray(vector, dtype=np.float32), query_type="vector",
                              vector_column_name="vector")
                 .distance_type("cosine").where(self._acl(groups), prefilter=True)
                 .nprobes(self.nprobes).select([*_META_COLUMNS, "_distance"]).limit(limit))
        return [Hit(_chunk(row), 1.0 - float(row["_distance"])) for row in query.to_arrow().to_pylist()]

    def search_text(self, query: str, groups: Sequence[str], limit: int) -> list[Hit]:
        table = self._reader()
        terms = query_terms(query)
        if table is None or not terms:
            return []
        search = (table.search(" ".join(terms), query_type="fts", fts_columns="search_text")
                  .where(self._acl(groups), prefilter=True).select([*_META_COLUMNS, "_score"]).limit(limit))
        return [Hit(_chunk(row), float(row["_score"])) for row in search.to_arrow().to_pylist()]

    def search_exact(self, term: str, groups: Sequence[str], limit: int) -> list[Hit]:
        table = self._reader()
        if table is None or not term:
            return []
        # "_" stays a one-character wildcard: a superset the retriever narrows with an exact regex
        pattern = "%" + term.lower().replace("\\", "").replace("%", "") + "%"
        where = f"({self._acl(groups)}) AND lower(search_text) LIKE {sql_string(pattern)}"
        rows = table.search().where(where).select(_META_COLUMNS).limit(limit).to_arrow().to_pylist()
        return [Hit(_chunk(row), 1.0) for row in rows]

    def count(self, groups: Sequence[str]) -> int:
        table = self._reader()
        return 0 if table is None else int(table.count_rows(self._acl(groups)))

    def close(self) -> None:
        self._db, self._table, self._stamp = None, None, None


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


def _chunk(row: dict[str, Any]) -> Chunk:
    meta = DocumentMeta(doc_id=row["doc_id"], title=row["title"], source_path=row["source_path"],
                        content_hash=row["content_hash"], access=tuple(row["access"]),
                        version=row["version"], effective_date=row["effective_date"], family=row["family"],
                        trusted=row["trusted"])
    return Chunk(meta=meta, chunk_id=row["chunk_id"], text=row["text"], section=row["section"],
                 page=row["page"], context=row["context"])

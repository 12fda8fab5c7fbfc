"""``PgVectorIndex``: PostgreSQL + pgvector (HNSW) with tsvector full text, for scale-out deployments.

Each ``apply`` is one transaction. Filtered HNSW search uses ``hnsw.iterative_scan = relaxed_order``
(without it, a selective ACL filter silently returns too few rows) and re-sorts the results. Full text
and the ACL share one GIN index (``tsv, access``), so a text search reads only the rows the reader may
see. Every query is planned for its own parameters: how many rows an ACL admits differs by reader.
A search is one message to the server, its ``SET LOCAL`` settings included. A hybrid search returns
only ids and scores, walking the graph on a second connection while the first searches the words;
the retriever then reads back just the rows it needs (``chunks``), still filtered by the reader's ACL.
With ``parallel=False`` it is one statement on one connection instead: both halves, their fusion and
the rows of the best results (``_FUSED``).
Needs the ``postgres`` extra (psycopg).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from toolcrib.errors import ConfigError, MissingDependency, OperatorError
from toolcrib.retrieval.documents import Chunk, DocumentMeta, allowed_groups
from toolcrib.retrieval.embedders import Vectors
from toolcrib.retrieval.index import Hit, Index, IndexChanges, IndexSettings, Ranked, query_terms

_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,40}$")
_COLUMNS = ("doc_id, chunk_id, text, context, section, page, title, version, effective_date, family, "
            "source_path, content_hash, access, trusted")


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        raise MissingDependency("PgVectorIndex (psycopg)", "postgres") from None
    return psycopg


def _vector_literal(vector: Vectors) -> str:
    # formatting Python floats (the float32 values, exactly) takes half the time of numpy scalars
    return "[" + ",".join(map("{:.7g}".format, np.asarray(vector, dtype=np.float32).ravel().tolist())) + "]"


_HNSW = "CREATE INDEX IF NOT EXISTS {n}_chunks_hnsw ON {n}_chunks USING hnsw (embedding vector_cosine_ops)"
# the words and the ACL in one GIN index: one scan intersects them, skipping through the ACL's long
# posting lists; separate indexes made PostgreSQL build a bitmap of every row a broad ACL admits
# (half the table, ~4 ms at 100k rows) to AND it with a few hundred word matches
_TEXT = "CREATE INDEX IF NOT EXISTS {n}_chunks_tsv_access ON {n}_chunks USING gin (tsv, access)"
_RANK = "ts_rank_cd(tsv, q)"  # any term may match (like BM25), ranked by cover density
_WORDS = "to_tsquery('english', %s)"
# A hybrid search as one statement: both halves (each filtered by the reader's ACL inside its index scan),
# reciprocal rank fusion (k = 60, the retriever's default), and the rows of the best ``read`` fused results,
# read by primary key: the retriever's top passages come back in the same round trip, its other candidates
# as ids and scores only (a key of NULL for the others: the planner would otherwise look each one up).
_FUSED = """WITH dense AS MATERIALIZED (
    SELECT uid, embedding <=> %(vector)s::vector AS distance FROM {n}_chunks
    WHERE access && %(groups)s ORDER BY distance LIMIT %(limit)s),
words AS MATERIALIZED (
    SELECT uid, ts_rank_cd(tsv, q) AS rank FROM {n}_chunks, to_tsquery('english', %(words)s) AS q
    WHERE tsv @@ q AND access && %(groups)s ORDER BY rank DESC LIMIT %(limit)s),
ranked AS (
    SELECT uid, distance, NULL::real AS rank, row_number() OVER (ORDER BY distance) AS dense_at,
           NULL::bigint AS words_at FROM dense
    UNION ALL
    SELECT uid, NULL, rank, NULL, row_number() OVER (ORDER BY rank DESC) FROM words),
fused AS (
    SELECT uid, min(distance) AS distance, max(rank) AS rank, min(dense_at) AS dense_at, min(words_at) AS words_at,
           row_number() OVER (ORDER BY coalesce(1.0 / (60 + min(dense_at)), 0)
                                       + coalesce(1.0 / (60 + min(words_at)), 0) DESC) AS fused_at
    FROM ranked GROUP BY uid)
SELECT f.uid, f.distance, f.rank, f.dense_at, f.words_at, c.* FROM fused AS f
LEFT JOIN LATERAL (SELECT {columns} FROM {n}_chunks
                   WHERE uid = CASE WHEN f.fused_at <= %(read)s THEN f.uid END) AS c ON true"""
# a load of at least this many rows, and more than the table holds, rebuilds the HNSW graph after the
# rows are in (pgvector's advice) instead of inserting each into it; searches wait for that commit
_BULK_ROWS = 2000


class PgVectorIndex(Index):
    """Chunks in table ``<name>_chunks`` of the database at ``dsn``; settings in ``<name>_meta``.

    ``ef_search`` sets ``hnsw.ef_search`` for each query (recall against speed). ``parallel``: a hybrid
    search walks the HNSW graph on a second connection while the first searches the words (the walk is
    most of the time; at 100k chunks both together took ~6.5 ms, each at once ~4 ms); else one statement
    on one connection (half the connections, one round trip, the two halves one after the other). On a
    busy 2-core machine, alternating the two on 100k chunks (hybrid with an ACL, top 10 of 50 per list):
    parallel p50 10.5 ms, p95 16.0 ms; one statement 12.5 ms, 19.5 ms.
    """

    def __init__(self, dsn: str, *, name: str = "toolcrib", ef_search: int = 100,
                 connect_timeout_s: int = 10, parallel: bool = True) -> None:
        if not _NAME.match(name):
            raise ConfigError("index name must be lower-case letters, digits and _", key="name")
        self.dsn = dsn
        self.name = name
        self.ef_search = ef_search
        self.connect_timeout_s = connect_timeout_s
        self.location = f"postgresql table {name}_chunks"
        self.parallel = parallel
        self._conn: Any = None
        self._side: Any = None  # the second connection, for the dense half of a parallel hybrid search
        self._walker: ThreadPoolExecutor | None = None

    def _connection(self, side: bool = False) -> Any:
        if side:
            if self._side is None or self._side.closed:
                self._side = self._connect()
            return self._side
        if self._conn is None or self._conn.closed:
            self._conn = self._connect()
        return self._conn

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            # prepare_threshold=None: psycopg would otherwise prepare a query run five times, and the
            # server then reuses one generic plan that cannot know how many rows this reader's ACL
            # admits (a text search at 100k rows: 12-21 ms, against 4 ms planned for its parameters)
            return psycopg.connect(self.dsn, connect_timeout=self.connect_timeout_s, autocommit=True,
                                   prepare_threshold=None)
        except psycopg.Error as exc:
            raise OperatorError(f"cannot connect to the PostgreSQL index ({type(exc).__name__}); "
                                "check the index DSN setting") from None

    def _run(self, work: Any) -> Any:
        """Run ``work(cursor)`` in one transaction; database errors become OperatorError."""
        psycopg = _psycopg()
        conn = self._connection()
        try:
            with conn.transaction(), conn.cursor() as cur:
                return work(cur)
        except psycopg.Error as exc:
            raise _failed(exc) from exc

    def _query(self, sql: str, params: Sequence[Any] | Mapping[str, Any], side: bool = False,
               walk: int | None = None) -> list[Any]:
        """The rows of ``sql``. ``walk``: the statement is a filtered HNSW search for that many rows, whose
        ``SET LOCAL`` settings are sent with it as one message (bound here: the statements run as one
        transaction, in one round trip; a pipeline of a settings statement and the search, bound by the
        server, had a tail of milliseconds on a busy machine). A table not created yet holds no rows;
        database errors become OperatorError."""
        psycopg = _psycopg()
        if walk is not None:
            sql = ("SET LOCAL hnsw.iterative_scan = relaxed_order; "
                   f"SET LOCAL hnsw.ef_search = {max(int(self.ef_search), int(walk))}; {sql}")
        try:
            with psycopg.ClientCursor(self._connection(side)) as cur:
                cur.execute(sql, params)
                while cur.nextset():
                    pass
                return list(cur.fetchall())
        except psycopg.errors.UndefinedTable:
            return []
        except psycopg.Error as exc:
            raise _failed(exc) from exc

    def _exists(self, cur: Any) -> bool:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (f"{self.name}_meta",))
        return bool(cur.fetchone()[0])

    def _create(self, cur: Any, dim: int) -> None:
        n = self.name
        cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        cur.execute(f"CREATE TABLE IF NOT EXISTS {n}_meta (key text PRIMARY KEY, value jsonb NOT NULL)")
        cur.execute(f"""CREATE TABLE IF NOT EXISTS {n}_chunks (
            uid text PRIMARY KEY, doc_id text NOT NULL, chunk_id text NOT NULL, text text NOT NULL,
            search_text text NOT NULL, context text NOT NULL, section text NOT NULL, page integer,
            title text NOT NULL, version text NOT NULL, effective_date text NOT NULL, family text NOT NULL,
            source_path text NOT NULL, content_hash text NOT NULL, access text[] NOT NULL,
            trusted boolean NOT NULL DEFAULT true, embedding vector({dim}) NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', search_text)) STORED)""")
        # the words' tsvector kept in the row (MAIN: out of it only if the row cannot fit otherwise): a text
        # search ranks every match, and a tsvector moved to the TOAST table, as the default lets it be once
        # the vector has gone there, costs each match a TOAST read (the words half at 100k chunks: 3.6 ms ->
        # 2.0 ms). Rows written before this keep their layout until written again (``--reindex``).
        cur.execute("SELECT attstorage FROM pg_attribute WHERE attrelid = %s::regclass AND attname = 'tsv'",
                    (f"{n}_chunks",))
        if cur.fetchone()[0] != "m":  # altered once: the change locks the table for its transaction
            cur.execute(f"ALTER TABLE {n}_chunks ALTER COLUMN tsv SET STORAGE MAIN")
        cur.execute(f"CREATE INDEX IF NOT EXISTS {n}_chunks_doc ON {n}_chunks (doc_id)")
        cur.execute(f"CREATE INDEX IF NOT EXISTS {n}_chunks_access ON {n}_chunks USING gin (access)")
        cur.execute(f"DROP INDEX IF EXISTS {n}_chunks_tsv")  # an older layout's words-only index
        cur.execute(_TEXT.format(n=n))
        cur.execute(_HNSW.format(n=n))

    def _rows(self, cur: Any) -> int:
        cur.execute(f"SELECT count(*) FROM {self.name}_chunks")
        return int(cur.fetchone()[0])

    def settings(self) -> IndexSettings | None:
        def work(cur: Any) -> IndexSettings | None:
            if not self._exists(cur):
                return None
            cur.execute(f"SELECT value FROM {self.name}_meta WHERE key = 'settings'")
            row = cur.fetchone()
            return IndexSettings.from_dict(row[0]) if row else None
        result: IndexSettings | None = self._run(work)
        return result

    def documents(self) -> dict[str, DocumentMeta]:
        def work(cur: Any) -> dict[str, DocumentMeta]:
            if not self._exists(cur):
                return {}
            cur.execute(f"SELECT DISTINCT ON (doc_id) doc_id, title, source_path, content_hash, access, "
                        f"version, effective_date, family, trusted FROM {self.name}_chunks ORDER BY doc_id")
            return {r[0]: DocumentMeta(doc_id=r[0], title=r[1], source_path=r[2], content_hash=r[3],
                                       access=tuple(r[4]), version=r[5], effective_date=r[6], family=r[7],
                                       trusted=r[8])
                    for r in cur.fetchall()}
        result: dict[str, DocumentMeta] = self._run(work)
        return result

    def apply(self, changes: IndexChanges) -> None:
        n = self.name

        def work(cur: Any) -> None:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"toolcrib-index:{n}",))
            if self._exists(cur) and not changes.clear:
                cur.execute(f"SELECT value FROM {n}_meta WHERE key = 'settings'")
                row = cur.fetchone()
                if row:
                    IndexSettings.from_dict(row[0]).require_same(changes.settings, self.location)
            if changes.clear:
                cur.execute(f"DROP TABLE IF EXISTS {n}_chunks")
                cur.execute(f"DROP TABLE IF EXISTS {n}_meta")
            self._create(cur, changes.settings.dim)
            gone = list(dict.fromkeys([*changes.replace, *changes.delete]))
            if gone:
                cur.execute(f"DELETE FROM {n}_chunks WHERE doc_id = ANY(%s)", (gone,))
            bulk = len(changes.chunks) >= _BULK_ROWS and len(changes.chunks) > self._rows(cur)
            if bulk:  # a graph built once over all rows: ~20x faster than growing it row by row (GIN too)
                cur.execute(f"DROP INDEX IF EXISTS {n}_chunks_hnsw")
                cur.execute(f"DROP INDEX IF EXISTS {n}_chunks_tsv_access")
            if changes.chunks:
                with cur.copy(f"COPY {n}_chunks (uid, doc_id, chunk_id, text, search_text, context, "
                              "section, page, title, version, effective_date, family, source_path, "
                              "content_hash, access, trusted, embedding) FROM STDIN") as copy:
                    for chunk, vector in zip(changes.chunks, changes.vectors, strict=True):
                        m = chunk.meta
                        copy.write_row((chunk.citation, m.doc_id, chunk.chunk_id, chunk.text,
                                        chunk.search_text, chunk.context, chunk.section, chunk.page,
                                        m.title, m.version, m.effective_date, m.family, m.source_path,
                                        m.content_hash, list(m.access), m.trusted, _vector_literal(vector)))
            if bulk:
                cur.execute("SET LOCAL maintenance_work_mem = '512MB'")
                cur.execute(_TEXT.format(n=n))
                cur.execute(_HNSW.format(n=n))
            if len(changes.chunks) >= _BULK_ROWS:
                # statistics now, not when autovacuum gets to it: without them the planner takes an ACL
                # that admits half the rows for one that admits 1% and sorts them all instead of using
                # the HNSW graph (380 ms a query at 100k rows)
                cur.execute(f"ANALYZE {n}_chunks")
            cur.execute(f"INSERT INTO {n}_meta (key, value) VALUES ('settings', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                        (json.dumps(changes.settings.to_dict()),))
        self._run(work)

    def search_dense(self, vector: Vectors, groups: Sequence[str], limit: int) -> list[Hit]:
        rows = self._query(f"SELECT {_COLUMNS}, embedding <=> %s::vector AS distance "
                           f"FROM {self.name}_chunks WHERE access && %s ORDER BY distance LIMIT %s",
                           (_vector_literal(vector), allowed_groups(groups), limit), walk=limit)
        rows.sort(key=lambda r: r[-1])  # relaxed order: sort again
        return [Hit(_chunk(r), 1.0 - float(r[-1])) for r in rows]

    def search_text(self, query: str, groups: Sequence[str], limit: int) -> list[Hit]:
        terms = query_terms(query)
        if not terms:
            return []
        rows = self._query(f"SELECT {_COLUMNS}, {_RANK} AS rank FROM {self.name}_chunks, {_WORDS} AS q "
                           "WHERE tsv @@ q AND access && %s ORDER BY rank DESC LIMIT %s",
                           (" | ".join(terms), allowed_groups(groups), limit))
        return [Hit(_chunk(r), float(r[-1])) for r in rows]

    def rank_hybrid(self, vector: Vectors | None, query: str | None, groups: Sequence[str],
                    limit: int, *, with_chunks: bool = False) -> tuple[list[Ranked], list[Ranked]]:
        terms = query_terms(query) if query is not None else []
        if vector is not None and terms and not self.parallel:
            return self._rank_fused(vector, terms, groups, limit, with_chunks=with_chunks)
        return self._rank_apart(vector, query, groups, limit, with_chunks=with_chunks)

    def _rank_fused(self, vector: Vectors, terms: list[str], groups: Sequence[str], limit: int, *,
                    with_chunks: bool) -> tuple[list[Ranked], list[Ranked]]:
        """Both halves, fused, and the rows of the best results in one statement (``_FUSED``). Without
        ``with_chunks``, the rows of the best quarter of ``limit`` (the retriever asks for ``limit`` = at
        least four times the passages it returns); ``chunks`` reads any other it returns."""
        read = 2 * limit if with_chunks else -(-limit // 4) + 1
        rows = self._query(_FUSED.format(n=self.name, columns=_COLUMNS),
                           {"vector": _vector_literal(vector), "groups": allowed_groups(groups), "limit": limit,
                            "words": " | ".join(terms), "read": read}, walk=limit)
        dense = sorted((r for r in rows if r[3] is not None), key=lambda r: int(r[3]))
        words = sorted((r for r in rows if r[4] is not None), key=lambda r: int(r[4]))

        def ref(row: Sequence[Any]) -> Chunk | None:
            return None if row[5] is None else _chunk(row[5:])
        return ([Ranked(r[0], 1.0 - float(r[1]), ref(r)) for r in dense],
                [Ranked(r[0], float(r[2]), ref(r)) for r in words])

    def _rank_apart(self, vector: Vectors | None, query: str | None, groups: Sequence[str],
                    limit: int, *, with_chunks: bool = False) -> tuple[list[Ranked], list[Ranked]]:
        # ids and scores, and the rows only when the caller will read them all: otherwise it reads back
        # (``chunks``) just the few it returns
        allowed = allowed_groups(groups)
        terms = query_terms(query) if query is not None else []
        rows = f", {_COLUMNS}" if with_chunks else ""
        walk = None if vector is None else (
            f"SELECT uid, embedding <=> %s::vector AS score{rows} FROM {self.name}_chunks "
            "WHERE access && %s ORDER BY score LIMIT %s", [_vector_literal(vector), allowed, limit])
        words = None if not terms else (
            f"SELECT uid, {_RANK} AS score{rows} FROM {self.name}_chunks, {_WORDS} AS q "
            "WHERE tsv @@ q AND access && %s ORDER BY score DESC LIMIT %s", [" | ".join(terms), allowed, limit])
        if walk is not None and words is not None and self.parallel:
            if self._walker is None:
                self._walker = ThreadPoolExecutor(1, thread_name_prefix="toolcrib-pgvector")
            walking = self._walker.submit(self._query, *walk, True, limit)
            try:
                text_rows = self._query(*words)
            finally:
                dense_rows = walking.result()
        else:
            dense_rows = [] if walk is None else self._query(*walk, walk=limit)
            text_rows = [] if words is None else self._query(*words)
        dense_rows.sort(key=lambda r: r[1])  # relaxed order: sort again

        def ref(row: Sequence[Any]) -> Chunk | None:
            return _chunk(row[2:]) if with_chunks else None
        return ([Ranked(r[0], 1.0 - float(r[1]), ref(r)) for r in dense_rows],
                [Ranked(r[0], float(r[1]), ref(r)) for r in text_rows])

    def chunks(self, ranked: Sequence[Ranked], groups: Sequence[str]) -> dict[str, Chunk]:
        out = super().chunks(ranked, groups)  # results that carry their chunk already
        wanted = [r.citation for r in ranked if r.citation not in out]
        if wanted:  # the reader's ACL again: a citation alone never reads a row it may not see
            rows = self._query(f"SELECT {_COLUMNS} FROM {self.name}_chunks WHERE uid = ANY(%s) AND access && %s",
                               (wanted, allowed_groups(groups)))
            out.update((chunk.citation, chunk) for chunk in map(_chunk, rows))
        return out

    def search_exact(self, term: str, groups: Sequence[str], limit: int) -> list[Hit]:
        if not term:
            return []
        pattern = "%" + term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        rows = self._query(f"SELECT {_COLUMNS} FROM {self.name}_chunks WHERE search_text ILIKE %s "
                           "AND access && %s LIMIT %s", (pattern, allowed_groups(groups), limit))
        return [Hit(_chunk(r), 1.0) for r in rows]

    def count(self, groups: Sequence[str]) -> int:
        def work(cur: Any) -> int:
            if not self._exists(cur):
                return 0
            cur.execute(f"SELECT count(*) FROM {self.name}_chunks WHERE access && %s", (allowed_groups(groups),))
            return int(cur.fetchone()[0])
        result: int = self._run(work)
        return result

    def close(self) -> None:
        if self._walker is not None:
            self._walker.shutdown()
        for conn in (self._conn, self._side):
            if conn is not None:
                conn.close()
        self._conn, self._side, self._walker = None, None, None


def _failed(exc: Exception) -> OperatorError:
    """A database error as the operator sees it: its class and SQLSTATE, never its text."""
    return OperatorError(f"the PostgreSQL index failed ({type(exc).__name__}: "
                         f"{getattr(exc, 'sqlstate', '') or 'no sqlstate'})")


def _chunk(row: Sequence[Any]) -> Chunk:
    meta = DocumentMeta(doc_id=row[0], title=row[6], source_path=row[10], content_hash=row[11],
                        access=tuple(row[12]), version=row[7], effective_date=row[8], family=row[9],
                        trusted=row[13])
    return Chunk(meta=meta, chunk_id=row[1], text=row[2], context=row[3], section=row[4], page=row[5])

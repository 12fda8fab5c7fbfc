"""Retrieval on the demo workspace: ingest speed, query latency, and whether the cited document is found.

    python benchmarks/demo_retrieval.py [--repeat N]

Copies the shipped demo workspace to a temporary folder, ingests its documents through the real
path (loaders -> structure chunker -> MiniLM int8 ONNX -> LanceDB), then, for every question of the
demo eval set whose answer must cite a document, searches as that question's user with BM25 alone,
dense alone and the hybrid retriever. Reports hit@5 (every required document among the top 5
passages' documents), MRR of the first required document, how many of those questions pass the
workspace's relevance threshold, query latency p50/p95 (hybrid, embedding included), and, as the
access-control check, how many passages of a document the asking user may not read came back when
every demo user asks every one of those questions (must be 0).
Ends with one JSON line of all figures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import _quick  # benchmarks/_quick.py: --quick
import numpy as np

from toolcrib.evals.questions import load_questions
from toolcrib.retrieval.documents import readable_by
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import DEMO_SOURCE


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions of each query")
    args = _quick.parse(parser, argv, repeat=1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "demo"
        shutil.copytree(DEMO_SOURCE, root, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
        ws = Workspace.open(root)
        started = time.perf_counter()
        report = ws.ingest()
        ingest_s = time.perf_counter() - started
        chunks = report.chunks_written
        retriever = ws.retriever()
        index = retriever.index
        tools = set(ws.registry.names())
        docs = [q for q in load_questions().questions if q.cite and not set(q.cite) & tools]
        figures: dict[str, float | int | str] = {"documents": len(report.added), "chunks": chunks,
                                                 "ingest_s": round(ingest_s, 2),
                                                 "ingest_chunks_per_s": round(chunks / ingest_s, 1)}
        totals = {"bm25": [], "dense": [], "hybrid": []}  # type: dict[str, list[tuple[bool, float]]]
        latencies: list[float] = []
        leaked = sufficient = 0
        readers = {tuple(sorted(ws.principal(user).groups))
                   for user in ws.config.users}  # the distinct group sets of the demo users
        for q in docs:
            wanted = list(q.cite)
            groups = sorted(ws.principal(q.user).groups)
            vector = ws.embedder.embed_query(q.question)
            ranked = {
                "bm25": [h.chunk for h in index.search_text(q.question, groups, 5)],
                "dense": [h.chunk for h in index.search_dense(vector, groups, 5)],
            }
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                evidence = retriever.retrieve(q.question, groups, 5)
                times.append((time.perf_counter() - t) * 1000)
            latencies.append(statistics.median(times))
            ranked["hybrid"] = [p.chunk for p in evidence.passages]
            sufficient += evidence.sufficient()
            for theirs in readers - {tuple(groups)}:  # every other reader asks it: nothing they may not read
                leaked += sum(not readable_by(p.chunk.meta.access, theirs)
                              for p in retriever.retrieve(q.question, theirs, 5).passages)
            for name, found in ranked.items():
                leaked += sum(not readable_by(c.meta.access, groups) for c in found)
                order = [c.meta.doc_id for c in found]
                hit = all(w in order for w in wanted)
                first = min((order.index(w) + 1 for w in wanted if w in order), default=0)
                totals[name].append((hit, 1 / first if first else 0.0))
            print(f"{q.id:32s} hybrid top: {', '.join(dict.fromkeys(c.meta.doc_id for c in ranked['hybrid']))}",
                  file=sys.stderr)
        n = len(docs)
        for name, rows in totals.items():
            figures[f"{name}_hit_at_5"] = round(sum(h for h, _ in rows) / n, 3)
            figures[f"{name}_mrr"] = round(sum(r for _, r in rows) / n, 3)
        figures.update({"questions": n, "sufficient": sufficient, "leaked_passages": leaked,
                        "hybrid_query_ms_p50": round(float(np.percentile(latencies, 50)), 2),
                        "hybrid_query_ms_p95": round(float(np.percentile(latencies, 95)), 2)})
    print(f"demo workspace: {figures['documents']} documents -> {chunks} chunks in {figures['ingest_s']} s "
          f"({figures['ingest_chunks_per_s']} chunks/s)")
    print(f"{n} questions that must cite a document (hit@5 = every cited document in the top 5):")
    for name in totals:
        print(f"  {name:7s} hit@5 {figures[f'{name}_hit_at_5']:.3f}  MRR {figures[f'{name}_mrr']:.3f}")
    print(f"hybrid query (embedding included): p50 {figures['hybrid_query_ms_p50']} ms, "
          f"p95 {figures['hybrid_query_ms_p95']} ms; above the relevance threshold: {sufficient}/{n}; "
          f"passages from documents the user may not read: {leaked}")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

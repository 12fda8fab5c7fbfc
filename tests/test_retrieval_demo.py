"""The shipped demo workspace's documents, retrieved as its users would (skipped if they are absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcrib.retrieval import HybridRetriever, LanceIndex, OnnxMiniLMEmbedder, ingest

DOCS = Path(__file__).resolve().parents[1] / "src" / "toolcrib" / "demo" / "workspace" / "docs"


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> HybridRetriever:
    if not DOCS.is_dir():
        pytest.skip("the demo workspace has no docs/ folder")
    embedder = OnnxMiniLMEmbedder()
    index = LanceIndex(tmp_path_factory.mktemp("demo") / "index")
    report = ingest([DOCS], index, embedder)
    assert report.skipped == []
    return HybridRetriever(index, embedder)


def test_late_delivery_penalty_finds_clause_8_3(retriever: HybridRetriever) -> None:
    passages = retriever.retrieve("late delivery penalty", ["support"], 3).passages
    assert any(p.doc_id.startswith("contract-") and "8.3" in p.chunk.text for p in passages)
    first = retriever.retrieve("What does clause 8.3 say?", ["support"], 3).passages[0]
    assert first.doc_id.startswith("contract-") and "8.3" in first.chunk.text


def test_the_hr_handbook_stays_hidden_from_support(retriever: HybridRetriever) -> None:
    alice = retriever.retrieve("What are the salary bands?", ["support"], 10)
    assert all(p.doc_id != "hr-pay-and-conduct" for p in alice.passages)
    assert not alice.sufficient()
    hana = retriever.retrieve("What are the salary bands?", ["hr", "support"], 3)
    assert hana.passages[0].doc_id == "hr-pay-and-conduct" and hana.sufficient()


def test_both_returns_policy_versions_are_surfaced(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("What restocking fee applies to opened items?", ["support"], 5)
    conflict = next(c for c in evidence.conflicts if c.family == "returns-policy")
    assert [v["effective_date"] for v in conflict.versions] == ["2025-07-01", "2024-01-01"]


def test_a_part_number_ranks_the_parts_list_first(retriever: HybridRetriever) -> None:
    assert retriever.retrieve("HLV-2205", ["support"], 3).passages[0].doc_id == "parts-list"

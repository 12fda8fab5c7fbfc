"""The LanceDB index's query snapshot: what a reader sees through it (real LanceDB, real files)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from toolcrib.errors import ConfigError
from toolcrib.retrieval import Chunk, DocumentMeta, IndexChanges, IndexSettings, LanceIndex

SETTINGS = IndexSettings(embedder="test-embedder", chunker="test-chunker", dim=8)


def chunk(doc_id: str, text: str, access: tuple[str, ...] = ("*",), title: str = "") -> Chunk:
    return Chunk(DocumentMeta(doc_id, title or doc_id, f"{doc_id}.md", "h", access=access), "c1", text)


def unit(values: list[float]) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def build(path: Path, chunks: list[Chunk], vectors: list[np.ndarray]) -> LanceIndex:
    index = LanceIndex(path)
    index.apply(IndexChanges(settings=SETTINGS, chunks=chunks, vectors=np.stack(vectors), replace=[]))
    return index


@pytest.fixture
def crowded(tmp_path: Path) -> LanceIndex:
    """Forty HR chunks that match the query best, and three that support may read."""
    near = unit([1, 0, 0, 0, 0, 0, 0, 0])
    chunks = [chunk(f"hr{i}", "salary band bonus payroll salary", ("hr",)) for i in range(40)]
    vectors = [near] * 40
    for i, (text, vector) in enumerate([("salary questions go to payroll", [1, 1, 0, 0, 0, 0, 0, 0]),
                                        ("probes are inspected before use", [0, 1, 1, 0, 0, 0, 0, 0]),
                                        ("returned items are checked", [0, 0, 1, 1, 0, 0, 0, 0])]):
        chunks.append(chunk(f"pub{i}", text, ("support",)))
        vectors.append(unit(vector))
    return build(tmp_path / "index", chunks, vectors)


def test_rows_a_reader_may_not_read_never_crowd_out_those_they_may(crowded: LanceIndex) -> None:
    query = unit([1, 0, 0, 0, 0, 0, 0, 0])
    dense = crowded.search_dense(query, ["support"], 3)
    assert [h.chunk.meta.doc_id for h in dense] == ["pub0", "pub1", "pub2"]
    assert dense[0].score == pytest.approx(float(query @ unit([1, 1, 0, 0, 0, 0, 0, 0])), abs=1e-5)
    text = crowded.search_text("salary payroll", ["support"], 5)
    assert [h.chunk.meta.doc_id for h in text] == ["pub0"]
    assert len(crowded.search_dense(query, ["hr"], 50)) == 40
    assert crowded.count(["support"]) == 3 and crowded.count(["hr", "support"]) == 43


def test_full_text_ranks_rare_words_first_and_matches_inflections(tmp_path: Path) -> None:
    rows = [chunk("a", "the order ships today"), chunk("b", "an order of calibration certificates"),
            chunk("c", "orders and more orders"), chunk("d", "Items may be returned within 14 days")]
    index = build(tmp_path / "index", rows, [unit([i + 1, 1, 0, 0, 0, 0, 0, 0]) for i in range(4)])
    assert index.search_text("calibration order", ["*"], 4)[0].chunk.meta.doc_id == "b"
    assert [h.chunk.meta.doc_id for h in index.search_text("returns", ["*"], 4)] == ["d"]
    assert index.search_text("the and of", ["*"], 4) == []  # function words alone match nothing


def test_exact_lookup_finds_whole_identifiers_case_blind_within_the_readers_rows(tmp_path: Path) -> None:
    rows = [chunk("p1", "| HLV-2205 | lead set | $42.50 |"), chunk("p2", "The HLV-22050 is a probe."),
            chunk("p3", "hlv-2205 spares are kept in Cork", ("lab",)), chunk("p4", "Nothing here.")]
    index = build(tmp_path / "index", rows, [unit([1, i, 0, 0, 0, 0, 0, 0]) for i in range(4)])
    assert {h.chunk.meta.doc_id for h in index.search_exact("HLV-2205", ["support"], 10)} == {"p1"}
    assert {h.chunk.meta.doc_id for h in index.search_exact("HLV-2205", ["lab"], 10)} == {"p1", "p3"}
    assert index.search_exact("XYZ-1", ["lab"], 10) == []


def test_only_the_committed_snapshot_stays_and_a_reader_keeps_the_one_it_searched(crowded: LanceIndex) -> None:
    query = unit([0, 1, 1, 0, 0, 0, 0, 0])
    ranked, _ = crowded.rank_hybrid(query, None, ["support"], 1)
    other = LanceIndex(crowded.path)
    other.apply(IndexChanges(settings=SETTINGS, delete=["pub1"]))
    assert [p.name for p in (crowded.path / "snapshots").iterdir()] == [
        json.loads((crowded.path / "toolcrib-index.json").read_text())["snapshot"]]
    # the rows a search returned are still read from the version it searched
    assert crowded.chunks(ranked, ["support"])["pub1#c1"].text == "probes are inspected before use"
    assert "pub1" not in {h.chunk.meta.doc_id for h in crowded.search_dense(query, ["support"], 5)}


def test_an_index_written_before_snapshots_gets_one_on_first_read(crowded: LanceIndex) -> None:
    commit_path = crowded.path / "toolcrib-index.json"
    commit = json.loads(commit_path.read_text())
    del commit["snapshot"]
    commit_path.write_text(json.dumps(commit))
    for folder in (crowded.path / "snapshots").iterdir():
        for file in folder.iterdir():
            file.unlink()
        folder.rmdir()
    reopened = LanceIndex(crowded.path)
    assert [h.chunk.meta.doc_id for h in reopened.search_text("inspected probes", ["support"], 2)] == ["pub1"]
    assert "snapshot" in json.loads(commit_path.read_text())


def test_a_damaged_snapshot_is_a_clear_error_that_says_how_to_rebuild(crowded: LanceIndex) -> None:
    name = json.loads((crowded.path / "toolcrib-index.json").read_text())["snapshot"]
    (crowded.path / "snapshots" / name / "vectors.npy").write_bytes(b"not numpy")
    with pytest.raises(ConfigError, match="reindex"):
        LanceIndex(crowded.path).count(["*"])

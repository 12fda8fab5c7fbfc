"""Incremental ingest into a real LanceDB index with the real MiniLM embedder."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from toolcrib.errors import ConfigError
from toolcrib.retrieval import (
    Embedder,
    FixedChunker,
    HybridRetriever,
    LanceIndex,
    OnnxMiniLMEmbedder,
    StructureChunker,
    ingest,
)
from toolcrib.retrieval.embedders import Vectors


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


def write_corpus(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "warranty.md").write_text("# Warranty\n\n## 1. Cover\n\nAll instruments carry a two-year warranty.\n")
    (root / "shipping.txt").write_text("1. Shipping\n\nOrders ship within three working days from Cork.\n")
    (root / "faq.html").write_text("<html><body><nav>Menu</nav><h1>FAQ</h1><p>Calibration certificates "
                                   "are included with every multimeter.</p></body></html>")
    (root / "notes.md").write_text("# Notes\n\nThe cafeteria opens at eight.\n")


class CrashingEmbedder(Embedder):
    """Embeds normally, then fails on a later call: a process dying in the middle of an ingest."""

    def __init__(self, inner: Embedder, fail_on_call: int) -> None:
        self.inner, self.fail_on_call, self.calls = inner, fail_on_call, 0
        self.id, self.dim = inner.id, inner.dim

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        if self.calls >= self.fail_on_call:
            raise RuntimeError("killed")
        return self.inner.embed(texts)


def state(index: LanceIndex) -> dict[str, str]:
    return {doc_id: meta.content_hash for doc_id, meta in index.documents().items()}


def test_incremental_ingest_skips_unchanged_replaces_changed_removes_deleted(
        tmp_path: Path, embedder: OnnxMiniLMEmbedder) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    index = LanceIndex(tmp_path / "index")
    seen: list[tuple[str, int, int]] = []
    first = ingest([docs], index, embedder, progress=lambda *a: seen.append(a))
    assert sorted(first.added) == ["faq", "notes", "shipping", "warranty"]
    assert first.chunks_written == 4 and first.seconds > 0
    assert ("commit", 1, 1) in seen

    again = ingest([docs], index, embedder)
    assert sorted(again.unchanged) == ["faq", "notes", "shipping", "warranty"]
    assert (again.added, again.updated, again.removed, again.chunks_written) == ([], [], [], 0)

    (docs / "shipping.txt").write_text("1. Shipping\n\nOrders now ship from Galway within five days.\n")
    (docs / "notes.md").unlink()
    (docs / "new.md").write_text("# New\n\nA new spectrum analyser arrives in spring.\n")
    third = ingest([docs], index, embedder)
    assert (third.added, third.updated, third.removed) == (["new"], ["shipping"], ["notes"])
    assert sorted(third.unchanged) == ["faq", "warranty"]

    retriever = HybridRetriever(index, embedder)
    texts = [p.chunk.text for p in retriever.retrieve("where do orders ship from", ["*"], 10).passages]
    assert any("Galway" in t for t in texts) and not any("Cork" in t for t in texts)
    assert not any("cafeteria" in t for t in texts)
    assert index.count(["anyone"]) == 4


def test_a_crash_in_the_embedder_leaves_the_previous_index(tmp_path: Path, embedder: OnnxMiniLMEmbedder) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    index = LanceIndex(tmp_path / "index")
    ingest([docs], index, embedder)
    before = state(index)
    (docs / "warranty.md").write_text("# Warranty\n\n## 1. Cover\n\nFive years of cover now.\n")
    (docs / "shipping.txt").unlink()
    for n in range(3):
        (docs / f"extra{n}.md").write_text(f"# Extra {n}\n\nMore text number {n}.\n")
    with pytest.raises(RuntimeError):
        ingest([docs], index, CrashingEmbedder(embedder, fail_on_call=2), batch_size=1)
    reopened = LanceIndex(tmp_path / "index")
    assert state(reopened) == before
    report = ingest([docs], reopened, embedder)  # and the next run completes the job
    assert sorted(report.added) == ["extra0", "extra1", "extra2"]
    assert report.updated == ["warranty"] and report.removed == ["shipping"]


def test_a_crash_after_writing_but_before_the_commit_leaves_the_previous_index(
        tmp_path: Path, embedder: OnnxMiniLMEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    index = LanceIndex(tmp_path / "index")
    ingest([docs], index, embedder)
    before = state(index)
    (docs / "notes.md").unlink()
    (docs / "faq.html").write_text("<h1>FAQ</h1><p>Certificates cost extra now.</p>")

    def die(*args: object) -> None:
        raise KeyboardInterrupt("killed before the commit record was written")
    monkeypatch.setattr(LanceIndex, "_write_commit", die)
    with pytest.raises(KeyboardInterrupt):
        ingest([docs], index, embedder)
    monkeypatch.undo()

    reopened = LanceIndex(tmp_path / "index")
    assert state(reopened) == before
    texts = [p.chunk.text for p in HybridRetriever(reopened, embedder).retrieve("cafeteria", ["*"], 5).passages]
    assert any("cafeteria" in t for t in texts)  # the deleted document is still there: nothing half-done
    report = ingest([docs], reopened, embedder)
    assert report.removed == ["notes"] and report.updated == ["faq"]
    assert set(state(reopened)) == {"faq", "shipping", "warranty"}


def test_another_embedder_or_chunker_is_refused_until_reindex(tmp_path: Path, embedder: OnnxMiniLMEmbedder) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    index = LanceIndex(tmp_path / "index")
    ingest([docs], index, embedder, StructureChunker())
    with pytest.raises(ConfigError, match="--reindex"):
        ingest([docs], index, embedder, FixedChunker(size=300, overlap=50))
    with pytest.raises(ConfigError, match="embedder"):
        ingest([docs], index, OnnxMiniLMEmbedder(max_length=128))
    report = ingest([docs], index, embedder, FixedChunker(size=300, overlap=50), reindex=True)
    assert len(report.added) == 4
    settings = index.settings()
    assert settings is not None and settings.chunker.startswith("fixed")
    assert len(state(index)) == 4


def test_unreadable_files_are_reported_and_keep_their_last_good_version(
        tmp_path: Path, embedder: OnnxMiniLMEmbedder) -> None:
    docs = tmp_path / "docs"
    write_corpus(docs)
    index = LanceIndex(tmp_path / "index")
    ingest([docs], index, embedder)
    (docs / "notes.md.meta.toml").write_text("access = [broken")
    (docs / "sheet.xlsx").write_bytes(b"PK")
    report = ingest([docs], index, embedder)
    assert sorted(Path(name).name for name, _ in report.skipped) == ["notes.md", "sheet.xlsx"]
    assert report.removed == [] and "notes" in state(index)

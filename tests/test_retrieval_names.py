"""A question about two named documents gets a passage of each, shown whole; hyphenated words match
their parts. On a real LanceDB index with the shipped embedder."""

from __future__ import annotations

import pytest

from toolcrib.retrieval import HybridRetriever, LanceIndex, OnnxMiniLMEmbedder, ingest
from toolcrib.retrieval.excerpt import names, terms

CORPUS = {
    "alder.md": "---\ntitle: Supply agreement with Alder Components\n---\n# 8. Late delivery\n\n"
                "8.1 Alder informs the buyer of any delay at once.\n\n8.3 For each week of late delivery Alder pays "
                "a penalty of 2% of the order value, capped at 10%.\n",
    "alder-faq.md": "---\ntitle: Alder Components delivery FAQ\n---\n# Late deliveries\n\nAlder's late-delivery "
                    "penalty is explained in the supply agreement. Alder ships late deliveries by air.\n",
    "alder-notes.md": "---\ntitle: Alder Components account notes\n---\n# Notes\n\nAlder's late deliveries in 2025 "
                      "triggered the penalty twice; the penalty was deducted from the next invoice.\n",
    "birch.md": "---\ntitle: Component supply agreement with Birch Industries\n---\n# 9. Delays\n\n9.2 Birch owes "
                "1.5% of the invoiced value for each week a shipment is overdue, up to 12% in total. "
                "9.3 Force majeure excuses the delay.\n",
}


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory) -> HybridRetriever:
    root = tmp_path_factory.mktemp("names")
    docs = root / "docs"
    docs.mkdir()
    for name, text in CORPUS.items():
        (docs / name).write_text(text)
    embedder = OnnxMiniLMEmbedder()
    index = LanceIndex(root / "index")
    ingest([docs], index, embedder)
    return HybridRetriever(index, embedder, excerpt_chars=200)


def test_names_are_runs_of_capitalised_words_not_opening_a_sentence() -> None:
    assert names("What does our competitor Brightline Scientific charge?") == ["Brightline Scientific"]
    assert names("What is the penalty in the Alder contract, and how does Birch's differ?") == ["Alder", "Birch"]
    assert names("How do I escalate a critical issue? Where is the FAQ.") == []
    assert names("Hi, I'm new here and I've read Norden's contract") == ["Norden"]  # the speaker is no name


def test_a_hyphenated_word_also_matches_its_parts() -> None:
    assert terms("the late delivery penalty") <= terms("the late-delivery penalty") and "hlv" not in terms("HLV-2205")


def test_a_question_about_two_named_documents_gets_a_passage_of_each(retriever: HybridRetriever) -> None:
    question = "What is the late-delivery penalty for Alder, and how does Birch differ?"
    plain = retriever.retrieve("What is the late-delivery penalty for Alder?", ["everyone"], 2)
    assert all("Birch" not in p.chunk.text for p in plain.passages)  # Alder's documents fill the top 2
    found = retriever.retrieve(question, ["everyone"], 2)
    assert {p.doc_id for p in found.passages} >= {"birch"} and any("Alder" in p.chunk.text for p in found.passages)
    shown = found.evidence().to_text()
    assert "up to 12% in total" in shown  # the passage added for the name is shown whole, not excerpted
    nobody = retriever.retrieve("What does Brightline charge for a late delivery?", ["everyone"], 2)
    assert all("Brightline" not in p.chunk.text for p in nobody.passages) and len(nobody.passages) == 2

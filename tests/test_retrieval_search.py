"""Hybrid retrieval as a user sees it: access control, exact identifiers, abstention, conflicts,
citations and the model-facing vector_search tool. Real MiniLM embedder, real LanceDB index."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from toolcrib.errors import ConfigError, InvalidArguments, ToolFailed
from toolcrib.policy.principal import Principal
from toolcrib.retrieval import (
    Chunk,
    DocumentMeta,
    FunctionReranker,
    HybridRetriever,
    LanceIndex,
    OnnxMiniLMEmbedder,
    OpenAIEmbedder,
    Passage,
    Reranker,
    check_citations,
    ingest,
)
from toolcrib.retrieval import retriever as retr
from toolcrib.retrieval.retriever import Retrieval
from toolcrib.retrieval.tool import make_vector_search_tool, vector_search
from toolcrib.tools.tool import ToolContext

CORPUS = {
    "hr-pay.md": "---\ndoc_id: hr-pay\ntitle: Pay bands (confidential)\naccess: [hr]\n---\n# Pay bands\n\n"
                 "## 2. Salary bands\n\nBand K2 pays 36,000 to 46,000 EUR a year. Code PAY-7731 covers bonuses.\n",
    "hr-leave-v2.md": "---\ndoc_id: leave-v2\ntitle: Leave policy 2.0\nfamily: leave\nversion: '2.0'\n"
                      "effective_date: 2026-01-01\naccess: [hr]\n---\n# Leave\n\nStaff get 30 days of annual leave.\n",
    "leave-v1.md": "---\ndoc_id: leave-v1\ntitle: Leave policy 1.0\nfamily: leave\nversion: '1.0'\n"
                   "effective_date: 2024-01-01\n---\n# Leave\n\nStaff get 25 days of annual leave.\n",
    "parts.md": "# Spare parts\n\n## Probes\n\n| Part | Name | Price |\n|---|---|---|\n"
                "| HLV-2250 | High-voltage probe, 20 kV | $310.00 |\n"
                "| HLV-2205 | High-voltage lead set, 5 kV | $42.50 |\n",
    "probe-care.md": "# Probe care\n\nHigh-voltage leads and probes such as the HLV-2250 should be inspected before "
                     "every use. Replace a lead with cracked insulation.\n",
    "orders.md": "# Order notes\n\n## Harrier\n\nORD-10010 shipped by air on 3 November.\n\n"
                 "## Vogel\n\nORD-1001 is on hold until the customs papers arrive.\n",
    "contract.txt": "8. Late delivery\n\n8.1 The supplier informs the buyer of any delay.\n"
                    "8.2 Delivery dates are binding.\n8.3 For each week of delay the supplier pays a penalty "
                    "of 2% of the order value, capped at 10%.\n\n18. Notices\n\n18.3 Notices are sent by "
                    "registered letter to the addresses above.\n",
    "faq.md": "# Supplier FAQ\n\n## Late deliveries\n\nIf a delivery is late, the penalty in clause 8.3 of your "
              "agreement applies; please tell us early.\n",
    "returns-v1.txt": "Returns policy\n\nOpened items may be returned within 30 days of delivery.\n",
    "returns-v2.md": "---\ndoc_id: returns-v2\nfamily: returns\nversion: '2.0'\neffective_date: 2025-07-01\n---\n"
                     "# Returns policy\n\nOpened items may be returned within 14 days of delivery.\n",
}


@pytest.fixture(scope="module")
def embedder() -> OnnxMiniLMEmbedder:
    return OnnxMiniLMEmbedder()


@pytest.fixture(scope="module")
def retriever(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxMiniLMEmbedder) -> HybridRetriever:
    root = tmp_path_factory.mktemp("retrieval")
    docs = root / "docs"
    docs.mkdir()
    for name, text in CORPUS.items():
        (docs / name).write_text(text)
    (docs / "returns-v1.txt.meta.toml").write_text(
        'doc_id = "returns-v1"\nfamily = "returns"\nversion = "1.0"\neffective_date = "2024-01-01"\n')
    index = LanceIndex(root / "index")
    report = ingest([docs], index, embedder)
    assert not report.skipped
    return HybridRetriever(index, embedder)


def everything_returned(retriever: HybridRetriever, query: str, groups: Sequence[str]) -> str:
    result = retriever.retrieve(query, groups, 20).to_dict()
    return json.dumps({"passages": result["passages"], "conflicts": result["conflicts"]})


# -- access control ----------------------------------------------------------------------------------

@pytest.mark.parametrize("query", ["salary bands K2", "PAY-7731", "Pay bands (confidential)", "annual leave days"])
def test_an_hr_document_never_reaches_a_support_user(retriever: HybridRetriever, query: str) -> None:
    evidence = retriever.retrieve(query, ["support"], 20)
    assert all(not p.doc_id.startswith(("hr-", "leave-v2")) for p in evidence.passages)
    seen = everything_returned(retriever, query, ["support"])
    for secret in ("hr-pay", "36,000", "PAY-7731", "leave-v2", "30 days of annual leave", "2026-01-01"):
        assert secret not in seen
    assert retriever.index.count(["support"]) < retriever.index.count(["hr"])


class ReadRecording(LanceIndex):
    """The real index, recording every chunk it reads back into Python."""

    read: ClassVar[list[str]] = []

    def chunks(self, ranked, groups):  # type: ignore[no-untyped-def]
        found = super().chunks(ranked, groups)
        self.read.extend(chunk.meta.doc_id for chunk in found.values())
        return found


@pytest.mark.parametrize("query", ["salary bands K2", "PAY-7731", "annual leave days", "probe inspection"])
def test_a_support_query_never_reads_an_hr_chunk_even_internally(retriever: HybridRetriever, query: str) -> None:
    recording = ReadRecording(retriever.index.location)
    ReadRecording.read.clear()
    passages = HybridRetriever(recording, retriever.embedder).retrieve(query, ["support"], 2).passages
    assert ReadRecording.read and not any(d.startswith(("hr-", "leave-v2")) for d in ReadRecording.read)
    if "-" not in query:  # no identifier: only the passages returned are read back, and, when one is a
        # version of a document, one candidate of each other document (which may be another version)
        returned = [p.doc_id for p in passages]
        extra = [d for d in ReadRecording.read if d not in returned]
        assert len(extra) == len(set(extra))
        assert sorted(d for d in ReadRecording.read if d in returned) == sorted(returned)
        if not any(p.chunk.meta.family for p in passages):
            assert not extra


def test_the_hr_user_does_get_the_hr_document(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("salary bands K2", ["hr"], 3)
    assert evidence.passages[0].doc_id == "hr-pay"
    assert evidence.passages[0].citation == "hr-pay#c1"


def test_a_conflict_is_surfaced_only_between_versions_the_user_may_read(retriever: HybridRetriever) -> None:
    hr = retriever.retrieve("how many days of annual leave do staff get", ["hr"], 5)
    versions = next(c for c in hr.conflicts if c.family == "leave").versions
    assert [(v["doc_id"], v["effective_date"]) for v in versions] == [("leave-v2", "2026-01-01"),
                                                                     ("leave-v1", "2024-01-01")]
    support = retriever.retrieve("how many days of annual leave do staff get", ["support"], 5)
    assert "leave" not in [c.family for c in support.conflicts]
    assert {p.doc_id for p in support.passages} & {"leave-v2"} == set()


def test_two_versions_of_a_policy_come_back_with_their_effective_dates(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("within how many days can opened items be returned", ["support"], 4)
    conflict = next(c for c in evidence.conflicts if c.family == "returns")
    assert [(v["version"], v["effective_date"]) for v in conflict.versions] == [("2.0", "2025-07-01"),
                                                                                ("1.0", "2024-01-01")]
    assert evidence.to_dict()["conflicts"][0]["versions"][0]["citation"].startswith("returns-v2#")


# -- exact identifiers -------------------------------------------------------------------------------

@pytest.mark.parametrize("query, doc_id, must_contain", [
    ("HLV-2205", "parts", "HLV-2205 | High-voltage lead set"),
    ("price of HLV-2250", "parts", "HLV-2250 | High-voltage probe"),
    ("What is the status of ORD-1001?", "orders", "ORD-1001 is on hold"),
    ("What does clause 8.3 say?", "contract", "8.3 For each week"),
])
def test_an_exact_identifier_ranks_its_own_passage_first(retriever: HybridRetriever, query: str, doc_id: str,
                                                         must_contain: str) -> None:
    first = retriever.retrieve(query, ["support"], 5).passages[0]
    assert first.doc_id == doc_id and must_contain in first.chunk.text
    assert first.exact_match


def test_identifier_matches_are_exact_not_prefixes(retriever: HybridRetriever) -> None:
    passages = retriever.retrieve("ORD-1001", ["support"], 5).passages
    orders = [p for p in passages if p.doc_id == "orders"]
    assert "ORD-1001 is on hold" in orders[0].chunk.text
    assert all("ORD-10010" not in p.chunk.text for p in passages if p.exact_match)



def test_identifier_checks_on_ascii_text_answer_as_their_patterns_do() -> None:
    # ASCII text is checked without the regular expressions (compiling one per identifier cost more than
    # the search); the answers must be the patterns' own, on every kind of boundary and line opening
    pieces = ["8.3", "18.3", "8.31", "8.3.1", "8.3.", "hlv-2205", "HLV-22050", "Hlv-2205", "x", "_", "-", ".",
              "4", " ", "\n", "\r", "\t", "\x1c", "|", "*", "#", ">", "clause", "Section", "PART", "parts",
              "a", "§"]
    rng = np.random.default_rng(5)
    for _ in range(4000):
        text = "".join(rng.choice(pieces, int(rng.integers(0, 9))))
        title = "".join(rng.choice(pieces, int(rng.integers(0, 3))))
        for identifier in ("8.3", "HLV-2205", "x"):
            expected = retr._token_pattern(identifier).search(text) is not None
            assert retr.contains_exactly(text, identifier) is expected, (text, identifier)
            chunk = Chunk(DocumentMeta("d", title, "d.md", "h"), "c1", text)
            expected = expected and (retr.contains_exactly(f"{title} ", identifier)
                                     or retr._opener_pattern(identifier).search(text) is not None)
            assert (retr.contains_exactly(text, identifier) and retr.defines(chunk, identifier)) is expected, \
                (text, title, identifier)

# -- abstention --------------------------------------------------------------------------------------

def test_an_unrelated_question_is_reported_as_insufficient_evidence(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("What will the weather be in Lima tomorrow?", ["support"], 5)
    assert not evidence.sufficient()
    assert evidence.to_dict()["sufficient"] is False
    assert evidence.to_dict()["searched"] == "What will the weather be in Lima tomorrow?"
    assert retriever.retrieve("penalty for late delivery", ["support"], 5).sufficient()


def test_an_identifier_no_document_contains_is_insufficient(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("How much does part HLV-9999 cost?", ["support"], 5)
    assert evidence.passages and not any(p.exact_match for p in evidence.passages)
    assert not evidence.sufficient()
    assert retriever.retrieve("How much does part HLV-2205 cost?", ["support"], 5).sufficient()


def test_the_relevance_threshold_is_configurable(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("penalty for late delivery", ["support"], 5)
    assert evidence.sufficient(threshold=0.2) and not evidence.sufficient(threshold=0.99)
    strict = HybridRetriever(retriever.index, retriever.embedder, threshold=0.99)
    assert not strict.retrieve("penalty for late delivery", ["support"], 5).sufficient()


def test_nothing_readable_means_insufficient_evidence(retriever: HybridRetriever) -> None:
    evidence = retriever.retrieve("salary bands K2", ["nobody-group"], 5)
    assert all(p.chunk.meta.access == ("*",) for p in evidence.passages)
    empty_index = HybridRetriever(LanceIndex(Path(retriever.index.location).parent / "empty"), retriever.embedder)
    evidence = empty_index.retrieve("salary bands", ["hr"], 5)
    assert evidence.passages == [] and not evidence.sufficient()


# -- reranker seam -----------------------------------------------------------------------------------

def test_a_reranker_reorders_the_fused_candidates(retriever: HybridRetriever) -> None:
    class OldestFirst:
        def rerank(self, query: str, passages: Sequence[Passage]) -> list[Passage]:
            return sorted(passages, key=lambda p: p.chunk.meta.effective_date or "9999")

    assert isinstance(OldestFirst(), Reranker)
    reranked = HybridRetriever(retriever.index, retriever.embedder, reranker=OldestFirst())
    assert reranked.retrieve("returns of opened items", ["support"], 3).passages[0].doc_id == "returns-v1"
    by_rule = HybridRetriever(retriever.index, retriever.embedder,
                              reranker=FunctionReranker(lambda q, p: 1.0 if p.doc_id == "faq" else 0.0))
    assert by_rule.retrieve("late delivery penalty", ["support"], 3).passages[0].doc_id == "faq"


# -- citations ---------------------------------------------------------------------------------------

def test_citations_in_an_answer_are_checked_against_this_run() -> None:
    answer = ("The penalty is 2% per week [contract#c1]. It is capped at 10%. [contract#c1] "
              "Opened items may be returned within 14 days [returns-v2#c1; made-up#c9]. "
              "Salaries are confidential and also not listed here. Anything else?")
    check = check_citations(answer, ["contract#c1", "returns-v2#c1", "faq#c1"])
    assert check.valid == ["contract#c1", "returns-v2#c1"]
    assert check.invalid == ["made-up#c9"]
    assert check.uncited_claims == ["Salaries are confidential and also not listed here."]
    assert not check.ok
    assert check_citations("Delivery is late [x#c1].", ["x#c1"]).ok


# -- the vector_search tool --------------------------------------------------------------------------

def test_vector_search_tool_returns_citable_passages_for_the_principal(retriever: HybridRetriever,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    tool = make_vector_search_tool()
    assert tool.name == "vector_search" and tool.effect.value == "read"
    assert tool.parameters["properties"]["top_k"]["maximum"] == 20
    alice = ToolContext(principal=Principal("alice", groups=frozenset({"support"})),
                        resources={"retriever": retriever})
    monkeypatch.setattr(retriever, "top_k", 2)  # the workspace's retrieval.top_k: a model asking for fewer gets it
    result = tool.fn(**tool.bind(tool.validate({"query": "late delivery penalty", "top_k": 1}, alice), alice))
    assert len(result["passages"]) == 2
    args = tool.validate({"query": "late delivery penalty", "top_k": 3}, alice)
    result = tool.fn(**tool.bind(args, alice))
    assert set(result) == {"passages", "conflicts", "sufficient", "searched"}
    # three, and the other version of a document one of them is a version of (for the run's dates to decide)
    added = result["passages"][3:]
    assert len(added) <= 1 and all(p.get("version") for p in added) and result["sufficient"] is True
    assert bool(added) == bool(result["conflicts"])
    first = result["passages"][0]
    assert {"citation", "title", "text"} <= set(first) and "score" not in first  # empty fields left out
    assert first["citation"] in {"contract#c1", "faq#c1"}
    json.dumps(result)

    hr_query = tool.validate({"query": "salary bands K2"}, alice)
    assert "36,000" not in json.dumps(tool.fn(**tool.bind(hr_query, alice)))
    with pytest.raises(InvalidArguments):
        vector_search.validate({"query": "x", "top_k": 50}, alice)


def test_vector_search_failures_carry_no_internals() -> None:
    class BrokenIndex(LanceIndex):
        def search_dense(self, *args: object, **kwargs: object) -> list:  # type: ignore[override]
            raise OSError("/srv/secret/path/index.lance: disk I/O error")

        def rank_hybrid(self, *args: object, **kwargs: object) -> tuple:  # type: ignore[override]
            raise OSError("/srv/secret/path/index.lance: disk I/O error")

    ctx = ToolContext(principal=Principal("alice", groups=frozenset({"support"})))
    with pytest.raises(ToolFailed, match="not configured"):
        vector_search.fn(query="x", ctx=ctx)

    broken = HybridRetriever(BrokenIndex("unused"), OnnxMiniLMEmbedder())
    ctx = ToolContext(principal=ctx.principal, resources={"retriever": broken})
    with pytest.raises(ToolFailed) as caught:
        vector_search.fn(query="x", ctx=ctx)
    assert "secret" not in str(caught.value) and "disk" not in str(caught.value)


# -- OpenAI-compatible embedder ----------------------------------------------------------------------

class _EmbeddingsHandler(BaseHTTPRequestHandler):
    requests: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        if self.headers.get("Authorization") != "Bearer test-key":
            self.send_response(401)
            self.end_headers()
            return
        data = [{"object": "embedding", "index": i, "embedding": [float(len(text)), 1.0, 0.0, 2.0]}
                for i, text in enumerate(body["input"])]
        payload = json.dumps({"object": "list", "data": list(reversed(data)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def embeddings_server() -> Iterator[str]:
    server = HTTPServer(("127.0.0.1", 0), _EmbeddingsHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_embedder_speaks_the_embeddings_protocol(embeddings_server: str) -> None:
    _EmbeddingsHandler.requests.clear()
    embedder = OpenAIEmbedder("text-embedding-test", base_url=embeddings_server, api_key="test-key", dim=4,
                              batch_size=2)
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert vectors.shape == (3, 4) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[1][0] > vectors[2][0] > vectors[0][0]  # rows follow the input order, not the reply's
    assert [r["body"]["input"] for r in _EmbeddingsHandler.requests] == [["a", "bbb"], ["cc"]]
    assert _EmbeddingsHandler.requests[0]["path"] == "/v1/embeddings"
    assert embedder.id == "openai:text-embedding-test@4"
    with pytest.raises(ConfigError, match="API key"):
        OpenAIEmbedder("m", base_url=embeddings_server, api_key="wrong", dim=4).embed(["a"])


def test_a_passage_with_every_word_of_the_query_suffices_a_little_under_the_threshold() -> None:
    guide = Chunk(DocumentMeta("guide", "Support guide", "guide.md", "h"), "c4",
                  "Call the duty engineer first, then open the ticket as P1.",
                  section="4. How to escalate a critical issue")

    def found(query: str, relevance: float) -> Retrieval:
        return Retrieval(query, [Passage(chunk=guide, score=0.03, relevance=relevance)], threshold=0.4)

    assert found("How do I escalate a critical issue?", 0.34).sufficient()
    assert not found("How do I escalate a critical invoice dispute?", 0.34).sufficient()  # a word it lacks
    assert not found("How do I escalate a critical issue?", 0.25).sufficient()  # too far under
    assert found("Who is the duty engineer today?", 0.41).sufficient()  # over the threshold: as before

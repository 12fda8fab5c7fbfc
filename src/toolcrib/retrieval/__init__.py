"""Grounding in the user's documents: load, chunk, embed, index, retrieve (hybrid, ACL-filtered), cite.

Heavy backends (onnxruntime, LanceDB, psycopg) are imported only when used.
Names load on first use (PEP 562), so importing this package costs nothing until a name is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, eagerly, for type checkers
    from toolcrib.retrieval.chunkers import Chunker, FixedChunker, ParentChildChunker, StructureChunker
    from toolcrib.retrieval.citations import Citation, CitationCheck, check_citations, citations_in
    from toolcrib.retrieval.documents import EVERYONE, Block, Chunk, Document, DocumentMeta, Passage, citation_id
    from toolcrib.retrieval.embedders import Embedder, OnnxMiniLMEmbedder, OpenAIEmbedder
    from toolcrib.retrieval.evidence import CitedPassage, Conflict, Evidence
    from toolcrib.retrieval.index import Hit, Index, IndexChanges, IndexSettings
    from toolcrib.retrieval.ingest import IngestReport, index_settings, ingest
    from toolcrib.retrieval.lance import LanceIndex
    from toolcrib.retrieval.loaders import LoadResult, load_document, load_documents
    from toolcrib.retrieval.pgvector import PgVectorIndex
    from toolcrib.retrieval.retriever import (
        DEFAULT_THRESHOLD,
        FunctionReranker,
        HybridRetriever,
        Reranker,
        Retrieval,
    )
    from toolcrib.text import find_identifiers

_WHERE: dict[str, str] = {
    "Block": "toolcrib.retrieval.documents",
    "Chunk": "toolcrib.retrieval.documents",
    "Chunker": "toolcrib.retrieval.chunkers",
    "CitationCheck": "toolcrib.retrieval.citations",
    "Citation": "toolcrib.retrieval.citations",
    "CitedPassage": "toolcrib.retrieval.evidence",
    "Conflict": "toolcrib.retrieval.evidence",
    "DEFAULT_THRESHOLD": "toolcrib.retrieval.retriever",
    "Document": "toolcrib.retrieval.documents",
    "DocumentMeta": "toolcrib.retrieval.documents",
    "EVERYONE": "toolcrib.retrieval.documents",
    "Embedder": "toolcrib.retrieval.embedders",
    "Evidence": "toolcrib.retrieval.evidence",
    "FixedChunker": "toolcrib.retrieval.chunkers",
    "FunctionReranker": "toolcrib.retrieval.retriever",
    "Hit": "toolcrib.retrieval.index",
    "HybridRetriever": "toolcrib.retrieval.retriever",
    "Index": "toolcrib.retrieval.index",
    "IndexChanges": "toolcrib.retrieval.index",
    "IndexSettings": "toolcrib.retrieval.index",
    "IngestReport": "toolcrib.retrieval.ingest",
    "LanceIndex": "toolcrib.retrieval.lance",
    "LoadResult": "toolcrib.retrieval.loaders",
    "OnnxMiniLMEmbedder": "toolcrib.retrieval.embedders",
    "OpenAIEmbedder": "toolcrib.retrieval.embedders",
    "ParentChildChunker": "toolcrib.retrieval.chunkers",
    "Passage": "toolcrib.retrieval.documents",
    "PgVectorIndex": "toolcrib.retrieval.pgvector",
    "Reranker": "toolcrib.retrieval.retriever",
    "Retrieval": "toolcrib.retrieval.retriever",
    "StructureChunker": "toolcrib.retrieval.chunkers",
    "check_citations": "toolcrib.retrieval.citations",
    "citation_id": "toolcrib.retrieval.documents",
    "citations_in": "toolcrib.retrieval.citations",
    "find_identifiers": "toolcrib.text",
    "index_settings": "toolcrib.retrieval.ingest",
    "ingest": "toolcrib.retrieval.ingest",
    "load_document": "toolcrib.retrieval.loaders",
    "load_documents": "toolcrib.retrieval.loaders",
}

__all__ = [
    "DEFAULT_THRESHOLD",
    "EVERYONE",
    "Block",
    "Chunk",
    "Chunker",
    "Citation",
    "CitationCheck",
    "CitedPassage",
    "Conflict",
    "Document",
    "DocumentMeta",
    "Embedder",
    "Evidence",
    "FixedChunker",
    "FunctionReranker",
    "Hit",
    "HybridRetriever",
    "Index",
    "IndexChanges",
    "IndexSettings",
    "IngestReport",
    "LanceIndex",
    "LoadResult",
    "OnnxMiniLMEmbedder",
    "OpenAIEmbedder",
    "ParentChildChunker",
    "Passage",
    "PgVectorIndex",
    "Reranker",
    "Retrieval",
    "StructureChunker",
    "check_citations",
    "citation_id",
    "citations_in",
    "find_identifiers",
    "index_settings",
    "ingest",
    "load_document",
    "load_documents",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'toolcrib.retrieval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

"""Grounding in the user's documents: load, chunk, embed, index, retrieve (hybrid, ACL-filtered), cite.

Heavy backends (onnxruntime, LanceDB, psycopg) are imported only when used.
"""

from toolcrib.retrieval.chunkers import Chunker, FixedChunker, ParentChildChunker, StructureChunker
from toolcrib.retrieval.citations import CitationCheck, check_citations, citations_in
from toolcrib.retrieval.documents import EVERYONE, Block, Chunk, Document, DocumentMeta, Passage, citation_id
from toolcrib.retrieval.embedders import Embedder, OnnxMiniLMEmbedder, OpenAIEmbedder
from toolcrib.retrieval.index import Hit, Index, IndexChanges, IndexSettings
from toolcrib.retrieval.ingest import IngestReport, index_settings, ingest
from toolcrib.retrieval.lance import LanceIndex
from toolcrib.retrieval.loaders import LoadResult, load_document, load_documents
from toolcrib.retrieval.pgvector import PgVectorIndex
from toolcrib.retrieval.retriever import (
    DEFAULT_THRESHOLD,
    Conflict,
    Evidence,
    FunctionReranker,
    HybridRetriever,
    Reranker,
    find_identifiers,
)

__all__ = [
    "DEFAULT_THRESHOLD",
    "EVERYONE",
    "Block",
    "Chunk",
    "Chunker",
    "CitationCheck",
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
    "Passage",
    "PgVectorIndex",
    "Reranker",
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

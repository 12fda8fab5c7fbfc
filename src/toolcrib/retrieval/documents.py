"""The retrieval data model: a loaded document, its blocks, the chunks cut from it, and a passage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from toolcrib.retrieval.evidence import CitedPassage

EVERYONE = "*"
"""The access-list entry that lets every principal read a document."""

BlockKind = Literal["heading", "paragraph"]


@dataclass(frozen=True)
class Block:
    """One structural unit of a document: a heading (with its level) or a paragraph of text."""

    kind: BlockKind
    text: str
    level: int = 0
    page: int | None = None


@dataclass(frozen=True)
class DocumentMeta:
    """What is known about a document besides its text. ``access`` lists the groups that may read it."""

    doc_id: str
    title: str
    source_path: str
    content_hash: str
    access: tuple[str, ...] = (EVERYONE,)
    version: str = ""
    effective_date: str = ""
    family: str = ""
    trusted: bool = True  # False: written outside the organisation (metadata ``untrusted = true``)


@dataclass(frozen=True)
class Document:
    """A loaded document: metadata plus its text as an ordered list of blocks."""

    meta: DocumentMeta
    blocks: tuple[Block, ...]

    @property
    def text(self) -> str:
        return "\n\n".join(block.text for block in self.blocks)


@dataclass(frozen=True)
class Chunk:
    """A piece of a document that is embedded and indexed; ``context`` is the parent section, if any."""

    meta: DocumentMeta
    chunk_id: str
    text: str
    section: str = ""
    page: int | None = None
    context: str = ""

    @property
    def citation(self) -> str:
        return citation_id(self.meta.doc_id, self.chunk_id)

    @property
    def search_text(self) -> str:
        """What the embedder and full-text index see: the title and section path give a chunk its topic."""
        head = " | ".join(part for part in (self.meta.title, self.section) if part)
        return f"{head}\n{self.text}" if head else self.text


@dataclass
class Passage:
    """A retrieved chunk, with a stable citation id, its scores and the metadata a reader needs."""

    chunk: Chunk
    score: float = 0.0
    relevance: float = 0.0
    exact_match: bool = False
    sources: dict[str, int] = field(default_factory=dict)

    @property
    def citation(self) -> str:
        return self.chunk.citation

    @property
    def doc_id(self) -> str:
        return self.chunk.meta.doc_id

    def cited(self) -> CitedPassage:
        """The model-facing shape (no access list, no internal paths)."""
        meta = self.chunk.meta
        return CitedPassage(citation=self.citation, text=self.chunk.context or self.chunk.text, title=meta.title,
                            section=self.chunk.section, page=self.chunk.page, version=meta.version,
                            effective_date=meta.effective_date, score=self.score, doc_id=meta.doc_id,
                            trusted=meta.trusted)

    def to_dict(self) -> dict[str, object]:
        return self.cited().to_dict()


def citation_id(doc_id: str, chunk_id: str) -> str:
    """The stable id of a chunk, as written in answers: ``<doc_id>#<chunk_id>``."""
    return f"{doc_id}#{chunk_id}"


def readable_by(access: Iterable[str], groups: Iterable[str]) -> bool:
    """Whether a principal with ``groups`` may read a document with access list ``access``."""
    allowed = set(access)
    return EVERYONE in allowed or bool(allowed.intersection(groups))


def allowed_groups(groups: Iterable[str]) -> list[str]:
    """The access-list values a principal matches: its groups plus everyone (``*``)."""
    return sorted({*groups, EVERYONE})

"""Chunkers: fixed-size with overlap, structure-aware (the default), and parent-child."""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from typing import Any

from toolcrib.retrieval.documents import Chunk, Document

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "Dr.", "Mr.", "Mrs.", "Ms.", "No.", "vs.", "approx.", "Fig.", "cf.")


_NUMBER = re.compile(r"^(\d+(?:\.\d+)*)\.?\s")


def enter_section(path: list[tuple[int, str]], level: int, heading: str) -> list[tuple[int, str]]:
    """The section path after ``heading``: deeper or equal levels close, and a numbered heading
    (``8.3 Late delivery``) only nests under headings whose number prefixes its own."""
    kept = [(lvl, text) for lvl, text in path if lvl < level]
    number = _NUMBER.match(heading)
    if number:
        mine = number.group(1).split(".")
        def is_prefix(text: str) -> bool:
            other = _NUMBER.match(text)
            return other is None or mine[:len(other.group(1).split("."))] == other.group(1).split(".")
        kept = [(lvl, text) for lvl, text in kept if is_prefix(text)]
    return [*kept, (level, heading)]


class Chunker(ABC):
    """Cuts a document into chunks. ``id`` and ``settings`` are recorded in the index."""

    id: str = "chunker"

    @property
    def settings(self) -> dict[str, Any]:
        return {}

    @property
    def fingerprint(self) -> str:
        """The id and settings as one string: an index refuses chunks from another fingerprint."""
        return f"{self.id}:{json.dumps(self.settings, sort_keys=True)}"

    @abstractmethod
    def chunk(self, document: Document) -> list[Chunk]:
        """The document's chunks, in reading order, with stable ids."""


def split_sentences(text: str) -> list[str]:
    """Split prose into sentences without breaking decimals (8.3) or common abbreviations."""
    pieces = _SENTENCE_END.split(text.strip())
    sentences: list[str] = []
    for piece in pieces:
        if sentences and sentences[-1].endswith(_ABBREVIATIONS):
            sentences[-1] = f"{sentences[-1]} {piece}"
        elif piece:
            sentences.append(piece)
    return sentences


def pack_sentences(text: str, max_chars: int) -> list[str]:
    """Group whole sentences into pieces of at most ``max_chars`` (a longer sentence stays whole)."""
    if len(text) <= max_chars:
        return [text]
    pieces: list[str] = []
    current = ""
    for sentence in split_sentences(text):
        if current and len(current) + 1 + len(sentence) > max_chars:
            pieces.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        pieces.append(current)
    return pieces


class StructureChunker(Chunker):
    """Chunks follow headings, sections and paragraphs, and never split a sentence.

    A heading starts a new chunk; paragraphs of one section are packed up to ``max_chars``;
    a paragraph longer than that is cut between sentences.
    """

    id = "structure"

    def __init__(self, max_chars: int = 1000) -> None:
        if max_chars < 100:
            raise ValueError("max_chars must be at least 100")
        self.max_chars = max_chars

    @property
    def settings(self) -> dict[str, Any]:
        return {"max_chars": self.max_chars}

    def sections(self, document: Document) -> list[tuple[str, int | None, str]]:
        """``(section path, first page, text)`` pieces, each within ``max_chars`` where sentences allow."""
        path: list[tuple[int, str]] = []
        out: list[tuple[str, int | None, str]] = []
        current: list[str] = []
        page: int | None = None

        def flush() -> None:
            nonlocal page
            if current:
                out.append((" > ".join(text for _, text in path), page, "\n\n".join(current)))
                current.clear()
            page = None

        for block in document.blocks:
            if block.kind == "heading":
                flush()
                path = enter_section(path, block.level, block.text)
                continue
            for piece in pack_sentences(block.text, self.max_chars):
                size = sum(len(part) + 2 for part in current)
                if current and size + len(piece) > self.max_chars:
                    flush()
                if page is None:
                    page = block.page
                current.append(piece)
        flush()
        return out

    def chunk(self, document: Document) -> list[Chunk]:
        return [
            Chunk(meta=document.meta, chunk_id=f"c{n}", text=text, section=section, page=page)
            for n, (section, page, text) in enumerate(self.sections(document), start=1)
        ]


class FixedChunker(Chunker):
    """Windows of ``size`` characters that overlap by ``overlap``, cut at whitespace."""

    id = "fixed"

    def __init__(self, size: int = 800, overlap: int = 100) -> None:
        if size < 50 or not 0 <= overlap < size:
            raise ValueError("need size >= 50 and 0 <= overlap < size")
        self.size = size
        self.overlap = overlap

    @property
    def settings(self) -> dict[str, Any]:
        return {"size": self.size, "overlap": self.overlap}

    def chunk(self, document: Document) -> list[Chunk]:
        # one string, remembering where each block starts so a chunk keeps its section and page
        text, starts = "", []
        path: list[tuple[int, str]] = []
        for block in document.blocks:
            if block.kind == "heading":
                path = enter_section(path, block.level, block.text)
            starts.append((len(text), " > ".join(t for _, t in path), block.page))
            text += block.text + "\n\n"
        text = text.rstrip()
        chunks: list[Chunk] = []
        begin = 0
        while begin < len(text):
            end = min(len(text), begin + self.size)
            if end < len(text):
                space = text.rfind(" ", begin + self.size // 2, end)
                end = space if space > 0 else end
            section, page = "", None
            for offset, sec, pg in starts:
                if offset > begin:
                    break
                section, page = sec, pg
            piece = text[begin:end].strip()
            if piece:
                chunks.append(Chunk(meta=document.meta, chunk_id=f"c{len(chunks) + 1}", text=piece,
                                    section=section, page=page))
            if end >= len(text):
                break
            nxt = max(end - self.overlap, begin + 1)
            space = text.find(" ", nxt, end)  # start the next window at a word
            begin = space + 1 if space >= 0 else nxt
        return chunks


class ParentChildChunker(Chunker):
    """Small chunks are indexed and retrieved; the section they belong to comes back as context."""

    id = "parent-child"

    def __init__(self, parent_chars: int = 2000, child_chars: int = 400) -> None:
        if child_chars >= parent_chars:
            raise ValueError("child_chars must be smaller than parent_chars")
        self.parents = StructureChunker(parent_chars)
        self.child_chars = child_chars

    @property
    def settings(self) -> dict[str, Any]:
        return {"parent_chars": self.parents.max_chars, "child_chars": self.child_chars}

    def chunk(self, document: Document) -> list[Chunk]:
        chunks: list[Chunk] = []
        for p, (section, page, parent) in enumerate(self.parents.sections(document), start=1):
            children = [piece for paragraph in parent.split("\n\n")
                        for piece in pack_sentences(paragraph, self.child_chars)]
            for k, child in enumerate(children, start=1):
                chunks.append(Chunk(meta=document.meta, chunk_id=f"c{p}-{k}", text=child, section=section,
                                    page=page, context=parent if len(children) > 1 else ""))
        return chunks

"""Loaders for Markdown, plain text, HTML and PDF, with metadata from sidecars or front matter.

Metadata keys (sidecar ``<file>.meta.toml`` / ``<file>.meta.yaml``, or Markdown front matter):
``id``, ``title``, ``version``, ``effective_date``, ``family`` (documents that are versions of one
another share it) and ``access`` (the groups that may read the document; ``["*"]`` is everyone).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import yaml

from toolcrib.retrieval.documents import EVERYONE, Block, Document, DocumentMeta

SIDECAR_SUFFIXES = (".meta.toml", ".meta.yaml", ".meta.yml")
SUPPORTED_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".text", ".html", ".htm", ".pdf"})


class UnreadableDocument(Exception):
    """A file that could not be loaded; the message says why, without a stack trace."""


@dataclass
class LoadResult:
    """Documents that loaded, and files skipped with the reason (name, reason)."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


def discover(paths: Iterable[str | Path]) -> Iterator[tuple[Path, Path]]:
    """Yield ``(file, root)`` for every non-hidden, non-sidecar file under ``paths``, sorted."""
    for raw in paths:
        path = Path(raw).resolve()
        if path.is_dir():
            for file in sorted(p for p in path.rglob("*") if p.is_file()):
                rel = file.relative_to(path)
                if any(part.startswith(".") for part in rel.parts) or _is_sidecar(file):
                    continue
                yield file, path
        elif _is_sidecar(path):
            continue
        else:
            yield path, path.parent


def load_documents(paths: Iterable[str | Path], default_access: Sequence[str] = (EVERYONE,)) -> LoadResult:
    """Load every supported file under ``paths``; report the others by name and go on."""
    result = LoadResult()
    for file, root in discover(paths):
        try:
            result.documents.append(load_document(file, root=root, default_access=default_access))
        except UnreadableDocument as exc:
            result.skipped.append((str(file), str(exc)))
    return result


def load_document(path: Path, *, root: Path | None = None, default_access: Sequence[str] = (EVERYONE,),
                  access_from_folders: bool = False) -> Document:
    """Load one file. Raises UnreadableDocument for an unsupported type or a file that fails to parse.
    ``access_from_folders``: without an ``access`` of its own, the group is the first folder under ``root``."""
    suffix = path.suffix.lower()
    parser = _PARSERS.get(suffix)
    if parser is None:
        raise UnreadableDocument(f"unsupported file type '{suffix or path.name}'")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UnreadableDocument(f"cannot read file ({exc.strerror or type(exc).__name__})") from None
    sidecar_bytes, sidecar = _read_sidecar(path)
    try:
        front, blocks, found_title = parser(raw)
    except UnreadableDocument:
        raise
    except Exception as exc:  # a parser library's own error: report its kind, not its traceback
        raise UnreadableDocument(f"cannot parse {suffix[1:].upper()} ({type(exc).__name__})") from None
    if not any(block.text.strip() for block in blocks):
        raise UnreadableDocument("no text found (a scanned PDF needs OCR first)" if suffix == ".pdf"
                                 else "no text found")
    meta = {**front, **sidecar}
    rel = path.relative_to(root) if root is not None and path.is_relative_to(root) else Path(path.name)
    doc_id = slug(str(meta.get("id") or meta.get("doc_id") or rel.with_suffix("").as_posix()))
    folder_access = [rel.parts[0]] if access_from_folders and len(rel.parts) > 1 else list(default_access)
    access = meta.get("access", folder_access)
    if isinstance(access, str):
        access = [part.strip() for part in access.split(",") if part.strip()]
    if not isinstance(access, list) or not access:
        raise UnreadableDocument("metadata 'access' must be a non-empty list of group names")
    version = _text(meta.get("version"))
    return Document(
        meta=DocumentMeta(
            doc_id=doc_id,
            title=_text(meta.get("title")) or found_title or _title_from_name(path),
            source_path=str(path),
            content_hash=hashlib.sha256(raw + b"\0" + sidecar_bytes).hexdigest(),
            access=tuple(sorted({str(group) for group in access})),
            version=version,
            effective_date=_text(meta.get("effective_date") or meta.get("effective")),
            family=slug(str(meta.get("family") or _family_of(doc_id))),
            trusted=not _flag(meta.get("untrusted")),
        ),
        blocks=tuple(blocks),
    )


def _flag(value: object) -> bool:
    """A metadata yes/no: TOML booleans, or "true"/"yes"/"1" in front matter."""
    return value is True or str(value).strip().lower() in ("true", "yes", "1")


def slug(value: str) -> str:
    """A citation-safe id: lower case letters, digits and ``. _ / -``."""
    cleaned = re.sub(r"[^a-z0-9._/-]+", "-", value.strip().lower()).strip("-/")
    return cleaned or "document"


def _family_of(doc_id: str) -> str:
    # "returns-policy-v2" and "returns-policy-v1" are versions of one family by default
    return re.sub(r"[-_.]?v\d+(?:[._]\d+)*$", "", doc_id) or doc_id


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dt.date, dt.datetime)):
        return value.isoformat()
    return str(value).strip()


def _title_from_name(path: Path) -> str:
    return re.sub(r"[-_]+", " ", path.stem).strip().capitalize()


def _is_sidecar(path: Path) -> bool:
    return path.name.endswith(SIDECAR_SUFFIXES)


def _read_sidecar(path: Path) -> tuple[bytes, dict[str, Any]]:
    for suffix in SIDECAR_SUFFIXES:
        sidecar = path.with_name(path.name + suffix)
        if not sidecar.exists():
            continue
        raw = sidecar.read_bytes()
        try:
            data = tomllib.loads(raw.decode("utf-8")) if suffix.endswith("toml") else yaml.safe_load(raw)
        except (UnicodeDecodeError, tomllib.TOMLDecodeError, yaml.YAMLError):
            raise UnreadableDocument(f"metadata file '{sidecar.name}' does not parse") from None
        if not isinstance(data, dict):
            raise UnreadableDocument(f"metadata file '{sidecar.name}' must hold a table of keys")
        return raw, data
    return b"", {}


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# -- Markdown -------------------------------------------------------------------------------------

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)\n---[ \t]*\n", re.DOTALL)
_ATX = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^(```|~~~)")


def _parse_markdown(raw: bytes) -> tuple[dict[str, Any], list[Block], str]:
    text = _decode(raw).replace("\r\n", "\n")
    front: dict[str, Any] = {}
    match = _FRONT_MATTER.match(text)
    if match:
        try:
            loaded = yaml.safe_load(match.group(1))
        except yaml.YAMLError:
            raise UnreadableDocument("front matter does not parse as YAML") from None
        if isinstance(loaded, dict):
            front = loaded
        text = text[match.end():]
    blocks: list[Block] = []
    paragraph: list[str] = []
    in_fence = False
    title = ""

    def flush() -> None:
        if paragraph:
            blocks.append(Block("paragraph", "\n".join(paragraph).strip()))
            paragraph.clear()

    for line in text.split("\n"):
        if _FENCE.match(line.strip()):
            in_fence = not in_fence
            paragraph.append(line)
            continue
        heading = None if in_fence else _ATX.match(line)
        if heading:
            flush()
            level, heading_text = len(heading.group(1)), heading.group(2).strip()
            blocks.append(Block("heading", heading_text, level=level))
            if level == 1 and not title:
                title = heading_text
        elif not line.strip() and not in_fence:
            flush()
        else:
            paragraph.append(line)
    flush()
    return front, [b for b in blocks if b.text], title


# -- plain text ----------------------------------------------------------------------------------

_NUMBERED_HEADING = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[A-Z]\.|[IVX]+\.)\s+[A-Z(].{0,70}$")


_CLAUSE_START = re.compile(r"^\s*\d+(?:\.\d+)+\.?\s+\S")


def _heading_level(line: str) -> int:
    """A short numbered line with no closing punctuation reads as a heading: ``8.3 Late delivery``."""
    stripped = line.strip()
    if not _NUMBERED_HEADING.match(stripped) or stripped[-1] in ".,;:" or len(stripped) > 80:
        return 0
    number = stripped.split()[0].rstrip(".")
    return number.count(".") + 1


def _parse_text(raw: bytes) -> tuple[dict[str, Any], list[Block], str]:
    text = _decode(raw).replace("\r\n", "\n")
    blocks: list[Block] = []
    for part in re.split(r"\n\s*\n", text):
        part = part.strip()
        if not part:
            continue
        lines = part.split("\n")
        level = _heading_level(lines[0])
        if level:
            blocks.append(Block("heading", lines[0].strip(), level=level))
            lines = lines[1:]
        elif len(lines) == 2 and re.fullmatch(r"[=-]{3,}", lines[1].strip()):
            blocks.append(Block("heading", lines[0].strip(), level=1 if "=" in lines[1] else 2))
            lines = []
        if lines:
            blocks.append(Block("paragraph", "\n".join(lines).strip()))
    return {}, blocks, ""


# -- HTML ----------------------------------------------------------------------------------------

_SKIP_TAGS = frozenset({"script", "style", "nav", "footer", "header", "aside", "noscript", "form",
                        "template", "svg", "button", "iframe"})
_VOID_TAGS = frozenset({"br", "hr", "img", "input", "meta", "link", "area", "base", "col", "embed",
                        "source", "track", "wbr"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_BLOCK_TAGS = frozenset({"p", "li", "pre", "blockquote", "td", "th", "dd", "dt", "div", "section",
                         "article", "main", "tr", "table", "ul", "ol", "figcaption", "caption"})


class _MainText(HTMLParser):
    """Collect headings and paragraphs, leaving out navigation, scripts, headers and footers."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self.title = ""
        self._skip_depth = 0
        self._in_title = False
        self._heading: int = 0
        self._buffer: list[str] = []

    def _flush(self) -> None:
        text = re.sub(r"[ \t\r\f\v]+", " ", "".join(self._buffer))
        text = "\n".join(line.strip() for line in text.split("\n") if line.strip())
        self._buffer.clear()
        if not text:
            return
        if self._heading:
            self.blocks.append(Block("heading", " ".join(text.split()), level=self._heading))
        else:
            self.blocks.append(Block("paragraph", text))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID_TAGS:
            if tag == "br" and not self._skip_depth:
                self._buffer.append("\n")
            return
        role = dict(attrs).get("role") or ""
        if self._skip_depth or tag in _SKIP_TAGS or role in ("navigation", "banner", "contentinfo"):
            self._skip_depth += 1
            return
        if tag == "title":
            self._in_title = True
        elif tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID_TAGS:
            return
        if self._skip_depth:
            self._skip_depth -= 1
            return
        if tag == "title":
            self._in_title = False
        elif tag in _HEADINGS:
            self._flush()
            self._heading = 0
        elif tag in _BLOCK_TAGS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self._skip_depth:
            return
        if self._in_title:
            self.title += data
        else:
            self._buffer.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def _parse_html(raw: bytes) -> tuple[dict[str, Any], list[Block], str]:
    parser = _MainText()
    parser.feed(_decode(raw))
    parser.close()
    title = " ".join(parser.title.split())
    if not title:
        title = next((b.text for b in parser.blocks if b.kind == "heading" and b.level == 1), "")
    return {}, parser.blocks, title


# -- PDF -----------------------------------------------------------------------------------------

def _parse_pdf(raw: bytes) -> tuple[dict[str, Any], list[Block], str]:
    import io
    import logging

    from pypdf import PdfReader

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # pypdf warns loudly about harmless quirks
    reader = PdfReader(io.BytesIO(raw))
    if reader.is_encrypted:
        raise UnreadableDocument("PDF is encrypted")
    blocks: list[Block] = []
    for number, page in enumerate(reader.pages, start=1):
        text = (page.extract_text() or "").replace("\r\n", "\n")
        for part in re.split(r"\n\s*\n", text):
            paragraph: list[str] = []
            for line in part.split("\n"):
                level = _heading_level(line)
                if level:
                    if paragraph:
                        blocks.append(Block("paragraph", " ".join(paragraph), page=number))
                        paragraph = []
                    blocks.append(Block("heading", line.strip(), level=level, page=number))
                elif line.strip():
                    if paragraph and _CLAUSE_START.match(line):  # "8.3 For each ..." starts a clause
                        blocks.append(Block("paragraph", " ".join(paragraph), page=number))
                        paragraph = []
                    paragraph.append(line.strip())
            if paragraph:
                blocks.append(Block("paragraph", " ".join(paragraph), page=number))
    title = ""
    if reader.metadata is not None and reader.metadata.title:
        title = str(reader.metadata.title).strip()
    return {}, blocks, title


_PARSERS: dict[str, Callable[[bytes], tuple[dict[str, Any], list[Block], str]]] = {
    ".md": _parse_markdown, ".markdown": _parse_markdown,
    ".txt": _parse_text, ".text": _parse_text,
    ".html": _parse_html, ".htm": _parse_html,
    ".pdf": _parse_pdf,
}

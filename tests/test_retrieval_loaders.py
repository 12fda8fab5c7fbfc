"""Loaders and chunkers: Markdown, text, HTML and PDF keep their text, structure and metadata."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from toolcrib.retrieval import (
    FixedChunker,
    ParentChildChunker,
    StructureChunker,
    load_document,
    load_documents,
)
from toolcrib.retrieval.chunkers import split_sentences


def tiny_pdf(pages: list[list[str]], title: str = "") -> bytes:
    """A minimal valid PDF, one Helvetica text line per entry, pages in order."""
    objects: list[bytes] = []
    kids = []
    n_pages = len(pages)
    # 1 catalog, 2 pages, 3 font, then (page, content) pairs, then info
    for i, lines in enumerate(pages):
        page_no, content_no = 4 + 2 * i, 5 + 2 * i
        kids.append(f"{page_no} 0 R")
        ops = ["BT /F1 11 Tf 14 TL 72 760 Td"]
        for line in lines:
            esc = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"({esc}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {content_no} 0 R "
                       f"/Resources << /Font << /F1 3 0 R >> >> >>".encode())
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info_no = 4 + 2 * n_pages
    head = [b"<< /Type /Catalog /Pages 2 0 R >>",
            f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {n_pages} >>".encode(),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    body = head + objects + [f"<< /Title ({title}) >>".encode()]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, obj in enumerate(body, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + obj + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(body) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(body) + 1} /Root 1 0 R /Info {info_no} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def test_markdown_front_matter_sections_and_access(tmp_path: Path) -> None:
    (tmp_path / "hr.md").write_text(
        "---\ndoc_id: hr-handbook\ntitle: HR Handbook\nversion: '4.0'\neffective_date: 2026-01-01\n"
        "access: [hr]\n---\n# HR Handbook\n\n## 2. Pay bands\n\nBand K2 pays 36,000 to 46,000 EUR.\n")
    doc = load_document(tmp_path / "hr.md", root=tmp_path)
    assert (doc.meta.doc_id, doc.meta.title, doc.meta.version) == ("hr-handbook", "HR Handbook", "4.0")
    assert doc.meta.effective_date == "2026-01-01"
    assert doc.meta.access == ("hr",)
    assert doc.meta.source_path == str(tmp_path / "hr.md")
    chunks = StructureChunker().chunk(doc)
    assert [c.section for c in chunks] == ["HR Handbook > 2. Pay bands"]
    assert chunks[0].citation == "hr-handbook#c1"


def test_text_with_toml_sidecar_and_workspace_default_access(tmp_path: Path) -> None:
    (tmp_path / "terms.txt").write_text("1. Scope\n\nThese terms apply.\n\n"
                                        "8.3 Late delivery\n\nTwo percent per week.\n")
    (tmp_path / "terms.txt.meta.toml").write_text('doc_id = "terms"\nversion = "2"\naccess = ["support", "admin"]\n')
    (tmp_path / "open.txt").write_text("Anyone may read this.\n")
    result = load_documents([tmp_path], default_access=["staff"])
    by_id = {d.meta.doc_id: d for d in result.documents}
    assert set(by_id) == {"terms", "open"}  # the sidecar is metadata, not a document
    assert by_id["terms"].meta.access == ("admin", "support")
    assert by_id["open"].meta.access == ("staff",)
    sections = [c.section for c in StructureChunker().chunk(by_id["terms"])]
    assert sections == ["1. Scope", "8.3 Late delivery"]


def test_yaml_sidecar(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("Body text here.\n")
    (tmp_path / "a.md.meta.yaml").write_text("title: From YAML\naccess: [lab]\n")
    doc = load_document(tmp_path / "a.md", root=tmp_path)
    assert (doc.meta.title, doc.meta.access) == ("From YAML", ("lab",))


def test_html_keeps_main_text_not_navigation_scripts_or_footer(tmp_path: Path) -> None:
    (tmp_path / "faq.html").write_text(
        "<html><head><title>Supplier FAQ</title><script>var secret = 'tracking';</script>"
        "<style>p {color: red}</style></head><body>"
        "<nav><a href='/'>Home</a> | <a href='/login'>Log in</a></nav>"
        "<header>Site banner</header><main><h1>Supplier FAQ</h1><h2>When do you pay?</h2>"
        "<p>We pay within <b>30 days</b> of the invoice.</p><ul><li>EU: 30 days</li></ul></main>"
        "<footer>Copyright Kestrel</footer></body></html>")
    doc = load_document(tmp_path / "faq.html", root=tmp_path)
    assert doc.meta.title == "Supplier FAQ"
    text = doc.text
    assert "We pay within 30 days of the invoice." in text and "EU: 30 days" in text
    for junk in ("secret", "color", "Home", "Log in", "Site banner", "Copyright"):
        assert junk not in text
    assert StructureChunker().chunk(doc)[0].section == "Supplier FAQ > When do you pay?"


def test_pdf_text_layer_keeps_page_numbers(tmp_path: Path) -> None:
    (tmp_path / "contract.pdf").write_bytes(tiny_pdf(
        [["8. Warranty", "8.1 Parts are covered for two years.", "8.2 Claims go to support."],
         ["9. Late delivery", "9.3 The supplier pays 2% per week of delay."]], title="Supply terms"))
    doc = load_document(tmp_path / "contract.pdf", root=tmp_path)
    assert doc.meta.title == "Supply terms"
    chunks = StructureChunker().chunk(doc)
    late = next(c for c in chunks if "2% per week" in c.text)
    assert (late.page, late.section) == (2, "9. Late delivery")
    assert next(c for c in chunks if "two years" in c.text).page == 1


def test_unsupported_and_unreadable_files_are_reported_by_name_and_skipped(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text("# Good\n\nReadable text.\n")
    (tmp_path / "data.xlsx").write_bytes(b"PK\x03\x04")
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 this is not a pdf")
    (tmp_path / "bad.md").write_text("text")
    (tmp_path / "bad.md.meta.toml").write_text("access = [unclosed")
    (tmp_path / ".hidden.md").write_text("ignored")
    result = load_documents([tmp_path])
    assert [d.meta.doc_id for d in result.documents] == ["good"]
    skipped = {Path(name).name: reason for name, reason in result.skipped}
    assert set(skipped) == {"data.xlsx", "broken.pdf", "bad.md"}
    assert "unsupported" in skipped["data.xlsx"]
    assert "Traceback" not in "".join(skipped.values())


def test_structure_chunker_never_splits_a_sentence() -> None:
    from toolcrib.retrieval.documents import Block, Document, DocumentMeta

    sentences = [f"Sentence number {i} talks about clause {i}.{i} and ends here." for i in range(40)]
    doc = Document(DocumentMeta("d", "D", "d.md", "h"),
                   (Block("heading", "Long", 1), Block("paragraph", " ".join(sentences))))
    chunks = StructureChunker(max_chars=300).chunk(doc)
    assert len(chunks) > 5
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert all(s in sentences for s in split_sentences(chunk.text))
    assert " ".join(c.text for c in chunks) == " ".join(sentences)


def test_fixed_chunker_overlaps_and_parent_child_returns_the_section() -> None:
    from toolcrib.retrieval.documents import Block, Document, DocumentMeta

    words = " ".join(f"w{i}" for i in range(400))
    doc = Document(DocumentMeta("d", "D", "d.txt", "h"), (Block("paragraph", words),))
    chunks = FixedChunker(size=200, overlap=50).chunk(doc)
    assert len(chunks) > 5
    for a, b in itertools.pairwise(chunks):
        assert a.text.split()[-1] in b.text.split()[:15]  # the tail of one starts the next
    assert chunks[0].text.startswith("w0 ") and chunks[-1].text.endswith("w399")

    section = " ".join(f"Fact {i} is stated in this sentence." for i in range(30))
    doc = Document(DocumentMeta("d", "D", "d.md", "h"), (Block("heading", "Facts", 1), Block("paragraph", section)))
    children = ParentChildChunker(parent_chars=2000, child_chars=200).chunk(doc)
    assert len(children) > 3 and all(len(c.text) <= 200 for c in children)
    assert all(c.context == section for c in children)
    assert len({c.chunk_id for c in children}) == len(children)
    assert StructureChunker().fingerprint != StructureChunker(500).fingerprint


@pytest.mark.parametrize("text, expected", [
    ("Clause 8.3 applies. Then 2.5 kg is shipped. E.g. this stays.", 3),
    ("One sentence only", 1),
])
def test_split_sentences_keeps_decimals(text: str, expected: int) -> None:
    assert len(split_sentences(text)) == expected

"""Regenerate the demo workspace's PDFs from ``pdf_sources/*.md`` with a tiny PDF writer.

Standard library only, deterministic output (no timestamps), text drawn with the standard
Helvetica fonts in WinAnsi encoding so any PDF text extractor reads it back. Handles the small
Markdown subset the sources use: ``#``/``##`` headings, paragraphs, ``-`` bullets and pipe tables.

    python -m toolcrib.demo.make_pdfs            # writes workspace/docs/<name>.pdf
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).parent
SOURCES = HERE / "pdf_sources"
OUTPUT = HERE / "workspace" / "docs"
AUTHOR = "Kestrel Instruments Ltd"

# Adobe core-font advance widths (1/1000 em) for characters 32..126, from Helvetica.afm and
# Helvetica-Bold.afm; anything outside that range uses _OTHER_WIDTHS or 556.
_HELVETICA = (
    "278 278 355 556 556 889 667 191 333 333 389 584 278 333 278 278 556 556 556 556 556 556 556 556 "
    "556 556 278 278 584 584 584 556 1015 667 667 722 722 667 611 778 722 278 500 667 556 833 722 778 "
    "667 778 722 667 611 722 667 944 667 667 611 278 278 278 469 556 333 556 556 500 556 556 278 556 "
    "556 222 222 500 222 833 556 556 556 556 333 500 278 556 500 722 500 500 500 334 260 334 584")
_HELVETICA_BOLD = (
    "278 333 474 556 556 889 722 238 333 333 389 584 278 333 278 278 556 556 556 556 556 556 556 556 "
    "556 556 333 333 584 584 584 611 975 722 722 722 722 667 611 778 722 278 556 722 611 833 722 778 "
    "667 778 722 667 611 722 667 944 667 667 611 333 278 333 584 556 333 556 611 556 611 556 333 611 "
    "611 278 278 556 278 889 611 611 611 611 389 556 333 611 556 778 556 556 500 389 280 389 584")
_OTHER_WIDTHS = {"°": 400, "ß": 611, "Ó": 778, "Ä": 667, "–": 556, "’": 222}
WIDTHS = {
    name: {chr(32 + i): int(w) for i, w in enumerate(table.split())}
    for name, table in (("F1", _HELVETICA), ("F2", _HELVETICA_BOLD))
}

PAGE_W, PAGE_H = 595.0, 842.0  # A4 in points
MARGIN = 60.0
BODY, LEADING = 10.0, 13.5


def text_width(text: str, font: str, size: float) -> float:
    table = WIDTHS[font]
    return sum(table.get(ch, _OTHER_WIDTHS.get(ch, 556)) for ch in text) * size / 1000.0


def wrap(text: str, font: str, size: float, width: float) -> list[str]:
    """Greedy word wrap to ``width`` points."""
    lines: list[str] = []
    current = ""
    for word in text.split():
        candidate = f"{current} {word}" if current else word
        if current and text_width(candidate, font, size) > width:
            lines.append(current)
            current = word
        else:
            current = candidate
    return [*lines, current] if current else lines or [""]


def _pdf_string(text: str) -> str:
    out = []
    for byte in text.encode("cp1252", errors="replace"):
        ch = chr(byte)
        if ch in "()\\":
            out.append("\\" + ch)
        elif 32 <= byte < 127:
            out.append(ch)
        else:
            out.append(f"\\{byte:03o}")
    return "(" + "".join(out) + ")"


@dataclass
class Layout:
    """Places text lines on pages, top to bottom, starting a new page when one is full."""

    footer: str
    pages: list[list[str]] = field(default_factory=list)
    y: float = 0.0

    def __post_init__(self) -> None:
        self.new_page()

    def new_page(self) -> None:
        self.pages.append([])
        self.y = PAGE_H - MARGIN

    def space(self, points: float) -> None:
        self.y -= points

    def need(self, points: float) -> None:
        if self.y - points < MARGIN + 20:
            self.new_page()

    def line(self, text: str, *, x: float = MARGIN, font: str = "F1", size: float = BODY,
             leading: float = LEADING, advance: bool = True) -> None:
        if advance:
            self.need(leading)
            self.y -= leading
        self.pages[-1].append(f"BT /{font} {size:g} Tf {x:.2f} {self.y:.2f} Td {_pdf_string(text)} Tj ET")

    def rule(self, y_offset: float = 4.0) -> None:
        y = self.y - y_offset
        self.pages[-1].append(f"0.5 w {MARGIN:.2f} {y:.2f} m {PAGE_W - MARGIN:.2f} {y:.2f} l S")


def _clean(text: str) -> str:
    return re.sub(r"\*\*(.+?)\*\*", r"\1", text).replace("`", "")


def _table(layout: Layout, rows: list[list[str]]) -> None:
    usable = PAGE_W - 2 * MARGIN
    ncols = len(rows[0])
    natural = [max(text_width(r[i], "F2" if n == 0 else "F1", BODY) for n, r in enumerate(rows) if i < len(r)) + 10
               for i in range(ncols)]
    scale = min(1.0, usable / sum(natural))
    widths = [w * scale for w in natural]
    for index, row in enumerate(rows):
        font = "F2" if index == 0 else "F1"
        cells = [wrap(row[i] if i < len(row) else "", font, BODY, widths[i] - 6) for i in range(ncols)]
        height = max(len(c) for c in cells)
        layout.need(height * LEADING + 4)
        for line_no in range(height):
            layout.y -= LEADING
            x = MARGIN
            for col, cell in enumerate(cells):
                if line_no < len(cell) and cell[line_no]:
                    layout.line(cell[line_no], x=x, font=font, advance=False)
                x += widths[col]
        if index == 0:
            layout.rule(3.0)
        layout.space(3.0)
    layout.space(6.0)


def render(markdown: str, footer: str) -> Layout:
    """Lay out the Markdown subset onto pages."""
    layout = Layout(footer=footer)
    usable = PAGE_W - 2 * MARGIN
    blocks = re.split(r"\n\s*\n", markdown.strip())
    for block in blocks:
        lines = block.strip().splitlines()
        first = lines[0]
        if first.startswith("# "):
            for part in wrap(_clean(first[2:]), "F2", 16, usable):
                layout.line(part, font="F2", size=16, leading=20)
            layout.rule(6.0)
            layout.space(12)
        elif first.startswith("## "):
            layout.need(70)  # keep a heading with the text below it
            layout.space(6)
            layout.line(_clean(first[3:]), font="F2", size=12, leading=16)
            layout.space(3)
        elif first.startswith("|"):
            rows = [[_clean(c.strip()) for c in ln.strip().strip("|").split("|")]
                    for ln in lines if not re.fullmatch(r"\|?[\s:|-]+\|?", ln.strip())]
            _table(layout, rows)
        elif first.startswith("- "):
            items = re.split(r"\n(?=- )", block.strip())
            for item in items:
                text = _clean(" ".join(item[2:].split()))
                for n, part in enumerate(wrap(text, "F1", BODY, usable - 14)):
                    if n == 0:
                        layout.line("-", x=MARGIN + 2)
                        layout.line(part, x=MARGIN + 14, advance=False)
                    else:
                        layout.line(part, x=MARGIN + 14)
            layout.space(5)
        else:
            for part in wrap(_clean(" ".join(block.split())), "F1", BODY, usable):
                layout.line(part)
            layout.space(5)
    return layout


def pdf_bytes(layout: Layout, title: str) -> bytes:
    """Serialise laid-out pages as a PDF 1.4 file (uncompressed, deterministic)."""
    objects: list[bytes] = []

    def add(body: str | bytes) -> int:
        objects.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objects)

    catalog = add("")  # filled in below, once the pages object number is known
    pages_obj = add("")
    font_regular = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    font_bold = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    kids = []
    total = len(layout.pages)
    for number, ops in enumerate(layout.pages, start=1):
        footer = f"{layout.footer}  -  page {number} of {total}"
        ops = [*ops, f"BT /F1 8 Tf {MARGIN:.2f} {MARGIN - 20:.2f} Td {_pdf_string(footer)} Tj ET"]
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        kids.append(add(
            f"<< /Type /Page /Parent {pages_obj} 0 R /MediaBox [0 0 {PAGE_W:g} {PAGE_H:g}] "
            f"/Resources << /Font << /F1 {font_regular} 0 R /F2 {font_bold} 0 R >> >> /Contents {content} 0 R >>"))
    objects[catalog - 1] = f"<< /Type /Catalog /Pages {pages_obj} 0 R >>".encode("latin-1")
    objects[pages_obj - 1] = (f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] "
                              f"/Count {len(kids)} >>").encode("latin-1")
    info = add(f"<< /Title {_pdf_string(title)} /Author {_pdf_string(AUTHOR)} /Producer (toolcrib make_pdfs) >>")

    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root %d 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, catalog, info, xref)
    return bytes(out)


def build(source: Path, output_dir: Path = OUTPUT) -> Path:
    """Render one Markdown source into ``output_dir/<stem>.pdf``; returns the path written."""
    markdown = source.read_text(encoding="utf-8")
    title = _clean(markdown.splitlines()[0].lstrip("# ").strip())
    target = output_dir / f"{source.stem}.pdf"
    target.write_bytes(pdf_bytes(render(markdown, footer=f"{AUTHOR} - {title}"), title))
    return target


def main() -> None:
    for source in sorted(SOURCES.glob("*.md")):
        print(build(source))


if __name__ == "__main__":
    main()

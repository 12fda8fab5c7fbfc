"""The answer as a selection: a small model says which lines of the evidence answer, and code writes them.

Asked to write its answer, a 1.5B model restates a record's fields imperfectly, cites a label where a value
belongs, pastes a result's JSON, rambles ("I will follow these steps...") or stops mid-sentence. Here its
final ask shows the evidence a line each (a record's field, a listed row, a passage's sentence) and its
reply is JSON under a grammar built from those lines: the lines that answer, each copied exactly (a small
model copies what answers; given keys to pick, it picked the first ones), for a yes/no question the
verdict, and where a figure must be worked out, the operation over the figures of the lines picked. Code
writes the answer: each field with its value exactly as the record holds it, each sentence quoted with its
document, a computation with its operands, each followed by its citation. The grammar admits no other
text, so no value is invented, no citation stands in a value's place, and nothing is cut.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from toolcrib.agent.arithmetic import figure_text, figures
from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.agent.quotes import inline
from toolcrib.agent.ran import described_call
from toolcrib.agent.records import ASKING, cell, heading
from toolcrib.policy.scanner import QUARANTINED
from toolcrib.retrieval.evidence import CitedPassage, Evidence
from toolcrib.retrieval.excerpt import cut, units
from toolcrib.text import stems
from toolcrib.tools.result import CallOutcome

MAX_PICKS = 6  # units one answer names
MAX_UNITS = 30  # lines of one result or passage (a long table's rest is counted, not shown)
_QUOTE_CHARS = 400
_REMOVED = QUARANTINED.split(" (", 1)[0]  # the mark left where instruction-like text was taken out
_LISTED = re.compile(r'^\s*\{\s*"answer"\s*:\s*\[(.*)', re.DOTALL)  # a reply's lines, up to where it stops
_WRITTEN = re.compile(r'"((?:[^"\\]|\\.)*)"\s*[,\]]')  # a line written out in full, its closing quote and all
_CLAUSE = re.compile(r"^\s*\d+(?:\.\d+)*\s+")  # "3.1 One combined vaccine ...": the clause's number
_YES_NO = re.compile(r"^\s*(?:can|could|is|are|was|were|does|do|did|should|will|would|may|must|has|have|had)\b",
                     re.IGNORECASE)

# operation -> (how it is computed from its operands, in order; how it is written)
OPERATIONS: dict[str, tuple[Callable[[list[float]], float | None], str]] = {
    "sum": (lambda xs: sum(xs) if len(xs) >= 2 else None, " + "),
    "difference": (lambda xs: xs[0] - xs[1] if len(xs) == 2 else None, " - "),  # the larger first
    "product": (lambda xs: xs[0] * xs[1] if len(xs) == 2 else None, " × "),
    "ratio": (lambda xs: xs[0] / xs[1] if len(xs) == 2 and xs[1] else None, " ÷ "),
    "average": (lambda xs: sum(xs) / len(xs) if len(xs) >= 2 else None, ", "),
    "percent_of": (lambda xs: xs[0] * xs[1] / 100 if len(xs) == 2 else None, "% of "),
    "less_percent": (lambda xs: xs[0] * (1 - xs[1] / 100) if len(xs) == 2 else None, " less % "),
}


@dataclass(frozen=True)
class Unit:
    """One thing of the evidence an answer can state: a record's field, a listed row, a passage's sentence."""

    citation: str
    text: str  # the value, the row or the sentence, as the evidence writes it
    name: str = ""  # the field's name ("due_on"), "" for a row or a sentence
    subject: str = ""  # what it belongs to: a record ("Pet PET-202"), a document and its section
    quoted: bool = False  # a passage's sentence: quoted, not stated

    @property
    def line(self) -> str:
        """The unit as the brief shows it, and as the reply copies it."""
        return f"{self.name}: {self.text}" if self.name else self.text


@dataclass
class UnitBrief:
    """The evidence as the selection ask shows it (each unit on a line of its own), and the units by their text."""

    text: str = ""
    units: dict[str, Unit] = field(default_factory=dict)  # by text: the first unit that writes it

    def schema(self) -> str:
        """The reply's JSON Schema: the lines that answer, each one of this brief's, the verdict of a yes/no
        question, and an operation over the figures of the lines picked, where one must be worked out."""
        lines = list(self.units) or [""]
        return json.dumps({
            "type": "object",
            "properties": {
                "answer": {"type": "array", "items": {"enum": lines}, "maxItems": MAX_PICKS},
                "verdict": {"enum": ["yes", "no", "neither"]},
                "compute": {"enum": ["none", *OPERATIONS]},
            },
            "required": ["answer", "verdict", "compute"],
            "additionalProperties": False,
        }, ensure_ascii=False)

    def compose(self, reply: str, question: str) -> str | None:
        """The answer code writes from ``reply`` (the model's selection, as JSON): the verdict where the
        question asks yes or no, each picked unit with its citation, and the computation over the figures
        of the picked units (of a reply cut at its token cap, the lines it wrote in full). None when it
        picks nothing: a small model picks nothing where the answer takes reasoning over what was found as
        often as where nothing answers, so that is for the written answer to say."""
        try:
            chosen = json.loads(reply)
        except ValueError:  # cut at the token cap: the lines it wrote in full still answer
            listed = _LISTED.search(reply)
            chosen = {"answer": [json.loads(f'"{m}"') for m in _WRITTEN.findall(listed.group(1))] if listed else []}
        if not isinstance(chosen, dict):
            return None
        picked = [self.units[k] for k in dict.fromkeys(_keys(chosen.get("answer"))) if k in self.units]
        if not picked:
            return None
        picked += self._named(picked, question)
        lines = [_verdict(str(chosen.get("verdict") or ""), question), *_stated(picked),
                 _computed(str(chosen.get("compute") or "none"), picked)]
        return " ".join(line for line in lines if line)


    def _named(self, picked: Sequence[Unit], question: str) -> list[Unit]:
        """The other fields of the records picked from that the question names, by a content word of the
        field's name or value ("which shelf" names "location: shelf B2", "what size" names
        "size: 32 ml"): a small model picks the first thing asked and leaves the rest."""
        asked = stems(question) - ASKING
        records = {u.citation for u in picked if not u.quoted}
        return [u for u in self.units.values() if u.citation in records and u not in picked and not u.quoted
                and stems(u.line.replace("_", " ")) & asked]


def unit_brief(ledger: EvidenceLedger, outcomes: Sequence[CallOutcome]) -> UnitBrief:
    """The brief for the selection ask: each result and passage numbered in reading order, its units a
    line each; what found nothing or did not run is said once."""
    brief = UnitBrief()
    lines: list[str] = []
    number = 0

    def add(unit: Unit) -> None:
        brief.units.setdefault(unit.line, unit)
        lines.append(f"  {unit.line}")

    for outcome in outcomes:
        if outcome.status == "dropped":
            continue
        call = described_call(outcome.call.name, outcome.call.arguments)
        cid = ledger.citation_of(outcome.call.id) if outcome.ok else None
        if cid is None or cid in ledger.found_nothing:
            searched = Evidence.from_payload(outcome.payload.get("data")) if outcome.ok else None
            if not outcome.ok:
                lines.append(f"- {call}: not run")
            elif cid is not None or (searched is not None and not searched.sufficient):
                lines.append(f"- {call}: found nothing")
            continue
        number += 1
        subject, key = _subject(outcome)
        trust = " (low trust)" if outcome.flags else ""
        lines.append(f"[{number}] {call} returned{trust}:")
        items = [(n, t) for n, t in _record_units(outcome.payload.get("data")) if t != key]
        for name, text in items[:MAX_UNITS]:
            add(Unit(cid, text, name, subject))
        if len(items) > MAX_UNITS:
            lines.append(f"  (and {len(items) - MAX_UNITS} more)")
    for cid, passage in ledger.passages.items():
        number += 1
        outside = "" if passage.trusted else " (written outside the organisation)"
        lines.append(f"[{number}] {_document(passage)}{outside}:")
        shown = 0
        for unit in units(passage.text):
            if unit.kind == "heading":
                lines.append(f"  {unit.text.lstrip('#').strip()}")
            elif shown < MAX_UNITS and _REMOVED not in unit.text:  # what code removed as instructions answers nothing
                add(Unit(cid, inline(unit.text), subject=_document(passage), quoted=True))
                shown += 1
    brief.text = "\n".join(lines)
    return brief


def _record_units(data: Any) -> Iterator[tuple[str, str]]:
    """A tool's data as (name, text) units: each scalar field by its path, each row of a table or list of
    records as one unit of its columns' values."""
    if isinstance(data, Mapping) and isinstance(data.get("columns"), list) and isinstance(data.get("rows"), list):
        columns = [heading(str(c)) for c in data["columns"]]
        for row in data["rows"]:
            if isinstance(row, list):
                yield "", "; ".join(f"{c}: {_shown(v)}" for c, v in zip(columns, row, strict=False))
        return
    yield from _fields(data, "")


def _fields(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, Mapping):
        for name, item in value.items():
            if name not in ("found", "ok", "message", "truncated"):
                yield from _fields(item, f"{path}.{name}" if path else str(name))
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        for item in value:
            if all(not isinstance(v, (Mapping, list)) for v in item.values()):
                yield path, "; ".join(f"{heading(str(k))}: {_shown(v)}" for k, v in item.items())
            else:
                yield from _fields(item, path)
    elif value not in (None, "", []):
        yield path, _shown(value)


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value)
    return cell(value)


def _subject(outcome: CallOutcome) -> tuple[str, str]:
    """What a result is about, named by the one argument it was given ("Pet PET-202" for
    ``lookup_pet(pet_id="PET-202")``), and that value; ("", "") for a call given none or several, or a
    text (a query, a search)."""
    arguments = outcome.call.arguments
    if len(arguments) != 1:
        return "", ""
    name, value = next(iter(arguments.items()))
    if not isinstance(value, str) or not value.strip() or " " in value.strip():
        return "", ""
    label = heading(re.sub(r"_id$", "", name))
    return f"{label[:1].upper()}{label[1:]} {value}", value


def _document(passage: CitedPassage) -> str:
    """The passage's document, version and section, as the answer names where a quote stands."""
    title = passage.title or passage.doc_id
    version = f"version {passage.version}" if passage.version and passage.version not in title else ""
    section = passage.section.rsplit(" > ", 1)[-1].strip()
    return ", ".join(x for x in (title, version, section if section.casefold() not in title.casefold() else "") if x)


def _keys(value: Any) -> list[str]:
    return [str(k) for k in value] if isinstance(value, list) else []


def _verdict(verdict: str, question: str) -> str:
    """"Yes." or "No." where the question (its first sentence that asks) asks yes or no; "" otherwise."""
    asks = [s for s in re.split(r"(?<=[.!?])\s+", question.strip()) if s.endswith("?")] or [question]
    if verdict in ("yes", "no") and _YES_NO.match(asks[0]):
        return f"{verdict.capitalize()}."
    return ""


def _stated(picked: Sequence[Unit]) -> list[str]:
    """The picked units as sentences, in the order picked: a record's fields in one sentence under what it
    is about, each sentence of a document quoted, each with its citation."""
    lines: list[str] = []
    done: set[int] = set()
    for i, unit in enumerate(picked):
        if i in done:
            continue
        together = [j for j in range(i, len(picked)) if picked[j].citation == unit.citation]
        done.update(together)
        same = [picked[j] for j in together]
        if unit.quoted:
            quote = " ".join(u.text for u in same)
            quote = cut(quote, _QUOTE_CHARS)
            lines.append(f'{unit.subject}: "{quote.rstrip(".")}" [{unit.citation}].')
        else:
            facts = "; ".join(f"{heading(u.name.replace('.', ' '))}: {u.text}" if u.name else u.text for u in same)
            facts = f"{unit.subject}: {facts}" if unit.subject else f"{facts[:1].upper()}{facts[1:]}"
            lines.append(f"{facts} [{unit.citation}].")
    return lines


def _computed(operation: str, picked: Sequence[Unit]) -> str:
    """The operation over the figures of the picked units that state one each (a clause's number is not
    one), written with them and the result: "Computed: 285 - 95 = 190 [a#1]."; "" when it cannot be
    worked out."""
    if operation not in OPERATIONS:
        return ""
    operands = [(unit, found[0]) for unit in picked if len(found := figures(_CLAUSE.sub("", unit.text))) == 1]
    if operation in ("percent_of", "less_percent") and len(operands) == 2 and "%" in operands[0][0].text:
        operands.reverse()  # the percentage is the second operand, as the model picked them or not
    elif operation == "difference":
        operands.sort(key=lambda operand: -operand[1])
    values = [value for _, value in operands]
    compute, joiner = OPERATIONS[operation]
    result = compute(values) if values else None
    if result is None:
        return ""
    shown = [figure_text(v) for v in values]
    if operation == "average":
        how = f"the average of {joiner.join(shown)}"
    elif operation == "percent_of":
        how = f"{shown[1]}% of {shown[0]}"
    elif operation == "less_percent":
        how = f"{shown[0]} less {shown[1]}%"
    else:
        how = joiner.join(shown)
    cited = " ".join(f"[{c}]" for c in dict.fromkeys(unit.citation for unit, _ in operands))
    return f"Computed: {how} = {figure_text(result)} {cited}."

"""Quoted answers: a question about the documents, answered by code in the documents' own words.

On two CPU cores the model's final answer over passages costs 10-30 s, nearly all of it reading the
prompt. Most document questions ask for what one sentence, list item or table row of a passage
states (a response time, a loan period, a penalty clause). Code finds that unit for each thing the
question asks (each ask, or each name it compares) and quotes it with where it stands and its
citation, so every character of the answer is the evidence's own. A question the units do not
cover well enough, one that needs reasoning (a yes/no, a figure or date to compute with), or one
whose best passage was written outside the organisation is left to the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from toolcrib.agent.request import Ask, Request, without_meta
from toolcrib.retrieval.evidence import CitedPassage, Conflict, version_doc
from toolcrib.retrieval.excerpt import GAP, BestUnit, best_unit, cut, terms, units
from toolcrib.retrieval.retriever import contains_exactly

MIN_COVER = 0.3  # the share of an ask's term weight its quoted unit must hold
MIN_HELD = 2  # and how many of its terms, at least
MIN_STEPS = 3  # numbered steps a procedure's quote needs
_STEP = re.compile(r"^\s*(\d{1,2})[.)]\s+\S")
_STEP_TITLE = 80  # a step shorter than this is a title: the sentence after it is quoted with it
_QUOTE_CHARS = 600

# what a quoted date or time looks like
_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DATE = re.compile(rf"\b(?:19|20)\d\d\b|\b\d{{1,2}}:\d\d\b|\b{_MONTH}\s+\d|\b\d{{1,2}}\s+{_MONTH}|"
                   r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)day\b", re.IGNORECASE)
_CURRENCY = re.compile(r"[$€£¥]|\b(?:EUR|USD|GBP|CHF|JPY|price)\b", re.IGNORECASE)


def quoted_answer(request: Request, passages: Sequence[CitedPassage], conflicts: Sequence[Conflict] = (), *,
                  sought: Sequence[str] = ()) -> str | None:
    """An answer quoting, for each thing the request asks, the unit of ``passages`` (best first) that
    holds most of it. None when the question needs reasoning or is about a procedure, when an ask's
    best unit holds under ``MIN_COVER`` of its weight, fewer than ``MIN_HELD`` of its terms or not its
    identifiers, or when a quote would come from a document written outside the organisation. Of
    conflicting versions (``conflicts``) only the newest is quoted: the note the citation review adds
    says what each version says. Each value in ``sought`` (what a lookup of the run found nothing
    for: "channel Z") must be named by a quote, or there is nothing to quote."""
    if passages and request.asks_procedure and not request.asks_reasoning:
        return _steps(request.text, passages)
    if not passages or request.asks_reasoning or request.asks_procedure or request.holds_figure:
        return None
    older = {version_doc(v) for c in conflicts for v in c.versions[1:]}
    shown = [p for p in passages if p.doc_id not in older]
    quotes: list[tuple[CitedPassage, str]] = []
    for ask, among, optional in _targets(request, shown):
        best = best_unit(without_meta(ask.text), [p.text for p in among])
        if best is None or not _answers(ask, among[best.passage], best):
            if optional and quotes:
                continue  # another document holding the identifier, saying nothing of it
            return None
        passage = among[best.passage]
        if not any(p == passage and best.text in text for p, text in quotes):
            quotes.append((passage, best.text))
    quoted = "\n".join(f"{p.title}\n{text}" for p, text in quotes)
    if not quotes or not all(contains_exactly(quoted, value) for value in sought):
        return None
    lines = [f'{_where(p)}: "{cut(inline(text), _QUOTE_CHARS)}" [{p.citation}]' for p, text in quotes]
    return f"According to {lines[0]}" if len(lines) == 1 else "From the documents:\n" + "\n".join(
        f"- {line}" for line in lines)


def _steps(question: str, passages: Sequence[CitedPassage]) -> str | None:
    """A procedure question whose best passage's section heading says what is asked ("How to escalate
    a critical issue (P1)" for "How do I escalate a critical issue?"): that section's numbered steps in
    the order its passages give them (the retriever puts them in the document's order), each with the
    sentence after a short step title, quoted with its citation. None with fewer than ``MIN_STEPS``."""
    first = passages[0]
    wanted = terms(question)
    if not first.trusted or len(wanted) < 2 or 3 * len(wanted & terms(first.section)) < 2 * len(wanted):
        return None
    lines: list[str] = []
    number = 0
    for passage in (p for p in passages if p.doc_id == first.doc_id and p.section == first.section):
        parts = [u.text for u in units(passage.text)]
        for i, text in enumerate(parts):
            if not (step := _STEP.match(text)):
                continue
            if len(text) < _STEP_TITLE and i + 1 < len(parts) and not _STEP.match(parts[i + 1]):
                text = f"{text} {parts[i + 1]}"
            if number and int(step.group(1)) != number + 1:
                lines.append(GAP.strip())  # a step no passage found holds: the reader sees the gap
            number = int(step.group(1))
            lines.append(f"{cut(inline(text), _QUOTE_CHARS // 2)} [{passage.citation}]")
    if sum(line != GAP.strip() for line in lines) < MIN_STEPS:
        return None
    return f"According to {_where(first)}:\n" + "\n".join(lines)


def _answers(ask: Ask, passage: CitedPassage, best: BestUnit) -> bool:
    """Whether a unit of a trusted passage answers ``ask``: enough of its terms, every identifier it
    names (in the unit or the document's title), and the kind of figure it asks for (a price with its
    currency, a date for "when", a figure for an amount or a duration)."""
    if best.cover < MIN_COVER or best.held < MIN_HELD or not passage.trusted:
        return False
    if not _names_all(ask.identifiers, f"{passage.title}\n{best.text}"):
        return False
    if ask.price and not (_CURRENCY.search(best.text) and any(c.isdigit() for c in best.text)):
        return False
    if ask.when and not _DATE.search(best.text):
        return False
    return not ask.amount or any(c.isdigit() for c in best.text)


def _targets(request: Request, passages: Sequence[CitedPassage]) -> list[tuple[Ask, list[CitedPassage], bool]]:
    """What to quote for, among which passages, and whether it may go unanswered (a document other
    than the first holding the identifier asked about). With two or more names the passages mention
    ("the Norden contract, and how does Ostara's differ?"): the question without its names, among each name's
    passages. With one ask about an identifier several documents hold ("the price of a QX-4030
    according to our documents"): the ask among each such document's passages, best first. Else each
    ask among the passages holding every identifier of the question (a later ask often names its
    subject only as "it": "... and how often should it be replaced?")."""
    named = _named(request, passages)
    if len(named) >= 2:
        bare = Ask.of(request.without({n for n, _ in named}))
        return [(bare, among, False) for _, among in named]
    holding = [p for p in passages if _names_all(request.typed_identifiers, f"{p.title}\n{p.text}")]
    parts = [Ask.of(ask) for ask in request.asks]
    documents = list(dict.fromkeys(p.doc_id for p in holding))
    if len(parts) == 1 and request.typed_identifiers and len(documents) >= 2:
        return [(parts[0], [p for p in holding if p.doc_id == doc], k > 0) for k, doc in enumerate(documents)]
    return [(ask, holding, False) for ask in parts]


def compared(request: Request, passages: Sequence[CitedPassage]) -> list[str]:
    """The names ``question`` lists together ("Norden and Ostara", "A, B or C") that passages mention,
    when there are two or more: each needs its own answer. Not the words of one title ("The Art of
    Electronics")."""
    group: list[str] = []
    for name, _ in _named(request, passages):
        if group and not request.listed(group[-1], name):
            if len(group) >= 2:
                break
            group = []
        group.append(name)
    return group if len(group) >= 2 else []


def _named(request: Request, passages: Sequence[CitedPassage]) -> list[tuple[str, list[CitedPassage]]]:
    """Each name of the request (not an identifier) with the passages that mention it, where some do."""
    return [(n, among) for n in request.proper_names
            if (among := [p for p in passages if n.casefold() in f"{p.title}\n{p.text}".casefold()])]


def _names_all(identifiers: Sequence[str], text: str) -> bool:
    """Whether ``text`` holds every one of ``identifiers`` (an ask's: QX-4030, P2, KB-400)."""
    return all(contains_exactly(text, i) for i in identifiers)


def _where(passage: CitedPassage) -> str:
    """The document and the part of it: "Returns Policy, version 2.0, effective 2025-07-01, 3. Refunds"."""
    title = passage.title or passage.doc_id
    version = f"version {passage.version}" if passage.version and passage.version not in title else ""
    effective = f"effective {passage.effective_date}" if passage.effective_date else ""
    section = passage.section.rsplit(" > ", 1)[-1].strip()
    page = f"p. {passage.page}" if passage.page else ""
    return ", ".join(x for x in (title, version, effective, section, page) if x)


def inline(text: str) -> str:
    """A passage's unit on one line, as a quote shows it: double quotes as single, no bold marks."""
    return re.sub(r"\s*\n\s*", " ", text).replace('"', "'").replace("**", "").strip()

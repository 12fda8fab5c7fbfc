"""Excerpts: the parts of a passage that bear on the question, so the answer call reads less.

A small model on two cores reads ~100 prompt tokens a second; five whole passages cost ~1,400 tokens,
most of them about something else. An excerpt keeps, in their order, the sentences, list items and
table rows that share the question's words (rarer words weigh more), with the heading or lead-in
that gives a kept unit its meaning, within a character budget. What is cut is marked with ``…``;
the citation still names the whole passage. Nothing is rewritten: every kept character is the
document's own, so a figure the answer copies still occurs in its cited evidence.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

GAP = " … "
_RELATED = 1 / 3  # a passage whose best unit weighs less than this share of the best passage's is left out
_UNRELATED_CHARS = 160  # what such a passage keeps when it must be shown: enough to see what it is

_WORD = re.compile(r"[a-z0-9]+(?:[.-][a-z0-9]+)*")
# A sentence ends at . ! ? ; after a letter, %, ) or ], closing emphasis or quotes kept with it: not
# after a digit, so an enumerator ("2. Open the ticket", "1.2 The days") stays with its sentence; a
# list flattened into a line ("... channels. - Supply channel CH1: ...") ends one at each item.
_SENTENCE_END = re.compile(r"(?<=[A-Za-z%)\]])[.!?;](?:\*{1,2}|[\"'”’)])?(?=\s+(?:[-•]\s+)?[A-Z0-9\"'(“‘*\[])")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")
_STOP_WORDS = (
    "a an the and or but of to in on at by for with from into about as is are was were be been being do does did "
    "have has had can could will would should shall may might must what which who whom whose when where why how "
    "this that these those it its i we you they he she me my our your their there here not no any all some "
    "much many long soon often if than then so also only per each please tell give show say says said")
_STOP = frozenset(_STOP_WORDS.split())
_QUANTITY_ASK = re.compile(r"\b(?:how\s+(?:much|many|long|soon|often|fast|far)|when|what\s+(?:time|date|day|percent"
                           r"|price|cost|fee|rate))\b", re.IGNORECASE)


_NAME_WORD = re.compile(r"[^\W\d_][\w'’-]*")
_I_CONTRACTED = re.compile(r"I['’](?:m|ve|ll|d)$")  # "I'm", "I've": the speaker, not a name


def names(text: str) -> list[str]:
    """The names ``text`` holds: runs of capitalised words ("Northwind Labs"), without a word that
    opens a sentence, a leading function word ("The", "What") or "I'm", each run once."""
    names: list[str] = []
    run: list[str] = []
    for m in _NAME_WORD.finditer(text + " ."):
        word = m.group(0)
        opens = m.start() == 0 or bool(re.search(r"[.!?:]\s*$", text[:m.start()]))
        if (word[:1].isupper() and len(word) > 2 and not opens and not (not run and word.lower() in _STOP)
                and not _I_CONTRACTED.match(word)):
            run.append(re.sub(r"['’]s$", "", word))
            continue
        if run:
            names.append(" ".join(run))
            run = []
    return list(dict.fromkeys(names))


def _stem(word: str) -> str:
    """A crude stem (returns, returned, returning -> return) so inflections match; numbers kept whole."""
    if word[0].isdigit():
        return word
    for suffix in ("ing", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    return word[:7]


def terms(text: str) -> set[str]:
    """The content-word stems of a text; a hyphenated word of letters also as its parts
    ("late-delivery": late, delivery), so it matches the words written apart."""
    words = _WORD.findall(text.lower())
    words += [part for w in words if "-" in w and not any(c.isdigit() for c in w) for part in w.split("-")]
    return {_stem(w) for w in words if w not in _STOP and (len(w) > 2 or any(c.isdigit() for c in w))}


@dataclass
class _Unit:
    text: str
    kind: str  # "heading", "row" or "sentence"
    block: int  # the paragraph, list or table it belongs to
    terms: frozenset[str] = frozenset()


def units(text: str) -> list[_Unit]:
    """A passage as headings, table rows and sentences (hard-wrapped lines rejoined; a list item
    starts a new sentence)."""
    out: list[_Unit] = []
    block = 0
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            out.extend(_Unit(s, "sentence", block) for s in _sentences(" ".join(paragraph)))
            paragraph.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", "|")):
            flush()
            if line.startswith("#") or not out or out[-1].kind != "row" or not line.startswith("|"):
                block += 1
            if line and not set(line) <= set("|-: "):  # a table's rule line says nothing
                out.append(_Unit(line, "heading" if line.startswith("#") else "row", block))
            continue
        if _LIST_ITEM.match(raw):
            flush()
        paragraph.append(line)
    flush()
    header: dict[int, str] = {}
    for unit in out:
        # a row is read with its table's header: "first response" names the column an S2 row answers
        extra = header.setdefault(unit.block, unit.text) if unit.kind == "row" else ""
        unit.terms = frozenset(terms(f"{unit.text} {extra}"))
    return out


def key_sentence(text: str, question: str, limit: int = 240) -> str | None:
    """The one unit of ``text`` that bears most on ``question`` (a table row with its header row), in
    the document's words, cut at ``limit`` characters; None when no unit shares a word with it."""
    parts = units(text)
    found = _best([parts], question, term_weights(question, [parts]))
    if found is None:
        return None
    return cut(" ".join(parts[j].text for j in sorted(_with_context(parts, found[1]))), limit)


@dataclass(frozen=True)
class BestUnit:
    """The unit of several passages that bears most on a question."""

    passage: int  # the index of its passage
    text: str  # with what it needs to be read right; a table row as "header: value" pairs
    cover: float  # the share of the question's term weight it holds (0..1)
    held: int  # how many of the question's terms it holds


def best_unit(question: str, texts: Sequence[str]) -> BestUnit | None:
    """The unit of ``texts`` (passages, best first; a tie goes to the earlier) that bears most on
    ``question``, terms weighted across all of them; None when no unit shares a word with it."""
    parsed = [units(t) for t in texts]
    weights = term_weights(question, parsed)
    found = _best(parsed, question, weights)
    total = sum(weights.values())
    if found is None or not total:
        return None
    k, i = found
    parts = parsed[k]
    group = sorted(_with_context(parts, i))
    held = frozenset().union(*(parts[j].terms for j in group)) & weights.keys()
    text = (_row_text(parts[group[0]].text, parts[i].text) if parts[i].kind == "row" and len(group) == 2
            else "\n".join(parts[j].text for j in group))
    return BestUnit(k, text, sum(weights[t] for t in held) / total, len(held))


def _best(parsed: Sequence[Sequence[_Unit]], question: str, weights: dict[str, float]) -> tuple[int, int] | None:
    """The passage and unit index of the unit scoring highest for ``question`` (the earliest of a
    tie); None when none shares a word with it."""
    best: tuple[float, int, int] | None = None
    for k, parts in enumerate(parsed):
        for i, score in enumerate(_scores(parts, question, weights)):
            if score > 0 and (best is None or score > best[0]):
                best = (score, k, i)
    return None if best is None else (best[1], best[2])


def _row_text(header: str, row: str) -> str:
    """A table row read with its header: "Priority: P2; First response: 4 business hours"."""
    names, values = ([c.strip() for c in line.strip().strip("|").split("|")] for line in (header, row))
    if len(names) != len(values):
        return f"{header} {row}"
    return "; ".join(f"{n}: {v}" if n else v for n, v in zip(names, values, strict=True) if v)


def _scores(parts: Sequence[_Unit], question: str, weights: dict[str, float]) -> list[float]:
    wanted = terms(question)
    quantity = _QUANTITY_ASK.search(question) is not None

    def score(unit: _Unit) -> float:
        s = sum(weights.get(t, 1.0) for t in unit.terms & wanted)
        if s and quantity and any(c.isdigit() for c in unit.text):
            s += 0.5  # a "how many / how long / when" question is answered by a figure
        return s

    return [score(u) for u in parts]


def _sentences(paragraph: str) -> list[str]:
    out: list[str] = []
    start = 0
    for end in _SENTENCE_END.finditer(paragraph):
        out.append(paragraph[start:end.end()].strip())
        start = end.end()
    out.append(paragraph[start:].strip())
    return [s for s in out if s]


def _with_context(parts: Sequence[_Unit], i: int) -> set[int]:
    """A unit with what it needs to be read right: a table row with its header row, a heading or a
    lead-in ending in ':' with what follows it."""
    group = {i}
    unit = parts[i]
    if unit.kind == "row":
        header = next((j for j in range(len(parts)) if parts[j].kind == "row" and parts[j].block == unit.block), i)
        group.add(header)
    if (unit.kind == "heading" or unit.text.endswith(":")) and i + 1 < len(parts):
        group.add(i + 1)
    return group


def _join(parts: Sequence[_Unit], chosen: Sequence[int], budget: int) -> str:
    out: list[str] = [] if chosen and chosen[0] == 0 else [GAP.strip()]
    previous = -2
    for i in chosen:
        if previous >= 0 and i != previous + 1:
            out.append(GAP.strip())
        out.append(parts[i].text)
        previous = i
    if chosen and chosen[-1] != len(parts) - 1:
        out.append(GAP.strip())
    text = "\n".join(out)
    return cut(text, budget)  # one unit far over the whole budget: cut


def cut(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a space, marked with ``…``."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head) + GAP.rstrip()


def term_weights(question: str, parsed: Sequence[Sequence[_Unit]]) -> dict[str, float]:
    """Each question term weighted by how rare it is across the units of the passages (``parsed``,
    each passage's ``units``): an idf."""
    counts: Counter[str] = Counter()
    total = 0
    for parts in parsed:
        for unit in parts:
            total += 1
            counts.update(unit.terms)
    # a term with a digit (S2, AB-1234, 8.3) names one thing: it weighs double
    return {t: math.log(1 + (total + 1) / (counts[t] + 1)) * (2 if any(c.isdigit() for c in t) else 1)
            for t in terms(question)}


_TITLED = 0.25  # what a question term a passage's title holds weighs in choosing that passage's units


def _titled(weights: dict[str, float], title: str) -> dict[str, float]:
    held = terms(title)
    return {t: w * _TITLED if t in held else w for t, w in weights.items()} if held & weights.keys() else weights


def excerpts(texts: Sequence[str], question: str, budget: int, *, keep: Collection[Collection[int]] = (),
             whole: Collection[int] = (), titles: Sequence[str] = ()) -> list[str | None]:
    """``texts`` (passages, best first) cut to about ``budget`` characters in all for ``question``.

    Passages in ``whole`` (the retriever's best) are shown whole, up to the budget, and count
    against it. Each other passage keeps its own best unit; the rest of the budget goes to the best
    units of any passage (terms weighted across all of them). A passage whose best unit shares far
    less with the question than the best passage's (under a third of its weight) is left out
    (None), unless it is in a group of ``keep`` (the versions of one document) of which one passage
    is related: then it keeps its best unit, or its opening words when it shares none. Unchanged:
    ``budget`` 0, texts within it, or texts sharing no word with the question (nothing to choose by).
    A question term that a passage's title (``titles``: its document and section) holds says which
    passage, not which of its units: within that passage it weighs a quarter ("Ostara" in "how can
    Norden and Ostara raise prices?" does not pick the Ostara contract's sentence about notice).
    """
    if budget <= 0 or sum(len(t) for t in texts) <= budget:
        return list(texts)
    parsed = [units(t) for t in texts]  # each passage parsed once, for the weights and the choice
    weights = term_weights(question, parsed)
    # whether a passage bears on the question is judged with every term, which of its units with its
    # title's terms weighing less
    best = [max(_scores(p, question, weights), default=0.0) for p in parsed]
    scores = [_scores(p, question, _titled(weights, titles[k] if k < len(titles) else ""))
              for k, p in enumerate(parsed)]
    top = max(best, default=0.0)
    if top <= 0:
        return list(texts)
    near = [b >= top * _RELATED for b in best]  # top > 0: a passage near it shares a word
    kept = {k for group in keep if any(near[j] for j in group if j < len(texts)) for k in group}
    related = [n or (b > 0 and k in kept) for k, (n, b) in enumerate(zip(near, best, strict=True))]
    chosen: list[set[int]] = [set(range(len(parsed[k]))) if k in whole else set() for k in range(len(texts))]
    used = sum(min(len(texts[k]), budget) for k in whole if k < len(texts))

    def take(k: int, i: int, *, always: bool = False) -> None:
        nonlocal used
        group = _with_context(parsed[k], i) - chosen[k]
        cost = sum(len(parsed[k][j].text) + 1 for j in group)
        if always or used + cost <= budget:
            chosen[k] |= group
            used += cost

    for k, s in enumerate(scores):  # each related passage's own best unit first
        if related[k] and k not in whole:
            take(k, max(range(len(s)), key=lambda i: (s[i], -i)), always=True)
    ranked = sorted(((s, k, i) for k, ss in enumerate(scores) if related[k] for i, s in enumerate(ss) if s > 0),
                    key=lambda x: (-x[0], x[1], x[2]))
    for _, k, i in ranked:
        if used >= budget:
            break
        take(k, i)
    return [cut(texts[k], budget) if k in whole else _join(parsed[k], sorted(chosen[k]), budget) if chosen[k]
            else cut(texts[k], _UNRELATED_CHARS) if k in kept else None for k in range(len(texts))]

"""Flags instruction-like text in untrusted content (documents, tool results) aimed at the model.

This is a tripwire, not a wall. ``PatternScanner`` scores cues: phrasings that only make sense
when addressed to a language model (instruction overrides, "to you, the AI", edits to "your
response", fake role markers and tool syntax, hidden characters, a line asking for a task that has
nothing to do with the document around it) flag on their own; weaker cues that ordinary business
text also uses (a request to transfer money, "without asking", an urgent tone, code that reads
secrets or sends data out) flag only when several kinds meet in the same passage. Paraphrases,
most other languages, encodings and images still get past it, plain requests ("Please transfer
$3,000 to account ...") are indistinguishable from a real invoice, and text quoting an attack is
flagged. A flag lowers the passage's trust and is logged and traced; it never decides anything on
its own. What protects the user is structural: nothing a passage says can grant a permission,
choose the principal, or run a WRITE/ACTUATE call without a policy decision and a person's
approval bound to the exact call. ``ClassifierScanner`` plugs in a model that scores text.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, runtime_checkable

from toolcrib.policy.cues import DEFAULT_PATTERNS, Cue


@dataclass(frozen=True)
class Flag:
    """One suspicious span: what kind of pattern it matched and the text around it."""

    kind: str
    excerpt: str
    start: int = field(default=-1, compare=False)  # where the match is in the scanned text (-1: unknown)
    end: int = field(default=-1, compare=False)


@runtime_checkable
class Scanner(Protocol):
    """Anything that flags untrusted text (a pattern list, a classifier model)."""

    def scan(self, text: str) -> list[Flag]: ...


_FLAGS = re.IGNORECASE | re.MULTILINE
_ESCAPED_BREAKS = re.compile(r"\\[nrt]")  # a dict or list result arrives as its repr, line breaks escaped
_MEMO_CHARS = 200  # texts up to this long have their flags remembered ...
_MEMO_SIZE = 4096  # ... this many at a time
_LETTERS_ONLY = bytes(c if 97 <= c <= 122 else 32 for c in range(256))  # a-z kept, all else a space


class _Hit(NamedTuple):
    start: int
    end: int
    kind: str
    weight: float


class _Compiled(NamedTuple):
    cue: Cue
    regex: re.Pattern[str]
    words: frozenset[str]  # word anchors
    phrases: re.Pattern[str] | None  # finds any phrase anchor in lower-cased text
    also: frozenset[str]


def _compile(cue: Cue) -> _Compiled:
    # One alternation: phrases sharing a first word ("your reply", "your answer") are found as
    # fast as a plain substring search. A space in a phrase matches any run of whitespace.
    phrases = "|".join(re.escape(a).replace(r"\ ", r"\s+") for a in sorted(cue.anchors) if not a.isalpha())
    return _Compiled(cue, re.compile(cue.pattern, _FLAGS), frozenset(a for a in cue.anchors if a.isalpha()),
                     re.compile(phrases) if phrases else None, frozenset(cue.also))


class PatternScanner:
    """Scores ``DEFAULT_PATTERNS`` and any ``extra`` cues ((kind, regex[, weight]) or ``Cue``) over a text.

    A cue as heavy as ``threshold`` flags alone; weaker cues flag when the best weights of their
    different kinds, found within ``window`` characters of each other, add up to the threshold.
    """

    def __init__(self, extra: Iterable[tuple[str, str] | tuple[str, str, float] | Cue] = (), *, context: int = 30,
                 max_flags: int = 20, threshold: float = 1.0, window: int = 600) -> None:
        self.cues = [*DEFAULT_PATTERNS, *(e if isinstance(e, Cue) else Cue(*e) for e in extra)]
        compiled = [_compile(c) for c in self.cues]
        self._strong = [c for c in compiled if c.cue.weight >= threshold]
        self._weak = [c for c in compiled if c.cue.weight < threshold]
        # what the weak cues from i on could still add up to (the best weight of each kind among them)
        self._weak_reach: list[float] = []
        for i in range(len(self._weak)):
            best: dict[str, float] = {}
            for later in self._weak[i:]:
                best[later.cue.kind] = max(best.get(later.cue.kind, 0.0), later.cue.weight)
            self._weak_reach.append(sum(best.values()))
        # every cue's anchors at once: a text holding none of them (most values of a tool result: a
        # status, a name, a number) is looked at by the unanchored cues only
        self._anchor_words = frozenset().union(*(c.words for c in compiled))
        phrases = [c.phrases.pattern for c in compiled if c.phrases is not None]
        self._any_phrase = re.compile("|".join(phrases)) if phrases else None
        self.context = context
        self.max_flags = max_flags
        self._memo: dict[str, tuple[Flag, ...]] = {}  # the flags of short texts scanned already
        self.threshold = threshold
        self.window = window

    def scan(self, text: str) -> list[Flag]:
        if len(text) > _MEMO_CHARS:
            return self._scan(text)
        known = self._memo.get(text)  # short values (a status, a name, an id) recur in every result
        if known is None:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            known = self._memo[text] = tuple(self._scan(text))
        return list(known)

    def _scan(self, text: str) -> list[Flag]:
        if "\\" in text:
            text = _ESCAPED_BREAKS.sub(" \n", text)
        t = _Text(text)
        quiet = self._anchor_words.isdisjoint(t.words) and (
            self._any_phrase is None or self._any_phrase.search(t.lowered) is None)
        hits: list[_Hit] = []
        for c in self._strong:
            if quiet and (c.words or c.phrases):
                continue
            hits += self._run(c, t)
            if len(hits) >= self.max_flags:
                break
        hits += self._combined(self._weak_hits(t, quiet))
        hits.sort(key=lambda h: (h.start, -h.end))
        kept: list[_Hit] = []
        for h in hits:  # two cues finding the same phrase make one flag
            if not any(k.kind == h.kind and h.start < k.end for k in kept[-4:]):
                kept.append(h)
        return [self._flag(text, h) for h in kept[:self.max_flags]]

    def _weak_hits(self, t: _Text, quiet: bool = False) -> list[_Hit]:
        """Weak cues in order; once those left cannot reach the threshold among themselves, they are
        looked for only near what was already found."""
        hits: list[_Hit] = []
        near: list[tuple[int, int]] | None = None
        for i, c in enumerate(self._weak):
            if near is None and self._weak_reach[i] < self.threshold - 1e-9:
                if not hits:
                    break
                near = _merge([(h.start - self.window, h.end + self.window) for h in hits])
            if not (quiet and (c.words or c.phrases)):
                hits += self._run(c, t, near)
        return hits

    def _run(self, c: _Compiled, t: _Text, near: list[tuple[int, int]] | None = None) -> list[_Hit]:
        cue = c.cue
        if c.also and c.also.isdisjoint(t.words):
            return []
        anchored = bool(c.words or c.phrases)
        if not anchored and cue.unicode_only and _narrow(t.text):
            return []
        present = [w for w in c.words if w in t.words]
        starts = [m.start() for m in c.phrases.finditer(t.lowered)] if c.phrases is not None else []
        if anchored and not (present or starts):
            return []
        matches: list[re.Match[str]] = []
        if not anchored or t.spaced is None:  # offsets do not carry over: look everywhere
            spans = [(0, len(t.text))]
        elif cue.before == 0:  # every match starts at an anchor: one attempt at each
            spans = []
            for i in sorted(starts + t.occurrences(present)):
                if near is None or any(a <= i <= b for a, b in near):
                    m = c.regex.match(t.text, i, min(len(t.text), i + cue.reach))
                    matches += [m] if m else []
        else:
            spans = _merge([(max(0, i - cue.before), min(len(t.text), i + cue.reach))
                            for i in starts + t.occurrences(present)])
        for a, b in spans:
            if near is None or any(a <= nb and na <= b for na, nb in near):
                matches += c.regex.finditer(t.text, a, b)
        hits = [_Hit(m.start(), m.end(), cue.kind, cue.weight) for m in matches
                if cue.check is None or cue.check(t.text, m)]
        return hits[:1] if cue.kind == "hidden_text" else hits  # one flag says enough for invisibles

    def _combined(self, weak: list[_Hit]) -> list[_Hit]:
        """The weak hits in some window where distinct kinds' best weights reach the threshold
        (one pass with a sliding window, so a text dense with cues costs no more than linear)."""
        weak.sort(key=lambda h: h.start)
        inside: dict[tuple[str, float], int] = {}
        marks = [0] * (len(weak) + 1)  # +1 where a qualifying window opens, -1 where it closes
        j = 0
        for i, first in enumerate(weak):
            while j < len(weak) and weak[j].start - first.start <= self.window:
                key = (weak[j].kind, weak[j].weight)
                inside[key] = inside.get(key, 0) + 1
                j += 1
            best: dict[str, float] = {}
            for (kind, weight), n in inside.items():
                if n and weight > best.get(kind, 0.0):
                    best[kind] = weight
            if sum(best.values()) >= self.threshold - 1e-9:
                marks[i] += 1
                marks[j] -= 1
            inside[(first.kind, first.weight)] -= 1
        chosen: list[_Hit] = []
        open_windows = 0
        for i, hit in enumerate(weak):
            open_windows += marks[i]
            if open_windows > 0:
                chosen.append(hit)
        return chosen

    def _flag(self, text: str, hit: _Hit) -> Flag:
        start, end = max(0, hit.start - self.context), min(len(text), hit.end + self.context)
        excerpt = text[start:end]
        if hit.kind == "hidden_text":  # make the invisible visible in logs
            excerpt = excerpt.encode("unicode_escape").decode("ascii")
        return Flag(hit.kind, " ".join(excerpt.split()), hit.start, hit.end)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")  # a line wrapped inside a sentence does not end it
QUARANTINED = "[toolcrib removed instruction-like text here ({kinds}); it is kept in the trace]"


def quarantine(text: str, flags: Iterable[Flag]) -> str:
    """``text`` without the sentences (or lines) the flags point into, each run of them replaced by one
    visible marker: what a model is shown of untrusted content holds no instruction it could follow
    or repeat. Flags without a position change nothing."""
    spans = sorted((f.start, f.end, f.kind) for f in flags if 0 <= f.start < f.end <= len(text))
    if not spans:
        return text
    bounds = [0, *(m.end() for m in _SENTENCE_END.finditer(text)), len(text)]
    pieces: list[str] = []
    removed: list[str] = []
    gap = ""  # the whitespace that ended the last removed sentence, kept after the marker
    for start, end in itertools.pairwise(bounds):
        kinds = [k for s, e, k in spans if s < end and e > start]
        if kinds:
            removed += [k for k in dict.fromkeys(kinds) if k not in removed]
            segment = text[start:end]
            gap = segment[len(segment.rstrip()):]
            continue
        if removed:
            pieces.append(QUARANTINED.format(kinds=", ".join(removed)) + (gap or " "))
            removed = []
        pieces.append(text[start:end])
    if removed:
        pieces.append(QUARANTINED.format(kinds=", ".join(removed)) + gap)
    return "".join(pieces)


class _Text:
    """A text with what every cue looks up: its lower-cased form and its set of words."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()
        # One byte per character ("?" for non-ASCII) keeps offsets; " word " in the padded copy is
        # then a whole word at the same offset in the text, found by a plain substring search.
        letters = self.lowered.encode("ascii", "replace").translate(_LETTERS_ONLY).decode("ascii")
        self.words = set(letters.split())
        aligned = len(self.lowered) == len(text)  # a few characters change length when lower-cased
        self.spaced = f" {letters} " if aligned else None

    def occurrences(self, words: list[str]) -> list[int]:
        """Where each word occurs as a whole word (only where offsets carry over: ``spaced``)."""
        found: list[int] = []
        spaced = self.spaced or ""
        for word in words if spaced else ():
            padded = f" {word} "
            i = spaced.find(padded)
            while i >= 0:
                found.append(i)
                i = spaced.find(padded, i + len(word) + 1)
        return found


def _narrow(text: str) -> bool:
    """True when every character is below U+0100 (so no invisible marks): a copy, no Python loop."""
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class ClassifierScanner:
    """Wraps any ``score(text) -> probability of injection`` (a local classifier model) as a Scanner.

    Long texts are scored in overlapping chunks of ``chunk`` characters, so an injection buried in
    a long page is not diluted; each chunk at or above ``threshold`` becomes one flag, its excerpt
    led by the score.
    """

    def __init__(self, score: Callable[[str], float], *, threshold: float = 0.5, kind: str = "classifier",
                 chunk: int = 2000, overlap: int = 200, excerpt: int = 120) -> None:
        if not 0 <= overlap < chunk:
            raise ValueError("ClassifierScanner needs 0 <= overlap < chunk")
        self.score = score
        self.threshold = threshold
        self.kind = kind
        self.chunk = chunk
        self.overlap = overlap
        self.excerpt = excerpt

    def scan(self, text: str) -> list[Flag]:
        flags: list[Flag] = []
        step = self.chunk - self.overlap
        for start in range(0, max(len(text) - self.overlap, 1), step):
            part = text[start:start + self.chunk]
            if not part.strip():
                continue
            p = float(self.score(part))
            if p >= self.threshold:
                flags.append(Flag(self.kind, f"p={p:.2f}: " + " ".join(part[:self.excerpt].split())))
        return flags


def quarantine_values(data: Any, scanner: Scanner) -> tuple[Any, list[Flag]]:
    """``data`` (a tool result: text, or lists and objects of it) with each text quarantined, and
    every flag raised."""
    found: list[Flag] = []
    return _quarantined(data, scanner, found), found


_UNSCANNED = frozenset({int, float, bool, type(None)})  # values with no text in them


def _quarantined(value: Any, scanner: Scanner, found: list[Flag]) -> Any:
    """``value`` with each text quarantined, its flags added to ``found`` in order; a list or object with
    nothing flagged in it is returned as it is. (A function of its own, not a closure made per result:
    every READ result of a workspace with a scanner passes here.)"""
    if isinstance(value, str):
        flags = scanner.scan(value)
        if not flags:
            return value
        found.extend(flags)
        return quarantine(value, flags)
    if isinstance(value, dict):
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            if type(item) in _UNSCANNED:
                continue
            cleaned = _quarantined(item, scanner, found)
            if cleaned is not item:
                if changed is None:
                    changed = {}
                changed[key] = cleaned
        return {**value, **changed} if changed else value
    if isinstance(value, list):
        items = [_quarantined(v, scanner, found) for v in value]
        return items if any(c is not v for c, v in zip(items, value, strict=True)) else value
    return value

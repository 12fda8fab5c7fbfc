"""Argument grounding and provenance: where each value a model passes came from.

Every text a run sees is kept with its ``Source``: the user's request (trusted: it comes from the
session), a tool's result (trusted or not, as the workspace declares the tool), or a retrieved
passage (its document's trust, from its metadata). An identifier the model passes must appear in
one of them, as a whole value (``34`` is not in ``1,340.00``); a WRITE's arguments carry the
sources they were found in, so the approver sees which came only from content others wrote.

The same sources decide which tools are worth offering: a tool whose required identifier cannot
appear in them (no identifier in "how do refunds work?") could only be called with an invented one,
which the gate would refuse, so the runner does not offer it and the model is not tempted.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

# What a tool identifier looks like when the tool does not say: a token holding a digit (PO-1001,
# G7, 1001) or written in capitals (channel C, HEPA); never a lone "I", or "A" opening a sentence.
_TOKEN = re.compile(r"[A-Za-z0-9](?:[\w/.-]*[A-Za-z0-9])?")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)$")

SourceKind = Literal["user", "tool", "document"]


@dataclass(frozen=True)
class Source:
    """Where a text in a run came from, and whether its author is trusted."""

    kind: SourceKind
    name: str = ""  # the tool's name or the document's id
    trusted: bool = True
    # untrusted content the user pointed to: fetched by a call whose every argument the user gave
    # ("pay the bill in bill-december.txt"), so its values are the ones the user meant to use
    endorsed: bool = False

    @property
    def label(self) -> str:
        """``user request``, ``tool lookup_item``, ``document supplier-faq (untrusted)``."""
        what = "user request" if self.kind == "user" else f"{self.kind} {self.name}"
        if self.trusted:
            return what
        return f"{what} (untrusted, fetched as the user asked)" if self.endorsed else f"{what} (untrusted)"

    @property
    def vouched(self) -> bool:
        """Trusted, or untrusted content the user pointed to."""
        return self.trusted or self.endorsed

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Source:
        if data.get("kind") not in ("user", "tool", "document"):
            raise ValueError(f"not a source: {json.dumps(dict(data))[:80]}")
        return cls(data["kind"], str(data.get("name", "")), bool(data.get("trusted", True)),
                   bool(data.get("endorsed", False)))


USER_REQUEST = Source("user")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _is_word(token: str, text: str, start: int) -> bool:
    """A lone "I", or a capital letter opening a sentence ("A customer..."), is a word, not an id."""
    return token == "I" or (len(token) == 1 and token.isupper() and bool(_SENTENCE_START.search(text[:start])))


def _spellings(value: Any) -> list[str]:
    """How a scalar may be written in text: 52.0 is also "52" and "52.00"."""
    if isinstance(value, bool):
        return [str(value).lower()]
    if isinstance(value, float) and value.is_integer():
        return [str(int(value)), f"{value:.2f}", str(value)]
    if isinstance(value, float):
        return [str(value), f"{value:.2f}"]
    if isinstance(value, int) and abs(value) >= 1000:
        return [str(value), f"{value:,}"]  # 100000 is also "100,000"
    return [_norm(str(value))]


def _whole(needle: str, haystack: str) -> bool:
    """``needle`` occurs in ``haystack`` as a whole value: not inside a longer word or number."""
    if not needle:
        return False
    edge_word = needle[0].isalnum(), needle[-1].isalnum()
    start = haystack.find(needle)
    while start != -1:
        end = start + len(needle)
        before = haystack[start - 1] if start else " "
        after = haystack[end] if end < len(haystack) else " "
        if not ((edge_word[0] and before.isalnum()) or (edge_word[1] and after.isalnum())
                or _inside_number(haystack, start, end)):
            return True
        start = haystack.find(needle, start + 1)
    return False


class Grounding:
    """The texts a run has seen, each with its source. ``Grounding(question)`` starts with the user's."""

    def __init__(self, *texts: str) -> None:
        self._texts: list[tuple[Source, str, str]] = []  # source, text, normalized text
        # per source, its texts as given and as normalized, in one set (a text equal to one of them is the same
        # text again, as normalizing twice changes nothing); keyed by source first, so an add hashes its source
        # once (a dataclass's hash is a Python call)
        self._by_source: dict[Source, set[str]] = {}
        self._blob = ""  # every normalized text: one fast substring test rules most values out
        self._found: set[str] = set()  # strings found whole: texts are only ever added, so they stay found
        # per identifier shape asked about (None: any), how many texts were scanned without finding one, or
        # -1 once one was found: each offer of a run asks again, and only texts added since need a look
        self._scanned: dict[str | None, int] = {}
        self._later: list[tuple[str, Source]] = []  # added after ``_texts``, not indexed yet (``add_later``)
        for t in texts:
            self.add(t)

    def add(self, text: str, source: Source = USER_REQUEST) -> None:
        if self._later:
            self._catch_up()
        self._add(text, source)

    def add_later(self, text: str, source: Source) -> None:
        """``add``, indexed when the texts are next read (a READ call's result: its call is not kept
        waiting on it, and a run whose later checks find what they look for among the texts already
        indexed never waits on it)."""
        self._later.append((text, source))

    def _catch_up(self) -> None:
        """Index the texts ``add_later`` kept, in order: every reader sees them as if added at once."""
        later, self._later = self._later, []
        for text, source in later:
            self._add(text, source)

    def _add(self, text: str, source: Source) -> None:
        known = self._by_source.get(source)
        if known is None:
            known = self._by_source[source] = set()
        elif text in known:  # the same result again is one lookup
            return
        norm = " ".join(text.lower().split())  # _norm, inlined: every tool result is added
        if norm in known:  # the same text from the same source again tells nothing new
            return
        known.add(text)
        known.add(norm)
        self._texts.append((source, text, norm))
        self._blob += "\n" + norm

    def endorsed_texts(self) -> list[str]:
        """The texts of content others wrote that the user pointed to (and the scanner did not flag)."""
        if self._later:
            self._catch_up()
        return [text for source, text, _ in self._texts if source.endorsed]

    def holds_record(self, source: Source) -> bool:
        """Whether the tool or document ``source`` names gave a record in this run (trusted text beside its
        prose: a ticket, a message list, a product page), not only prose (a document's or a page's text)."""
        if self._later:
            self._catch_up()
        return any(s.trusted and s.kind == source.kind and s.name == source.name for s in self._by_source)

    def untrusted_texts(self) -> list[tuple[Source, str]]:
        """The texts of content others wrote, each with its source (pointed to by the user or not)."""
        if self._later:
            self._catch_up()
        return [(source, text) for source, text, _ in self._texts if not source.trusted]

    @property
    def sources(self) -> list[tuple[Source, str]]:
        """Every text with its source, in the order seen (to persist a paused run)."""
        if self._later:
            self._catch_up()
        return [(source, text) for source, text, _ in self._texts]

    def sources_of(self, value: Any) -> list[Source]:
        """The sources ``value`` appears in as a whole value, each once, in the order seen. A list
        (or object) is found where every one of its scalar items is found; empty when any is not."""
        if self._later:
            self._catch_up()
        items = list(_scalars(value))
        if not items:
            return []
        found: list[Source] = []
        for item in items:
            spellings = [w for w in _spellings(item) if w in self._blob]
            where = [s for s, _, norm in self._texts if any(w in norm and _whole(w, norm) for w in spellings)]
            if not where:
                return []
            found += [s for s in where if s not in found]
        return found

    def contains(self, value: Any) -> bool:
        """``bool(sources_of(value))``, without collecting the sources: every scalar item of ``value``
        is found as a whole value in the texts seen. The texts are joined by newlines in one string, and
        a spelling (normalized: it holds no newline) is whole there exactly where it is whole in a text."""
        if type(value) is str and value in self._found:  # texts are only ever added: found stays found
            return True
        if self._later:
            self._catch_up()
        blob = self._blob
        if type(value) is str:  # the common identifier: one scalar, one spelling
            if value != "" and _whole(_norm(value), blob):
                self._found.add(value)
                return True
            return False
        items = list(_scalars(value))
        return bool(items) and all(any(_whole(w, blob) for w in _spellings(item)) for item in items)

    @property
    def read_untrusted(self) -> bool:
        """Whether the run has seen any content others wrote."""
        if self._later:
            self._catch_up()
        return any(not source.trusted for source, _, _ in self._texts)

    def names_identifier(self, shape: str | None = None) -> bool:
        """Whether these sources hold a token that could be an identifier: one matching ``shape`` (a
        regular expression for the whole token) when given, else anything identifier-like."""
        if self._later:
            self._catch_up()
        scanned = self._scanned.get(shape, 0)
        if scanned < 0:
            return True
        texts = self._texts
        for _, text, _ in texts[scanned:]:
            if _names_identifier(text, shape):
                self._scanned[shape] = -1
                return True
        self._scanned[shape] = len(texts)
        return False


def _names_identifier(text: str, shape: str | None) -> bool:
    """Whether ``text`` holds a token that could be an identifier (see ``Grounding.names_identifier``)."""
    if shape is not None:
        return bool(identifiers(text, shape))
    for m in _TOKEN.finditer(text):
        token = m.group(0)
        if (token.isupper() or any(c.isdigit() for c in token)) and not _is_word(token, text, m.start()):
            return True
    return False


@functools.lru_cache(maxsize=256)
def _shaped(shape: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{shape})(?![\w-])")


def identifiers(text: str, shape: str) -> list[str]:
    """The tokens of ``text`` that match ``shape`` (a regular expression for a whole token), in order,
    without the plain words among them (a lone "I", a capital opening a sentence)."""
    return [m.group(0) for m in _shaped(shape).finditer(text)
            if not _is_word(m.group(0), text, m.start()) and not _inside_number(text, m.start(), m.end())]


def _inside_number(text: str, start: int, end: int) -> bool:
    """``text[start:end]`` is part of a longer number ("212500" of "212500.0", "500" of "1,500"): not a
    value of its own, as an identifier or as a figure."""
    return ((start > 1 and text[start - 1] in ".," and text[start - 2].isdigit())
            or (end + 1 < len(text) and text[end] in ".," and text[end + 1].isdigit()))


def _scalars(value: Any) -> Iterable[Any]:
    """The non-empty scalar values inside ``value``."""
    if isinstance(value, dict):
        for v in value.values():
            yield from _scalars(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _scalars(v)
    elif value is not None and value != "":
        yield value


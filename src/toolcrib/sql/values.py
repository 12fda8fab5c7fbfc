"""The workspace database's own values, indexed so a request's words can be linked to them.

A person names things by name: "has Juniper paid her invoice?", "have we got any paracetamol?", "meetings
with Ms Okoro". The tools that answer are keyed by an id (``lookup_customer(customer_id)``), and a small
model writes the name it was given where the stored value is longer ("Okoro" for "Ms Ada Okoro"). The
index holds the short text values of the allowed tables' columns, each with how many rows hold it and, where
one row does and the table has a key column (its values unique), that row's key; ``link`` finds the values
a text names, by their distinctive words (a word held by few values weighs more than one held by many), so
code can give the model the stored value and the row's id, and the gate can ground that id in the data.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections import defaultdict
from dataclasses import dataclass, replace

from toolcrib.dates import ISO_DATE
from toolcrib.sql.base import ReadOnlySQL
from toolcrib.sql.introspect import TEXT_TYPES
from toolcrib.sql.stated import Stated
from toolcrib.text import IDENTIFIER, STOP_WORDS, stem

_WORD = re.compile(r"[^\W\d_]{3,}")
_CODE = re.compile(r"^[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)+$")  # SKU-LONG, acct-smith: a code, not a name
KINDS = 12  # a column of this many distinct values or fewer, each on several rows, holds kinds (a status)
_MAX_CHARS = 60  # a longer text is a note or a description, not a name
_PAGES = 25  # pages of ``row_cap`` distinct values read per column, at most
_DISTINCT = 3  # a word held by more values than this says nothing on its own
_LINKS = 6  # links per text, at most
_LONG = 7  # a word this long, held by one value, names it even in lower case ("paracetamol")
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)\W*$")


@dataclass(frozen=True)
class Entry:
    """One distinct value of one column, with the row key when exactly one row holds it."""

    table: str
    column: str
    value: str
    rows: int
    key: tuple[str, str] | None  # (key column, the row's key) when one row holds the value
    kind: bool = False  # the column holds kinds, not names ("booked", "dental"): linked only when named


@dataclass(frozen=True)
class Link:
    """A value a text names: the text's words, and where the value is stored."""

    said: str
    entry: Entry
    whole: bool = False  # the text gives every word of the value ("express delivery"; not "supplier" of a title)

    def describe(self) -> str:
        """``"Juniper" = customers.name "Juniper" (customer_id C-17)``."""
        e = self.entry
        where = f'{e.table}.{e.column} "{e.value}"'
        if e.key is not None:
            where += f" ({e.key[0]} {e.key[1]})"
        return f'"{self.said}" = {where}'


def _words(text: str) -> list[str]:
    return [w for w in (stem(m.casefold()) for m in _WORD.findall(text)) if w not in STOP_WORDS]


class ValueIndex:
    """The short text values of a database's allowed tables, by their words. Build it with ``build``."""

    def __init__(self, entries: list[Entry]) -> None:
        self.entries = entries
        self._by_word: dict[str, list[Entry]] = defaultdict(list)
        self._words: dict[int, tuple[str, ...]] = {}  # by id(entry): its words, each once
        for entry in entries:
            words = self._words[id(entry)] = tuple(dict.fromkeys(_words(entry.value)))
            for word in words:
                self._by_word[word].append(entry)
        # how many distinct values hold each word (the same value in two columns counts once)
        self._held = {w: len({e.value.casefold() for e in es}) for w, es in self._by_word.items()}
        self._closed: dict[str, tuple[str, ...] | None] = {}

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def build(cls, sql: ReadOnlySQL) -> ValueIndex:
        """Read every allowed table's short text values (views aside)."""
        schema = sql.schema()
        entries: list[Entry] = []
        for table, columns in sorted(schema.columns.items()):
            if table in schema.views:
                continue
            key = _key_column(sql, table, [c for c, _ in columns])
            for column, declared in columns:
                if column != key and TEXT_TYPES.search(declared):
                    entries += _column_entries(sql, table, column, key)
        return cls(entries)

    def closed(self, name: str) -> tuple[str, ...] | None:
        """The stored values of the columns called ``name`` when every one holds kinds (a closed set: the staff
        of a rota, a status), to check an argument of that name against; None otherwise."""
        if name not in self._closed:  # asked on every call with a text argument: worked out once per name
            found = [e for e in self.entries if e.column == name]
            self._closed[name] = (tuple(sorted({e.value for e in found}, key=str.casefold))
                                  if found and all(e.kind for e in found) else None)
        return self._closed[name]

    def link(self, text: str, *, kinds: bool = False) -> tuple[Link, ...]:
        """The values ``text`` names, best first. A value is named when most of its weight of words is in
        the text (a word held by many values weighs little), one of those words is held by few values and
        the text gives more than one word of a longer value; or when the text gives a word only that value
        holds and the word is a name (capitalised inside a sentence: "Okoro") or long enough to be no
        common word ("paracetamol"). A word that fits many values links none of them. A kind ("booked",
        "dental") links only where it is capitalised as a name, unless ``kinds``: what an answer states."""
        links: list[Link] = []
        for link in self._named(text, kinds=kinds):
            same = [k for k in links if k.entry.value.casefold() == link.entry.value.casefold()]
            if same and (link.entry.key is None or same[0].entry.key is not None):
                continue  # the same value stored in another column too ("Ms Ada Okoro" in two tables)
            links.append(link)
        return tuple(links[:_LINKS])

    def stated(self, text: str) -> tuple[Stated, ...]:
        """Where each value ``text`` names is stored, kinds included: (table, column, stored value), every
        column that holds it (a vet's name in the appointments and in the diary), the best linked first."""
        return tuple(dict.fromkeys((k.entry.table, k.entry.column, k.entry.value)
                                   for k in self._named(text, kinds=True, whole_kinds=True)))

    def _named(self, text: str, *, kinds: bool, whole_kinds: bool = False) -> list[Link]:
        """Every value ``text`` names (``link``'s rule), best first, one link per column that holds it; with
        ``whole_kinds``, every kind whose words the text all gives too ("vaccination" of a category, though
        many names of services hold the word)."""
        said: dict[str, str] = {}
        named: set[str] = set()
        for m in _WORD.finditer(text):
            word = stem(m.group(0).casefold())
            if word in STOP_WORDS:
                continue
            said.setdefault(word, m.group(0))
            if m.group(0)[0].isupper() and not _SENTENCE_START.search(text[:m.start()]):
                named.add(word)
        candidates = {id(e): e for word in said for e in self._by_word.get(word, ())}
        scored: list[tuple[float, Link]] = []
        for entry in candidates.values():
            words = self._words[id(entry)]
            matched = [w for w in words if w in said]
            weight = {w: 1.0 / self._held[w] for w in words}
            score = sum(weight[w] for w in matched) / sum(weight.values())
            if entry.kind and not kinds and not named.intersection(matched):
                continue  # "booked" is a status, not what the request is about; "Okoro" is a person
            own = any(self._held[w] == 1 and (w in named or len(w) >= _LONG) for w in matched)
            # one word of a longer value links only as its own: "Don't" names no "Don Norman"
            whole = len(matched) >= 2 or len(words) == 1
            every = whole_kinds and entry.kind and len(matched) == len(words)
            if every or own or (whole and score >= 0.5 and any(self._held[w] <= _DISTINCT for w in matched)):
                scored.append((score, Link(" ".join(said[w] for w in matched), entry, len(matched) == len(words))))
        scored.sort(key=lambda s: (-s[0], s[1].entry.key is None, s[1].entry.table, s[1].entry.column))
        return [link for _, link in scored]


_BUILT: weakref.WeakKeyDictionary[ReadOnlySQL, tuple[float, ValueIndex]] = weakref.WeakKeyDictionary()
_BUILDING = threading.Lock()


def value_index(sql: ReadOnlySQL, fresh_s: float = 60.0) -> ValueIndex:
    """The index of ``sql``'s values, shared by every run on that database (a service makes a runner per run),
    built again once ``fresh_s`` has passed: rows added since, by ingest or a write that ran, link from then."""
    with _BUILDING:
        built = _BUILT.get(sql)
        if built is None or time.monotonic() - built[0] > fresh_s:
            built = _BUILT[sql] = (time.monotonic(), ValueIndex.build(sql))
        return built[1]


def _key_column(sql: ReadOnlySQL, table: str, columns: list[str]) -> str | None:
    """The first column whose values are all present and all different: a row's key."""
    counts = ", ".join(f'COUNT(DISTINCT "{c}")' for c in columns)
    row = sql.execute_unchecked(f'SELECT COUNT(*), {counts} FROM "{table}"')["rows"]
    if not row or not row[0][0]:
        return None
    total, *distinct = row[0]
    return next((c for c, n in zip(columns, distinct, strict=True) if n == total), None)


def holds_kinds(distinct: int, rows: int) -> bool:
    """Whether a column of ``distinct`` values over ``rows`` rows holds kinds: a few values, each on several rows."""
    return 0 < distinct <= KINDS and rows >= 2 * distinct


def _column_entries(sql: ReadOnlySQL, table: str, column: str, key: str | None) -> list[Entry]:
    """The column's short text values that are names (not dates, not identifiers), page by page."""
    one_key = f'MIN("{key}")' if key else "NULL"
    entries: list[Entry] = []
    rows_read = 0
    for page in range(_PAGES):
        result = sql.execute_unchecked(
            f'SELECT "{column}", COUNT(*), {one_key} FROM "{table}" WHERE "{column}" IS NOT NULL '
            f'GROUP BY "{column}" ORDER BY "{column}" LIMIT {sql.row_cap} OFFSET {page * sql.row_cap}')
        for value, rows, row_key in result["rows"]:
            text = str(value).strip()
            rows_read += int(rows)
            if (not text or len(text) > _MAX_CHARS or ISO_DATE.match(text) or IDENTIFIER.fullmatch(text)
                    or _CODE.match(text) or not _WORD.search(text)):
                continue
            entries.append(Entry(table, column, text, int(rows),
                                 (key, str(row_key)) if key and rows == 1 and row_key is not None else None))
        if not result["truncated"] and result["row_count"] < sql.row_cap:
            break
    kinds = page == 0 and holds_kinds(len(result["rows"]), rows_read)
    return [replace(e, kind=True) for e in entries] if kinds else entries

"""The request, parsed once per run: what every rule of the answer path reads instead of the raw text.

A run's steps each ask something of the request (how many things it asks, which identifiers and names
it gives, its figures and dates, whether it asks for facts or for what the documents say). Parsing it
once, into a frozen value carried on the run, gives every step the same reading of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

from toolcrib.retrieval.excerpt import names
from toolcrib.sql.guard import statement_text
from toolcrib.text import find_identifiers, stems

SmallTalk = Literal["greeting", "thanks", "goodbye"]

# a request that asks two things: "what does X cost and how often should it be replaced?"
_ASK_SPLIT = re.compile(r"(?<=\?)\s+(?=\S[^?]*\?)|,?\s+\b(?:and|but)\s+(?=(?:how|what|when|where|which|who|why|"
                        r"whether|is|are|does|do|did|can|should|must)\b)", re.IGNORECASE)
# where the answer should come from, not what it is about
_META = re.compile(r"\b(?:according\s+to|as\s+stated\s+in|in|from)\s+(?:our|the)\s+(?:documents?|docs|records|files)\b",
                   re.IGNORECASE)
# asks what named sources say: "what do the parts list and the contract each say ...?"
_SOURCES_SAY = re.compile(r"^\s*what\s+(?:do|does|did)\s+(?:the|our)\s+[^?]{3,80}?\s+(?:each\s+|both\s+)?say\b",
                          re.IGNORECASE)
# A sentence that asks for facts: it opens with a wh-word or "how much/many/long", or asks to be given,
# shown or told something (after an optional greeting); a yes/no question ("does", "is", "can") or a
# why/how-to question needs the model.
_FACT_QUESTION = re.compile(
    r"^\s*(?:(?:hi|hello|hey|please)[\s,!]+)?(?:what(?:'s| is| are| was| were)?|which|who|whom|where|when"
    r"|how\s+(?:much|many|long|soon|old)|(?:give|show|tell|get)\s+(?:me|us))\b", re.IGNORECASE)
_SMALL_TALK = re.compile(
    r"^\s*(?:(?P<greeting>hi|hello|hey|hiya|howdy|greetings|good\s+(?:morning|afternoon|evening|day))"
    r"|(?P<thanks>thanks?|thank\s+you|thx|cheers|much\s+appreciated|great,?\s+thanks?)"
    r"|(?P<goodbye>bye|goodbye|see\s+you(?:\s+later)?|have\s+a\s+(?:good|nice)\s+(?:day|one)))"
    r"(?:\s+(?:there|again|all|everyone|so\s+much|very\s+much|a\s+lot))?"
    r"(?:[\s,!.]*how\s+are\s+you(?:\s+doing)?(?:\s+today)?)?"
    r"[\s!.,:;)?]*$", re.IGNORECASE)
# a figure standing alone (not inside G7, CH3 or AB-1001), with its sign
_FIGURE = re.compile(r"(?<![\w.-])[-−]?\d+(?:\.\d+)?(?![\w-])")
_ISO_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b")
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTH = r"(?P<month>jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?"
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
# a date written out with its year: "8 December 2026", "8th of Dec 2026", "December 8, 2026"
_WRITTEN_DATES = (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\s+(?P<year>\d{{4}})\b", re.IGNORECASE),
                  re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+(?P<year>\d{{4}})\b", re.IGNORECASE))


def _dates(text: str) -> tuple[date, ...]:
    """The dates ``text`` gives with their year, ISO ones first, then those written out; once each."""
    found: list[date] = []
    for iso in _ISO_DATE.findall(text):
        try:
            found.append(date.fromisoformat(iso))
        except ValueError:  # 2026-13-40: not a date
            continue
    for m in (m for pattern in _WRITTEN_DATES for m in pattern.finditer(text)):
        month = _MONTHS.index(m.group("month").lower()[:3]) + 1
        try:
            found.append(date(int(m.group("year")), month, int(m.group("day"))))
        except ValueError:  # 31 February
            continue
    return tuple(dict.fromkeys(found))


@dataclass(frozen=True)
class Request:
    """One request as the answer path reads it. Build it with ``Request.parse``."""

    text: str
    asks: tuple[str, ...]  # the things it asks, in order ("What does X cost and how often ...?" is two)
    names: tuple[str, ...]  # runs of capitalised words ("Northwind Labs")
    identifiers: tuple[str, ...]  # of the default shape (text.IDENTIFIER)
    figures: tuple[str, ...]  # standing alone, with their sign ("-3", "12")
    dates: tuple[date, ...]  # dates it gives with their year, ISO or written out
    stems: frozenset[str]
    wants_facts: bool  # a sentence of it asks for facts (what/which/who/where/when/how much ...)
    wants_documents: bool  # it asks what the documents say
    small_talk: SmallTalk | None  # it is only a greeting, thanks or goodbye
    sql: str  # SQL statement text it carries ("1; DROP TABLE x;--"), or ''

    @classmethod
    def parse(cls, text: str) -> Request:
        talk = _SMALL_TALK.match(text)
        return cls(
            text=text,
            asks=tuple(asks(text)),
            names=tuple(names(text)),
            identifiers=tuple(find_identifiers(text)),
            figures=tuple(m.group(0).replace("−", "-") for m in _FIGURE.finditer(text)),
            dates=_dates(text),
            stems=frozenset(stems(text)),
            wants_facts=any(_FACT_QUESTION.search(s) for s in re.split(r"(?<=[.!?])\s+", text)),
            wants_documents=_META.search(text) is not None or _SOURCES_SAY.search(text) is not None,
            small_talk=talk.lastgroup if talk is not None else None,  # type: ignore[arg-type]
            sql=statement_text(text),
        )


def without_meta(text: str) -> str:
    """``text`` less the words that say where the answer should come from ("according to our documents")."""
    return _SOURCES_SAY.sub(" ", _META.sub(" ", text))


def asks(text: str) -> list[str]:
    """The things ``text`` asks, in order (``Request.asks`` for a text that is not the request)."""
    return [part.strip() for part in _ASK_SPLIT.split(text) if part and part.strip()]

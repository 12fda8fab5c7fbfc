"""The request, parsed once per run: what every rule of the answer path reads instead of the raw text.

A run's steps each ask something of the request (how many things it asks, which identifiers and names
it gives, its figures and dates, whether it asks for facts or for what the documents say). Parsing it
once, into a frozen value carried on the run, gives every step the same reading of it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import date
from typing import Literal

from toolcrib.agent.facts import Facts
from toolcrib.dates import Stated, stated_dates
from toolcrib.retrieval.excerpt import names
from toolcrib.sql.guard import statement_text
from toolcrib.text import TYPED_IDENTIFIER, find_identifiers, stems
from toolcrib.tools.grounding import identifiers
from toolcrib.websearch.results import needs_current_data

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
# answered by reasoning over the evidence, not by quoting it: a yes/no, a hypothetical, a comparison
_REASONING = re.compile(r"^\s*(?:can|could|is|are|was|were|does|do|did|should|will|would|may|must|has|have|if)\b|"
                        r"\b(?:today|tomorrow|yesterday|if|cheaper|cheapest|fewer|better|worse|compare|versus|vs|"
                        r"summari[sz]e|explain)\b", re.IGNORECASE)
# asks for more than records' facts: a reason, advice, a comparison, a condition
_JUDGEMENT = re.compile(r"\b(?:why|explain|should|compare|recommend|summari[sz]e|differ\w*|if|whether|"
                        r"than|instead|but|except|overdue|late|enough)\b", re.IGNORECASE)
# asks how something is done: a procedure's steps
_PROCEDURE = re.compile(r"^\s*how\s+(?:do|can|should|would|must)\s+(?:i|we|you)\b|\bhow\s+to\b|\bsteps?\b|"
                        r"\bprocedure\b", re.IGNORECASE)
# what the answer to an ask must hold: a price asked is a figure with its currency; an amount, a
# duration or a date asked is a figure; "when" asks for a date or a time
_PRICE_ASK = re.compile(r"\b(?:price[sd]?|costs?)\b", re.IGNORECASE)
_AMOUNT_ASK = re.compile(r"\b(?:how\s+(?:much|many|long|soon|often|fast|far|quickly)|when|what\s+(?:time|date|day)|"
                         r"percent(?:age)?|rate|period|value|total|fees?|charges?)\b", re.IGNORECASE)
_WHEN_ASK = re.compile(r"^\s*when\b|\bwhat\s+(?:date|day|time)\b", re.IGNORECASE)
# what separates the names of a list: "Norden and Ostara", "Norden's, Borealis's or Ostara's"
_LISTED = re.compile(r"(?:['’]s)?\s*(?:,\s*(?:and\s+|or\s+)?|and|or|&|vs\.?|versus)\s*", re.IGNORECASE)
_TOKEN = re.compile(r"[\w.,:-]+")
_LETTERS = re.compile(r"[a-z]+")
# a clause that supposes rather than asks ("If I cancel it 30 hours beforehand, will I be charged?"): from
# its conjunction to the comma, "then" or end of sentence that closes it
_SUPPOSING = re.compile(r"\b(?:if|unless|suppose|supposing|assuming|in\s+case)\b[^,.;?!]*?(?=,|\bthen\b|[.;?!]|$)",
                        re.IGNORECASE)
# a figure with a short unit after it ("12 V", "5 kg"): the unit is not an identifier
_WITH_UNIT = re.compile(r"(?<![\w.-])[-−]?\d+(?:\.\d+)?\s*[A-Za-z%°]{1,2}\b")
# a figure standing alone (not inside G7, CH3 or AB-1001), with its sign
_FIGURE = re.compile(r"(?<![\w.-])[-−]?\d+(?:\.\d+)?(?![\w-])")
@dataclass(frozen=True)
class Ask:
    """One thing a request asks (or the request less some of its words), and what its answer must hold.
    Build it with ``Ask.of``."""

    text: str
    identifiers: tuple[str, ...]  # as people type them (text.TYPED_IDENTIFIER: QX-4030, P2, ch1)
    price: bool  # it asks a price: the answer holds a figure with its currency
    when: bool  # it asks when ("when", "what date"): the answer holds a date or a time
    amount: bool  # it asks an amount, a duration or a date: the answer holds a figure

    @classmethod
    def of(cls, text: str) -> Ask:
        return cls(text, tuple(TYPED_IDENTIFIER.findall(text)), _PRICE_ASK.search(text) is not None,
                   _WHEN_ASK.search(text) is not None, _AMOUNT_ASK.search(text) is not None)


def question_problem(question: str, max_chars: int | None = None) -> str:
    """What makes ``question`` one no run should start on, in the words the CLI and the service both use:
    nothing but spaces, or more than ``max_chars`` characters (``[service] max_question_chars``); "" when
    nothing does."""
    if not question.strip():
        return "the question is empty: write what you want to know or have done"
    if max_chars is not None and len(question) > max_chars:
        return f"the question is over {max_chars} characters"
    return ""


@dataclass(frozen=True)
class Request:
    """One request as the answer path reads it. Build it with ``Request.parse``."""

    text: str
    asks: tuple[str, ...]  # the things it asks, in order ("What does X cost and how often ...?" is two)
    names: tuple[str, ...]  # runs of capitalised words ("Northwind Labs")
    proper_names: tuple[str, ...]  # its names that are not identifiers as people type them ("QX-4030")
    identifiers: tuple[str, ...]  # of the default shape (text.IDENTIFIER)
    typed_identifiers: tuple[str, ...]  # as people type them (text.TYPED_IDENTIFIER: P2, ch1), in order
    figures: tuple[str, ...]  # standing alone, with their sign ("-3", "12")
    stated: Facts  # its identifiers and figures as the claim check reads evidence (every number counts)
    dated: tuple[Stated, ...]  # the dates and spans it states, resolved against ``today`` (``dates.stated_dates``)
    today: date
    stems: frozenset[str]
    words: frozenset[str]  # its words of letters, lower case ("book", "dr")
    without_units: str  # the text less its figures with a short unit ("12 V"): where identifiers are read
    wants_facts: bool  # a sentence of it asks for facts (what/which/who/where/when/how much ...)
    wants_documents: bool  # it asks what the documents say
    small_talk: SmallTalk | None  # it is only a greeting, thanks or goodbye
    asks_reasoning: bool  # a yes/no, a hypothetical, a comparison, a summary: reasoning over the evidence
    asks_judgement: bool  # why, explain, should, compare, than, except ...: more than records' facts
    asks_procedure: bool  # how something is done ("how do I ...", "steps", "procedure")
    holds_figure: bool  # a word of it starts with a digit ("from 0 V to 24 V", "on 2026-11-06")
    needs_current_data: bool  # it asks for current public information (news, weather, rates): the web's
    sql: str  # SQL statement text it carries ("1; DROP TABLE x;--"), or ''
    supposed: str  # its clauses that suppose ("if I cancel it"), joined; what it asks for is in ``asserted``
    asserted: str  # the text less those clauses

    @classmethod
    def parse(cls, text: str, today: date | None = None) -> Request:
        """``text`` read once; its dates resolved against ``today`` (default: the machine's)."""
        talk = _SMALL_TALK.match(text)
        today = today or date.today()
        dated = stated_dates(text, today)
        in_dates = set(_LETTERS.findall(" ".join(d.text for d in dated).casefold()))
        # the weekday and month of a date it states are no names ("Tuesday December" of "Tuesday 8 December")
        named = tuple(n for n in names(text) if not set(_LETTERS.findall(n.casefold())) <= in_dates)
        return cls(
            text=text,
            asks=tuple(asks(text)),
            names=named,
            proper_names=tuple(n for n in named if not TYPED_IDENTIFIER.fullmatch(n)),
            identifiers=tuple(find_identifiers(text)),
            typed_identifiers=tuple(TYPED_IDENTIFIER.findall(text)),
            figures=tuple(m.group(0).replace("−", "-") for m in _FIGURE.finditer(text)),
            stated=Facts.of(text, evidence=True),
            dated=dated,
            today=today,
            stems=frozenset(stems(text)),
            words=frozenset(_LETTERS.findall(text.casefold())),
            without_units=_WITH_UNIT.sub(" ", text),
            wants_facts=any(_FACT_QUESTION.search(s) for s in re.split(r"(?<=[.!?])\s+", text)),
            wants_documents=_META.search(text) is not None or _SOURCES_SAY.search(text) is not None,
            small_talk=talk.lastgroup if talk is not None else None,  # type: ignore[arg-type]
            sql=statement_text(text),
            supposed=" ".join(m.group(0) for m in _SUPPOSING.finditer(text)),
            asserted=_SUPPOSING.sub(" ", text),
            asks_reasoning=_REASONING.search(text) is not None,
            asks_judgement=_JUDGEMENT.search(text) is not None,
            asks_procedure=_PROCEDURE.search(text) is not None,
            holds_figure=any(token[:1].isdigit() for token in _TOKEN.findall(text)),
            needs_current_data=needs_current_data(text),
        )

    @property
    def dates(self) -> tuple[date, ...]:
        """The days it names, one each ("Tuesday 8 December", "tomorrow"), without its spans ("last month")."""
        return tuple(d.day for d in self.dated if d.day is not None)

    @property
    def as_of(self) -> tuple[tuple[date, date], ...]:
        """The days it is about, as spans: the dates it states, or today when it states none."""
        return tuple((d.first, d.last) for d in self.dated) or ((self.today, self.today),)

    def asserts(self, word: str) -> bool:
        """Whether it says ``word`` (lower case) outside the clauses that only suppose ("if I cancel it")."""
        return word in _LETTERS.findall(self.asserted.casefold())

    def identifiers_of(self, shape: str) -> list[str]:
        """The identifiers of a tool's ``shape`` (``Identifier(shape=...)``) the text gives, in order."""
        return identifiers(self.text, shape)

    def without(self, words: Collection[str]) -> str:
        """The text less each of ``words`` (names it gives), possessive and all ("Ostara's")."""
        text = self.text
        for word in words:
            text = re.sub(rf"\b{re.escape(word)}(?:['’]s)?\b", " ", text)
        return text

    def listed(self, first: str, then: str) -> bool:
        """Whether the text lists ``then`` right after ``first`` (two of its names): "Norden and Ostara",
        "A, B or C"."""
        text = self.text
        return _LISTED.fullmatch(text[text.find(first) + len(first):text.find(then)]) is not None


def without_meta(text: str) -> str:
    """``text`` less the words that say where the answer should come from ("according to our documents")."""
    return _SOURCES_SAY.sub(" ", _META.sub(" ", text))


def asks(text: str) -> list[str]:
    """The things ``text`` asks, in order (``Request.asks`` for a text that is not the request)."""
    return [part.strip() for part in _ASK_SPLIT.split(text) if part and part.strip()]

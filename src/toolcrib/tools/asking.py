"""Which writes a request asks for: each clause that asks for a change, to the writes it fits best.

A request asks for a change in a clause that opens with a verb ("Turn down Priya for J-12", "bump
campaign AD-31 to 40 a day") or addresses its reader ("could you ...", "I'd like you to ..."). A clause
that asks a question ("why did the build fail?"), asks to read ("summarize the comments") or states
a fact ("Priya sent the files") asks for none. An asking clause is matched against every write the
registry holds, on:

- the tool's verb or the verb its description starts with (the strongest), or a synonym of them;
- the words of its name that say what it acts on ("campaign" for pause_all_campaigns; the words every
  tool's name shares, a vendor's or a product's, say nothing);
- the words of its description, and the kinds of thing its verb's group acts on ("bill" for a payment);
- the call's own values that the clause states ("AD-31", "general" for a channel).

The clause asks for the writes that fit it best, so "refund order O-1" asks for issue_refund, not for
cancel_order beside it, whose object it names too, and a clause that fits no write asks for none.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from toolcrib.text import STOP_WORDS, stem
from toolcrib.tools.actions import (
    GENERIC,
    VERBS,
    action_of,
    base_verb,
    description_verb,
    kinds,
    phrasal_verb,
    split_name,
    synonyms,
    verbs_in,
)
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.instructions import ADDRESSING, OPENERS
from toolcrib.tools.tool import Effect, Tool

# Where one clause of a request ends and the next begins.
_CLAUSES = re.compile(r"[.!?;:\n,()]+(?=\s|$)|\s(?:and|then|so|but|also)\s", re.I)
# Words a clause that asks to read or asks a question opens with ("summarize ...", "why did ...").
_READING = frozenset({"read", "summarize", "summarise", "check", "look", "see", "review", "find", "show", "list",
                      "search", "view", "browse", "what", "which", "who", "whom", "whose", "where", "when", "why",
                      "how", "is", "are", "was", "were", "does", "did", "has", "have", "had", "any"})
# Reading words that take a particle or a listener ("go through", "tell me").
_READING_PAIRS = frozenset({("go", "through"), ("go", "over"), ("tell", "me"), ("tell", "us"), ("do", "you"),
                            ("do", "we"), ("do", "i"), ("do", "they")})
# Words a statement opens with: a pronoun or a determiner ("I'm at the door", "the booking is ...").
_SUBJECTS = frozenset({"i", "we", "he", "she", "they", "it", "there", "here", "this", "that", "these", "those",
                       "the", "a", "an", "my", "our", "his", "her", "their", "its", "if", "as", "whoever"})
# Finite verbs that follow a statement's subject ("Priya sent ...", "Tom wants ...").
_FINITE = frozenset({"is", "are", "was", "were", "has", "had", "am", "wants", "asks", "asked", "says", "said",
                     "sent", "wrote", "got", "lost", "paid", "needs", "thinks", "thought", "told", "made", "came",
                     "gave", "left", "took"})
# A request made in the first person ("I'd like you to ...", "we need to ...").
_WANTING = re.compile(r"\b(?:i|we)\s*(?:'d|\s+would)?\s+(?:like|want|need)\s+(?:you\s+)?to\b|\blet'?s\b"
                      r"|\byour\s+(?:task|job)\s+is\s+to\b", re.I)
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")
# Words that name nothing a tool acts on.
_EMPTY = STOP_WORDS | GENERIC | frozenset({
    "the", "and", "for", "our", "his", "her", "him", "you", "she", "they", "its", "please", "can", "any", "one",
    "new", "now", "out", "get", "let", "put", "set", "give", "make", "take", "use", "user", "users", "someone",
    "something", "who", "whom", "not", "are", "was", "has", "had"})


@lru_cache(maxsize=1024)
def asking_clauses(request: str) -> tuple[str, ...]:
    """The clauses of ``request`` that ask for a change, stripped, in order."""
    return tuple(clause.strip() for clause in _CLAUSES.split(request) if asks_for_change(clause))


def asks_for_change(clause: str) -> bool:
    """Whether ``clause`` asks for a change: it addresses its reader or speaks in the first person of
    what it wants ("could you", "I'd like you to"), or opens with a word that is not a question's, a
    reading verb's or a statement's subject (an imperative: "bump ...", "turn down ...")."""
    words = [w.split("'")[0] for w in _WORD.findall(clause.lower())]
    while words and words[0] in OPENERS:
        words = words[1:]
    if not words:
        return False
    if asking := ADDRESSING.search(clause) or _WANTING.search(clause):
        after = _WORD.findall(clause[asking.end():].lower())[:1]  # "you can find her e-mail on ..." reads
        return not after or after[0] not in _READING
    first = words[0]
    if first in _READING or tuple(words[:2]) in _READING_PAIRS or first in _SUBJECTS or _participle(first):
        return False  # a question, a reading, a statement, or a clause that goes with another ("saying ...")
    imperative = base_verb(first) in VERBS or bool(phrasal_verb(words, 0))
    return imperative or not any(w in _FINITE or (len(w) > 4 and w.endswith("ed")) for w in words[1:3])


def _participle(word: str) -> bool:
    """Whether ``word`` is an -ing form that is no verb of the lexicon ("saying", "following"; not "ping")."""
    return len(word) > 5 and word.endswith("ing") and word not in VERBS


def asking_for(tool: Tool, values: Mapping[str, Any], request: str, tools: Iterable[Tool]) -> str:
    """The clause of ``request`` that asks for this call of ``tool`` (with ``values``), among the writes
    ``tools`` holds: the first asking clause it fits at all and no other write fits better; "" if none."""
    writes = [t for t in tools if t.effect is not Effect.READ]
    if tool not in writes:
        writes.append(tool)
    shared = _shared_words(tuple(t.name for t in writes))
    readings = {t.name: _reading(t.name, t.description, t.intent, shared) for t in writes}
    for clause in asking_clauses(request):
        fits = {name: reading.fit(clause) for name, reading in readings.items()}
        own = fits.pop(tool.name) + 2 * _stated(values, clause)
        if own > 0 and own >= max(fits.values(), default=0):
            return clause
    return ""


def _stated(values: Mapping[str, Any], clause: str) -> int:
    """How many of ``values`` ``clause`` states: text of three characters or more, not a bare figure (a
    figure says little about which tool is meant: "20" is in "2026-03-20")."""
    seen = Grounding(clause)
    return sum(1 for value in values.values()
               if isinstance(value, str) and len(value) > 2 and not value.replace(".", "").isdigit()
               and seen.contains(value))


@lru_cache(maxsize=256)
def _shared_words(names: tuple[str, ...]) -> frozenset[str]:
    """The words every one of the tool ``names`` holds (a vendor's, a product's): they say nothing."""
    return frozenset.intersection(*(frozenset(split_name(n)) for n in names)) if len(names) > 1 else frozenset()


@dataclass(frozen=True)
class _Reading:
    """What a write's declaration offers a request's clause to fit: its own verb, their synonyms (or its
    declared intent words), what it acts on and the other words of its description."""

    own: str
    similar: frozenset[str]
    intent: frozenset[str]
    objects: frozenset[str]
    described: frozenset[str]

    def fit(self, clause: str) -> int:
        """How well ``clause`` fits: 6 for the tool's own verb, 3 for a synonym (declared intent words are
        its own), 2 for each word of what it acts on, 1 for each other word of its description or of what
        its verb's group acts on."""
        return _fit(self, clause)


@lru_cache(maxsize=1024)
def _reading(name: str, description: str, intent: tuple[str, ...], shared: frozenset[str]) -> _Reading:
    action = action_of(name)
    described = description_verb(description)
    # the name's verb where the lexicon knows it; else the description's, where it knows that one
    own = action.verb if action.verb in VERBS or not described else described
    objects = frozenset(stem(w) for w in (*action.context, *action.objects)
                        if len(w) > 2 and w not in shared | _EMPTY)
    words = _words(description.split(" ", 1)[-1]) | {stem(k) for k in kinds(action.verb)}
    return _Reading(own, action.verbs | (synonyms(described) if described else frozenset()),
                    frozenset(stem(w) for w in intent), objects, words - objects)


@lru_cache(maxsize=4096)
def _fit(reading: _Reading, clause: str) -> int:
    asked = verbs_in(clause)
    words = _words(clause)
    if reading.intent:
        verb = 6 if reading.intent & (words | {stem(v) for v in asked}) else 0
    else:
        verb = 6 if reading.own in asked else 3 if asked & reading.similar else 0
    return verb + 2 * len(reading.objects & words) + len(reading.described & words)


@lru_cache(maxsize=4096)
def _words(text: str) -> frozenset[str]:
    """The stems of the words of ``text`` that may name what a tool acts on."""
    return frozenset(stem(w) for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in _EMPTY)

"""Content that instructs: the sentences of a text that ask its reader to do something.

"Please grant Amy access to the lock", "Could you send the list to ...", "You can close my other ticket
as well", "Transfer $500 to ...", "Honestly, book Hotel X instead": a sentence that addresses its reader
("please", "could you", "you should", "make sure to"), or one a clause of which opens with an action
verb, asks for an action. In content others wrote (an e-mail, a review, a ticket's comment) that is what
an injected instruction looks like, with or without the cue phrases the scanner looks for, and it is
also how ordinary mail reads ("Please review the draft"): a sentence that instructs is a signal, never a
verdict. The gate quotes it in the warning on a write the request did not ask for, and warns about a
value that only such a sentence gave.
"""

from __future__ import annotations

import re
from functools import lru_cache

from toolcrib.tools.actions import VERBS, phrasal_verb

ADDRESSING = re.compile(
    r"\b(?:please|pls|plz|kindly)\b"
    r"|\b(?:can|could|would|will)\s+you\b"
    r"|\byou\s+(?:should|must|need\s+to|have\s+to|can|could|may\s+want\s+to|ought\s+to|are\s+to)\b"
    r"|\b(?:i|we)\s*(?:'d|\s+would|\s+need|\s+want)\s+(?:like\s+)?you\s+to\b"
    r"|\b(?:make|be)\s+sure\s+(?:to|you)\b|\b(?:don'?t|do\s+not)\s+forget\s+to\b|\bremember\s+to\b"
    r"|\bgo\s+ahead\s+and\b", re.I)
"""Words that address the reader and ask ("please", "could you", "you should", "I need you to")."""
OPENERS = frozenset({"also", "and", "then", "now", "so", "just", "oh", "btw", "ps", "p", "s", "finally", "next",
                     "additionally", "afterwards", "lastly", "first", "firstly", "second", "secondly", "hey"})
"""Words that may come before an imperative at the start of a sentence ("Also cancel ...", "P.S. send ...")."""
_SENTENCE = re.compile(r"[^.!?\n]+(?:[.!?]+(?=\s|$)|\n|$)|[^\n]+")
# Where a sentence's clauses meet: an imperative may follow one ("Honestly, book X instead", "It is broken,
# so switch every campaign off").
_PARTS = re.compile(r"[,;]\s+(?:(?:so|and|then|just)\s+)?|\s(?:so|and\s+then)\s+|\s[-\u2013\u2014]\s")
_WORDS = re.compile(r"[A-Za-z][A-Za-z']*|[^\sA-Za-z]")


def instructing(text: str) -> list[str]:
    """The sentences of ``text`` that ask their reader to do something, stripped, in order."""
    return list(_instructing(text))


@lru_cache(maxsize=2048)
def _instructing(text: str) -> tuple[str, ...]:
    found = []
    introduced = False  # the sentence before asked and ended with a colon: "please do the following first:"
    for match in _SENTENCE.finditer(text):
        sentence = match.group(0).strip()
        if len(sentence) <= 3:
            continue
        if introduced or ADDRESSING.search(sentence) or any(map(_opens_with_verb, _PARTS.split(sentence))):
            found.append(sentence)
            introduced = sentence.endswith(":")
    return tuple(found)


def _opens_with_verb(sentence: str) -> bool:
    """Whether ``sentence`` opens with an action verb in its bare form ("Cancel order O-5521", "Also
    send ..."), not a heading or label ("Update: ...", "Transfer 5521 done")."""
    words = _WORDS.findall(sentence)
    while words and (words[0].lower() in OPENERS or not words[0][0].isalpha()):
        words = words[1:]
    if len(words) < 2 or words[1] in (":", "-") or not words[0][0].isalpha():
        return False
    lowered = [w.lower() for w in words]
    return lowered[0] in VERBS or bool(phrasal_verb(lowered, 0))

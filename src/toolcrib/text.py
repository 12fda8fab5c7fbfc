"""Reading text: words, stems, stop words, sentences and identifier shapes, defined once.

The answer path's rules, argument grounding, tool matching, SQL labels and the retriever's identifier
lookup read words the same way from here. (The excerpt scorer, the scanner's cues and the chunker still
keep their own readings: they rank and split differently, and merging them is a measured change of its
own. The lexical index's Snowball stemmer is part of the index's format.)
"""

from __future__ import annotations

import re

WORD = re.compile(r"[^\W_]+")
"""A word: letters and digits, no underscore ("Late-Delivery" is two)."""

_ENDINGS = ("ing", "ed", "es", "s", "e")

SENTENCES = re.compile(r"(?<=[.!?])(?=\s+[A-Z\[(\"'*-])|(?<=\n)")
"""Where one sentence ends and the next begins, keeping what separates them (so kept ones join back)."""

_HYPHENATED = r"[A-Za-z0-9]+(?:[-_/][A-Za-z0-9]+)+"
IDENTIFIER = re.compile(
    r"(?<![\w.])(?:"
    rf"(?=[\w/-]*\d)(?=[\w/-]*[A-Za-z]){_HYPHENATED}"  # letters and digits joined: AB-1234, PO_77/2
    r"|(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z0-9]{4,}"  # X2000, SKU123
    r"|\d+(?:\.\d+)+"  # clause numbers: 8.3, 12.1.4
    r")(?![\w]|\.\d)"
)
"""The default identifier shape: letters and digits joined, long codes, clause numbers. A tool may
declare its own shape for an argument (``Identifier(pattern=...)``)."""

TYPED_IDENTIFIER = re.compile(r"\b[A-Za-z]{1,6}-?\d[A-Za-z0-9-]*\b")
"""An identifier as people type it, short ones and lower case too (P2, ch1, ab-12)."""

CODE_IDENTIFIER = re.compile(r"\b[A-Z]{1,6}-?\d[A-Z0-9-]*\b")
"""An identifier as systems write it: capitals then digits (AB-1234, KB-400, G7)."""


def spaced(text: str) -> str:
    """``text`` as its words in lower case, one space apart and around ("Late-Delivery" -> " late delivery ")."""
    return " " + " ".join(WORD.findall(text.casefold())) + " "


def stem(word: str) -> str:
    """``word`` without a common English ending ("reserving" -> "reserv"); short words kept whole."""
    for ending in _ENDINGS:
        if len(word) > len(ending) + 2 and word.endswith(ending) and not (ending == "ed" and word.endswith("eed")):
            return word[: -len(ending)]  # "breed" and "speed" are no past tense
    return word


def stems(text: str) -> set[str]:
    """The stems of the letter words of ``text``, lower case."""
    return {stem(w) for w in re.findall(r"[a-z]+", text.lower())}


STOP_WORDS = frozenset({"this", "that", "with", "from", "have", "will", "what", "which", "when", "where", "there",
                        "their", "about", "into", "than", "then", "them", "they", "been", "were", "your", "does",
                        "also", "only", "each", "must", "shall", "should", "would", "could"})


"""Words of four or more letters that name nothing a claim or passage must share."""


def content_words(text: str) -> set[str]:
    """The words of ``text`` of four or more characters that name something, and its figures."""
    return {w for w in re.findall(r"[a-z0-9][a-z0-9.,%-]*[a-z0-9%]|[0-9]", text.lower())
            if (len(w) >= 4 or w[0].isdigit()) and w not in STOP_WORDS}


def find_identifiers(text: str) -> list[str]:
    """The identifiers of the default shape in ``text``, each once, in order."""
    return list(dict.fromkeys(m.group(0) for m in IDENTIFIER.finditer(text)))

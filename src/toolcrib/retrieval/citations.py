"""Citations: what an answer rests on, and checking an answer's ``[doc_id#chunk_id]`` ids against what was
actually retrieved."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

_BRACKET = re.compile(r"\[([^\[\]\n]*#[^\[\]\n]*)\]")
_CITATION = re.compile(r"^[A-Za-z0-9._/-]+#[A-Za-z0-9._-]+$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_LEADING_BRACKETS = re.compile(r"^((?:\[[^\[\]\n]*#[^\[\]\n]*\]\s*)+)")
_MIN_CLAIM_WORDS = 4


@dataclass(frozen=True)
class Citation:
    """Evidence an answer rests on: a tool result, a retrieved passage or a web search hit (``source``: its
    URL), by stable id."""

    id: str
    kind: Literal["tool", "passage", "web"]
    source: str
    snippet: str = ""


@dataclass(frozen=True)
class CitationCheck:
    """``valid``/``invalid`` citations in order of first use; sentences that make a claim uncited."""

    valid: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    uncited_claims: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.invalid and not self.uncited_claims


def citations_in(text: str) -> list[str]:
    """Every ``doc#chunk`` id written in brackets, in order (``[a#c1; b#c2]`` holds two)."""
    found: list[str] = []
    for bracket in _BRACKET.finditer(text):
        for part in re.split(r"[,;\s]+", bracket.group(1)):
            part = part.strip()
            if _CITATION.match(part):
                found.append(part)
    return found


def _sentences(text: str) -> list[str]:
    pieces = [p.strip() for p in _SENTENCE.split(text) if p and p.strip()]
    sentences: list[str] = []
    for piece in pieces:
        lead = _LEADING_BRACKETS.match(piece)
        if lead and sentences:
            # "... 2% per week. [contract#c4]" : the citation belongs to the sentence before it
            sentences[-1] += " " + lead.group(1).strip()
            piece = piece[lead.end():].strip()
        if piece:
            sentences.append(piece)
    return sentences


def check_citations(answer_text: str, retrieved_ids: Iterable[str]) -> CitationCheck:
    """Valid citations were retrieved in this run; invalid ones were not (invented or stale).

    A sentence of at least four words that is not a question and carries no valid citation is
    flagged as an uncited claim.
    """
    retrieved = set(retrieved_ids)
    cited = list(dict.fromkeys(citations_in(answer_text)))
    valid = [c for c in cited if c in retrieved]
    invalid = [c for c in cited if c not in retrieved]
    uncited = []
    for sentence in _sentences(answer_text):
        bare = _BRACKET.sub("", sentence).strip()
        if len(bare.split()) < _MIN_CLAIM_WORDS or bare.endswith("?"):
            continue
        if not any(c in retrieved for c in citations_in(sentence)):
            uncited.append(bare)
    return CitationCheck(valid=valid, invalid=invalid, uncited_claims=uncited)

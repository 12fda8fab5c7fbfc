"""The evidence brief: what the run found, as the final ask shows it to the model.

The final ask is one user turn after the system block (which the decision left in the prompt cache):
the brief, the question and what to do. The conversation that found the evidence is not replayed: its
calls, the tool-result wrappers and the search's query line cost a small model on a CPU seconds of
prompt evaluation and tell it nothing the brief does not (the demo's final asks: 1,093 prompt tokens
on average became 853, and 27 s became 19 s at the median on an AVX2 CPU's two cores).
Each item stands under the label the answer cites it by, next to the call that produced it: a number
that ``Brief.cited_by_id`` turns back into its citation id (``[returns-policy-v2#c6]`` is ten prompt
tokens, and as many generated ones where the answer cites it; ``[1]`` is three). A lookup that found
nothing, or a call that failed, is stated without one (it cannot be cited).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.retrieval.evidence import CONFLICT_NOTE, CitedPassage, Conflict, Evidence
from toolcrib.text import SENTENCES, find_identifiers
from toolcrib.tools.result import CallOutcome

_LABELS = re.compile(r"\[\s*(\d+(?:\s*[,;]\s*\d+)*)\s*\]")  # [1], [1, 2]


@dataclass
class Brief:
    """The brief's text, and the label each citation id stands under in it (``{"a#c6": "1"}``)."""

    text: str = ""
    labels: dict[str, str] = field(default_factory=dict)

    def label(self, cid: str) -> str:
        """The label of ``cid``: the next number, the first time it is shown."""
        return self.labels.setdefault(cid, str(len(self.labels) + 1))

    def cited_by_id(self, answer: str) -> tuple[str, list[str]]:
        """``answer`` with each label it cites written as its citation id again (``[1, 2]`` -> ``[a#c1]
        [b#c2]``; a number that labels nothing is dropped), and each bracket that labels nothing at all
        (removed: a model that uses labels as blanks, "is [2] with a status of [3]", leaves holes)."""
        ids = {label: cid for cid, label in self.labels.items()}
        blanks: list[str] = []

        def relabel(match: re.Match[str]) -> str:
            numbers = re.split(r"\s*[,;]\s*", match.group(1))
            if not any(n in ids for n in numbers):  # a bracket that cites nothing stood for a value
                blanks.append(match.group(0))
            return " ".join(f"[{ids[n]}]" for n in numbers if n in ids)

        return _LABELS.sub(relabel, answer), blanks


def evidence_brief(ledger: EvidenceLedger, outcomes: Sequence[CallOutcome]) -> Brief:
    """The brief for ``ledger`` and the run's ``outcomes``: the calls in the order the run made them,
    then the passages under their documents, each labelled in reading order."""
    brief = Brief()
    lines: list[str] = []
    for outcome in outcomes:
        if outcome.status == "dropped":
            continue
        call = _call_text(outcome.call.name, outcome.call.arguments)
        if not outcome.ok:  # why is for the model that proposed it; the answer only needs that it did not run
            lines.append(f"- {call}: not run ({(outcome.payload.get('error') or {}).get('code', outcome.status)})")
            continue
        cid = ledger.citation_of(outcome.call.id)
        if cid is None:
            searched = Evidence.from_payload(outcome.payload.get("data"))
            if searched is not None and not searched.sufficient:
                lines.append(f"- {call} found no passage that matches it well")
            continue
        trust = " (low trust)" if outcome.flags else ""
        if cid in ledger.found_nothing:
            data = outcome.payload.get("data") or {}
            lines.append(f"- {call}: found nothing{trust}. {data.get('message') or ''}".rstrip())
        else:
            lines.append(f"[{brief.label(cid)}] {call} returned{trust}: {ledger.texts.get(cid, '')}")
    # a document's title, version and date once above its passages: ~30 prompt tokens a passage
    documents: dict[tuple[str, str, str, bool], list[tuple[str, CitedPassage]]] = {}
    for cid, passage in ledger.passages.items():
        documents.setdefault((passage.title, passage.version, passage.effective_date, passage.trusted),
                             []).append((cid, passage))
    for passages in documents.values():
        lines.append(f"From {_document(passages[0][1])}:")
        for cid, passage in passages:
            lines += [f"[{brief.label(cid)}] {_section(passage)}".rstrip(), passage.text]
    for cid, item in ledger.items.items():  # what a provider's own tools returned (records are shown above)
        if item.kind != "tool" and cid not in ledger.passages:
            lines.append(f"[{brief.label(cid)}] {ledger.texts.get(cid) or item.snippet}")
    for conflict in ledger.conflicts:
        if len(ledger.passages.keys() & set(conflict.citations)) >= 2:
            lines.append(_versions(conflict, brief.label))
    brief.text = "\n".join(lines)
    return brief


_GIST_CHARS = 160  # of a passage, in a decision's digest: about its first sentence
_RECORD_CHARS = 600  # of a record's JSON, in a decision's digest


def result_digest(outcome: CallOutcome) -> str:
    """``outcome`` as a decision of the aided loop reads it: each passage a search found by where it comes
    from, its first sentence and the identifiers it names; any other result as JSON, cut at a few hundred
    characters. Such a decision only chooses what to look up next (the answer is written from the whole
    brief); the passages in full cost a small model on a CPU seconds of prompt evaluation every round."""
    evidence = Evidence.from_payload(outcome.payload.get("data")) if outcome.ok else None
    if evidence is None:
        body = json.dumps(outcome.payload, ensure_ascii=False)
        return outcome.for_model(body if len(body) <= _RECORD_CHARS else f"{body[:_RECORD_CHARS]} ... (cut)")
    return outcome.for_model(replace(evidence, passages=tuple(replace(p, text=_gist(p.text))
                                                              for p in evidence.passages)).to_text())


def _gist(text: str) -> str:
    """The start of ``text`` (its first sentence, at most ``_GIST_CHARS``), and the identifiers the rest names."""
    first = SENTENCES.split(text.strip(), maxsplit=1)[0].strip()
    if len(first) > _GIST_CHARS:
        first = first[:_GIST_CHARS].rsplit(" ", 1)[0] + " ..."
    named = [i for i in find_identifiers(text) if i not in first]
    return f"{first} (also names: {', '.join(named)})" if named else first


def _versions(conflict: Conflict, label: Callable[[str], str]) -> str:
    """The conflict as the brief states it: the passages' documents are named above them with version and
    date, so only which passages are versions of one document (``Conflict.describe`` is for the reader
    of the answer: 105 prompt tokens for two versions, this about 40)."""
    versions = "; ".join(f"[{label(v['citation'])}] version {v.get('version') or '?'}" for v in conflict.versions
                         if v.get("citation"))
    return f"Versions of one document: {versions}. Note: {CONFLICT_NOTE}."


def _call_text(name: str, arguments: Mapping[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in arguments.items())})"


def _document(passage: CitedPassage) -> str:
    """The passage's document: its ``where`` without section and page, and without the version when the
    title names it."""
    version = "" if passage.version.casefold() in passage.title.casefold() else passage.version
    where = replace(passage, section="", page=None, version=version).where
    return where if passage.trusted else f"{where}, written outside the organisation"


def _section(passage: CitedPassage) -> str:
    """The passage's place in its document: its section path, less the parts that repeat the title ("Acme
    Ltd: Returns Policy" under "Returns Policy (version 2.0)"), and its page."""
    title = passage.title.casefold()
    name = re.sub(r"\s*\([^)]*\)", "", title).strip()
    steps = [s for s in passage.section.split(" > ")
             if s and s.casefold() not in title and not (name and name in s.casefold())]
    return ", ".join(x for x in (" > ".join(steps), f"p. {passage.page}" if passage.page else "") if x)

"""The evidence brief: what the run found, as the final ask shows it to the model.

The final ask is one user turn after the system block (which the decision left in the prompt cache):
the brief, the question and what to do. The conversation that found the evidence is not replayed: its
calls, the tool-result wrappers and the search's query line cost a small model on a CPU seconds of
prompt evaluation and tell it nothing the brief does not (the demo's final asks: 1,093 prompt tokens
on average became 853, and 27 s became 19 s at the median on an AVX2 CPU's two cores).
Each item stands under the id the answer cites it by, next to the call that produced it; a lookup
that found nothing, or a call that failed, is stated without an id (it cannot be cited).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.retrieval.evidence import CONFLICT_NOTE, CitedPassage, Evidence
from toolcrib.tools.result import CallOutcome


def evidence_brief(ledger: EvidenceLedger, outcomes: Sequence[CallOutcome]) -> str:
    """The brief for ``ledger`` and the run's ``outcomes``, in the order the run made the calls."""
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
            lines.append(f"[{cid}] {call} returned{trust}: {ledger.texts.get(cid, '')}")
    for cid, passage in ledger.passages.items():
        lines += [f"[{cid}] {_header(passage)}{'' if passage.trusted else ' (written outside the organisation)'}",
                  passage.text]
    for cid, item in ledger.items.items():  # what a provider's own tools returned (records are shown above)
        if item.kind != "tool" and cid not in ledger.passages:
            lines.append(f"[{cid}] {ledger.texts.get(cid) or item.snippet}")
    for conflict in ledger.conflicts:
        if len(ledger.passages.keys() & set(conflict.citations)) >= 2:
            lines.append(f"{conflict.describe()} Note: {CONFLICT_NOTE}.")
    return "\n".join(lines)


def _call_text(name: str, arguments: Mapping[str, Any]) -> str:
    return f"{name}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in arguments.items())})"


def _header(passage: CitedPassage) -> str:
    """The passage's ``where``, its section path less the parts that repeat its title."""
    steps = [s for s in passage.section.split(" > ") if s and s.casefold() not in passage.title.casefold()]
    return replace(passage, section=" > ".join(steps)).where

"""The evidence a run has gathered, and what code decides from it: which citations an answer keeps,
when the run must abstain and what it says then, and the note on conflicting document versions."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from toolcrib.agent import arithmetic, prompts, wording
from toolcrib.agent.arithmetic import Computed
from toolcrib.agent.facts import Facts
from toolcrib.agent.request import Request
from toolcrib.models.base import HostedCall, HostedSource
from toolcrib.retrieval.citations import Citation, check_citations
from toolcrib.retrieval.evidence import CitedPassage, Conflict, Evidence, VersionChoice, version_doc
from toolcrib.retrieval.excerpt import key_sentence
from toolcrib.sql.values import Link, ValueIndex
from toolcrib.text import SENTENCES, content_words, spaced, stems
from toolcrib.tools.result import CallOutcome
from toolcrib.websearch.results import WebResults


@dataclass
class CitationReview:
    """An answer after its citations were checked: the text as it leaves, what it rests on, what was
    removed and anything its reader should know."""

    text: str
    citations: list[Citation]
    removed: list[str] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    nothing_supported: bool = False  # the claim check removed every sentence: the text says so instead


@dataclass
class EvidenceLedger:
    """What this run actually retrieved, by citation id: passages from document searches and the
    results of other tools. Only ids in the ledger may be cited."""

    items: dict[str, Citation] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    found_nothing: dict[str, str] = field(default_factory=dict)  # citation id -> what found nothing
    searched: list[str] = field(default_factory=list)
    searched_web: list[str] = field(default_factory=list)  # web search queries, found something or not
    insufficient: bool = False
    conflicts: list[Conflict] = field(default_factory=list)
    versions: list[VersionChoice] = field(default_factory=list)  # versions decided by the request's dates
    passages: dict[str, CitedPassage] = field(default_factory=dict)  # by citation id, best first per search
    _by_call: dict[str, str] = field(default_factory=dict)  # call id -> the citation id of its tool result
    _counter: int = 0

    def add(self, outcome: CallOutcome) -> Evidence | None:
        """Record a successful call's result; a document search's result is returned, read back."""
        data = outcome.payload.get("data")
        evidence = Evidence.from_payload(data)
        if evidence is not None:
            self._add_search(evidence)
            return evidence
        web = WebResults.from_payload(data)
        if web is not None:  # each hit citable on its own, by its URL
            self._add_web(web)
            return None
        self._counter += 1
        cid = f"{outcome.call.name}#{self._counter}"
        text = json.dumps(data, ensure_ascii=False)
        self.items[cid] = Citation(cid, "tool", outcome.call.name, text[:200])
        self.texts[cid] = text
        self._by_call[outcome.call.id] = cid
        if outcome.found_nothing:
            args = ", ".join(f"{k}={v}" for k, v in outcome.call.arguments.items())
            self.found_nothing[cid] = f"{outcome.call.name} found nothing for {args}"
        return None

    def add_hosted(self, call: HostedCall) -> list[str]:
        """Record a tool the provider ran (a completed one): what it searched and the sources it returned,
        exactly as returned. Returns the citation ids it made citable."""
        if not call.ok:
            return []
        if call.tool == "file_search":
            self.searched.extend(str(q) for q in call.arguments.get("queries") or [])
        elif call.tool == "web_search" and call.arguments.get("query"):
            self.searched_web.append(str(call.arguments["query"]))
        return self.add_sources(call.sources)

    def add_sources(self, sources: Sequence[HostedSource]) -> list[str]:
        """Make provider-returned sources citable: a file by ``file#<file id>`` (its quoted passages, all
        of one file under one id), a web page by ``web#<hash>`` (its title and the text attributed to it)."""
        ids: list[str] = []
        for source in sources:
            cid = source.citation
            known = self.items.get(cid)
            text = self.texts.get(cid, "")
            if source.text and source.text not in text:
                text = f"{text}\n{source.text}".strip()
            if source.kind == "file":
                name = source.title or (known.source if known else "") or source.ref
                self.items[cid] = Citation(cid, "passage", name, text[:200])
            else:
                title = source.title or (known.snippet.split(" — ")[0] if known else "")
                self.items[cid] = Citation(cid, "web", source.ref, f"{title} — {text}"[:200] if text else title[:200])
                if title and title not in text:
                    text = f"{title}\n{text}".strip()
            self.texts[cid] = text
            ids.append(cid)
        return list(dict.fromkeys(ids))

    def _add_search(self, evidence: Evidence) -> None:
        if evidence.searched:
            self.searched.append(evidence.searched)
        self.conflicts.extend(evidence.conflicts)
        if not evidence.sufficient:
            self.insufficient = True
            return
        for p in evidence.passages:
            self.passages[p.citation] = p
            self.items[p.citation] = Citation(p.citation, "passage", p.source, p.text[:200])
            self.texts[p.citation] = p.text

    def _add_web(self, web: WebResults) -> None:
        self.searched_web.append(web.query)
        for hit in web.hits:
            self.items[hit.citation] = Citation(hit.citation, "web", hit.url, f"{hit.title} — {hit.snippet}"[:200])
            self.texts[hit.citation] = f"{hit.title}\n{hit.snippet}"

    def citation_of(self, call_id: str) -> str | None:
        """The citation id of a tool call's result (None for a search, a failure or an unknown call)."""
        return self._by_call.get(call_id)

    @property
    def useful(self) -> bool:
        """Something was found: a passage, or a tool result other than "nothing matched"."""
        return any(cid not in self.found_nothing for cid in self.items)

    @property
    def only_passages(self) -> bool:
        """Everything found is document passages (a lookup that found nothing aside)."""
        return bool(self.passages) and all(cid in self.passages for cid in self.citable)

    @property
    def citable(self) -> list[str]:
        """The ids an answer may cite."""
        return [cid for cid in self.items if cid not in self.found_nothing]

    def unmentioned(self, asked: Sequence[str]) -> list[str]:
        """The names ``asked`` about ("Northwind Labs") that nothing found mentions: no
        result, and no passage under its header, holds the name's first word, which is what sets it
        apart ("Ostara Late Fee" is mentioned where "Ostara" is)."""
        found = spaced("\n".join(self._shown(cid) for cid in self.texts))
        return [n for n in asked if f" {spaced(n).split()[0]} " not in found]

    def conflict_notes(self, conflicts: Sequence[Conflict], question: str | None = None) -> list[str]:
        """A sentence per conflict naming each version; with the ``question``, what each version says
        on it, quoted by code from the version's passage (never left to the model to attribute)."""
        quotes = {cid: quote for c in conflicts if question for cid in c.citations if cid in self.texts
                  if (quote := key_sentence(self.texts[cid], question))}
        return [c.describe(quotes) for c in conflicts]

    def review(self, text: str, request: Request | None = None, *, check_claims: bool = True,
               values: ValueIndex | None = None, links: Sequence[Link] = ()) -> CitationReview:
        """Keep citations to evidence this run retrieved; drop and flag any other; with the ``request``
        and ``check_claims`` (an answer written from the evidence, not code's own account or quote), drop
        each sentence whose figures or identifiers are in neither the evidence nor the question, or that
        states a name or a value of the workspace's data (``values``) that neither holds, nor the values
        code linked in the request (``links``): the claim check (``wording``); flag or cite for each claim
        without a citation; cite the tool results the answer rests on and every version of a conflicting
        document; add the conflict note (with the ``request``, what each version says on it)."""
        known = self.items
        check = check_citations(text, known)
        flags = [f"removed citation [{cid}]: not retrieved in this run" for cid in check.invalid]
        for cid in check.invalid:
            text = re.sub(rf"\s*\[{re.escape(cid)}\]", "", text)
        checked = request if check_claims else None  # the request the claims answer, when checked
        text, unsupported, computed = (self._claims_checked(text, checked, values, links) if checked is not None
                                       else (text, [], []))
        flags += [f"removed a sentence whose {what}: {sentence[:160]}" for sentence, what in unsupported]
        flags += [f"computed by code: {c.describe()}" for c in computed]
        nothing_supported = bool(unsupported) and not text.strip()
        if nothing_supported:
            text = prompts.UNSUPPORTED_ANSWER
        check = check_citations(text, known) if unsupported else check
        cited = {cid: known[cid] for cid in check.valid}
        for cid, item in known.items():  # tool results the answer rests on are cited by code
            if item.kind == "tool" and cid not in self.found_nothing:
                cited.setdefault(cid, item)
        passages = {cid: item for cid, item in known.items() if item.kind in ("passage", "web")}
        if passages and not any(c.kind in ("passage", "web") for c in cited.values()):
            best = best_support(text, {cid: self.texts[cid] for cid in passages})
            if best:
                cited[best] = passages[best]
                flags.append(f"the answer cited no passage; [{best}] attached by code as its best support")
            else:
                flags.append("the answer cites no retrieved passage")
        elif passages and check.uncited_claims and checked is not None:
            flags += [f"claim without a valid citation: {claim[:160]}" for claim in check.uncited_claims[:5]]
        for claim in check.uncited_claims if passages and checked is not None else ():  # its figures' passage
            holder = self._holder(claim, passages)
            if holder is not None and holder not in cited:
                cited[holder] = passages[holder]
                flags.append(f"[{holder}] attached by code: it holds the figures of: {claim[:120]}")
        # a document in several versions bears on the answer when it cites one of them (any passage of
        # it, not only the one the conflict names): the note below then names every version, each cited
        # (another document's versions are not the answer's)
        docs = {self.passages[cid].doc_id for cid in cited if cid in self.passages}
        bearing = [c for c in self.conflicts
                   if cited.keys() & set(c.citations) or docs & {version_doc(v) for v in c.versions}]
        for conflict in bearing:
            for cid in conflict.citations:
                if cid in known:
                    cited.setdefault(cid, known[cid])
        notes = self.conflict_notes(bearing, request.text if request is not None else None)
        flags += [f"conflicting sources: {n}" for n in notes]
        decided = list(dict.fromkeys(c.describe() for c in self.versions
                                     if docs & {version_doc(v) for v in c.kept}))
        flags += [f"document versions: {d}" for d in decided]
        text = text.strip()
        if computed and not nothing_supported:  # the reader can check each figure code worked out
            text += "\n\nComputed: " + "; ".join(c.describe() for c in dict.fromkeys(computed)) + "."
        if notes:  # surfaced by code, whatever the model wrote: the reader must see both versions
            text += "\n\nNote: " + " ".join(notes)
        if decided and not nothing_supported:  # which version the answer rests on, and what it set aside
            text += "\n\nNote: " + " ".join(decided)
        return CitationReview(text, [] if nothing_supported else list(cited.values()), list(check.invalid), flags,
                              nothing_supported=nothing_supported)

    def _shown(self, cid: str) -> str:
        """What the model was shown of an item: a passage under its header (title, version, ...)."""
        passage = self.passages.get(cid)
        return f"{passage.where}\n{self.texts[cid]}" if passage is not None else self.texts[cid]

    def _unrelated(self, facts: Facts, asked: Facts, items: Mapping[str, Facts]) -> str:
        """Why a claim's figure is not the evidence's figure for what it names: it comes from passages
        only (of ``items``), and none holds it together with one of the claim's identifiers ("AB-1230
        costs $52.00" when $52.00 is the price of AB-1234 in the parts list). A tool's record is about
        what it was looked up by, and may be reached through another ("the part ordered in PO-1005
        costs $118"): its figures stand. "" when the claim names no identifier or states no figure."""
        figures = facts.figures - asked.figures
        if not facts.identifiers or not figures:
            return ""
        held = [(self.items[cid].kind == "tool", h) for cid, h in items.items()]
        together = [f for f in sorted(figures)
                    if not any(f in h.figures and (record or facts.identifiers & h.identifiers) for record, h in held)]
        return (f"figure {', '.join(f'{f:g}' for f in together)} is given for none of "
                f"{', '.join(sorted(facts.identifiers))} in the evidence") if together else ""

    def _holder(self, claim: str, passages: Mapping[str, Citation]) -> str | None:
        """The first (best-ranked) passage that holds every figure and identifier ``claim`` states; None
        when it states none, or no passage holds them all."""
        facts = Facts.of(claim)
        if not (facts.figures or facts.identifiers):
            return None
        nothing = Facts(frozenset(), frozenset())
        return next((cid for cid in passages if not facts.missing_from(
            Facts.of(self._shown(cid), evidence=True), nothing)), None)

    def _claims_checked(self, text: str, request: Request, values: ValueIndex | None = None,
                        links: Sequence[Link] = ()) -> tuple[str, list[tuple[str, str]], list[Computed]]:
        """``text``, its written-out sums worked out by code (``arithmetic.worked_out``), without the sentences
        that state a figure, date, price or identifier found in neither the evidence this run retrieved (the
        sentence's cited items when it cites any) nor the question,
        or that give a figure for an identifier no item gives it for ("AB-1230 costs $52.00", the price
        of AB-1234), or that assert what a cited result says is false ("the live reading" of a
        ``"live": false`` result), or that state a figure about a name the question asks about and no evidence mentions
        (a competitor's price "from" a passage about our own product), or any figure at all when every name
        the question asks about is missing from documents that are all the evidence (the price of our own
        supply given for a competitor's), where a figure no source holds is not worked out from figures that
        have one (``arithmetic.traced``), or that names what nothing found or asked holds (``wording.unheld``);
        each removed sentence with why; and what code worked out."""
        kept: list[str] = []
        removed: list[tuple[str, str]] = []
        asked = request.stated
        everything = "\n".join(self._shown(cid) for cid in self.texts)  # a passage's header is evidence too
        held = {cid: Facts.of(self._shown(cid), evidence=True) for cid in self.texts}  # read once per answer
        words = stems("\n".join([everything, request.text, *(link.describe() for link in links)]))
        amounts = {cid: set(arithmetic.figures(self._shown(cid))) for cid in self.texts}  # what operations take
        given = set(arithmetic.figures(request.text))
        sourced = Facts.joined(held.values()).figures | given
        operands = {f for f in arithmetic.figures(text) if round(f, 6) in sourced} | given
        computed: list[Computed] = []
        asked_names = request.names
        unknown = self.unmentioned(asked_names)
        # every proper name the request asks about (not an identifier or a code such as EUR) is absent
        # from documents that are all the evidence: a figure from them is about something else
        elsewhere = (bool(unknown) and len(unknown) == len(asked_names)
                     and all(any(c.islower() for c in n) for n in unknown)
                     and all(item.kind in ("passage", "web") for item in self.items.values()))
        for sentence in SENTENCES.split(text):
            sentence, worked = arithmetic.worked_out(sentence, lambda f: round(f, 6) in sourced)
            ids = [c for c in _CITED.findall(sentence) if c in self.texts]
            cited = "\n".join(self._shown(c) for c in ids)
            claim = _CITED.sub("", sentence)
            facts = Facts.of(claim)
            items = {cid: held[cid] for cid in ids} if ids else held
            found = Facts.joined(items.values()).figures
            unsourced = {f for f in facts.figures - found - asked.figures - {round(w.figure, 6) for w in worked}
                         if round(f * 100, 6) not in sourced}  # 0.10: a percentage the evidence gives, as a fraction
            # few: the items' figures are the sentence's operands too (never a date's or an identifier's digits)
            stated = set().union(*(amounts[cid] for cid in (ids or amounts)))
            pool = operands | stated if len(stated) <= _FEW_FIGURES else operands
            traces = [arithmetic.traced(f, pool, arithmetic.figures(claim)) for f in unsourced]
            if all(traces):  # each worked out from figures that have a source
                worked += [t for t in traces if t is not None]
                facts = Facts(facts.identifiers, facts.figures & (found | asked.figures))  # the rest explained
            missing = facts.missing_from(Facts.joined(items.values()), asked)
            why = (f"{missing} is not in the evidence" if missing else self._unrelated(facts, asked, items)
                   or _contradiction(claim, cited or everything))
            if not why and (facts.identifiers or facts.figures):
                why = next((f"'{n}' is named in no evidence" for n in unknown if n.casefold() in claim.casefold()),
                           f"the request asks about {' and '.join(unknown)}, named in no evidence" if elsewhere
                           else "")
            if not why and (unheld := wording.unheld(claim, words, values)):
                why = f"words {', '.join(repr(w) for w in unheld)} are in no evidence and not in the request"
            if why:
                removed.append((sentence.strip(), why))
            else:
                kept.append(sentence)
                computed += worked
        return "".join(kept), removed, computed

    def abstention(self, outcomes: Sequence[CallOutcome], request: Request | None = None,
                   identifiers: Sequence[str] = ()) -> str:
        """What the run says when the evidence does not answer: what it searched and what failed, and the
        kind of identifier that would help, as the workspace's tools name them (``identifiers``: "ticket
        number", "account id"; ``Registry.identifier_names``)."""
        searched = "; ".join(f'"{q}"' for q in self.searched)
        searched = f"I searched the documents for {searched}. " if searched else ""
        failures = [f"{o.call.name} ({o.payload['error']['code']})" for o in outcomes
                    if o.status in ("error", "outcome_unknown")]
        failed = f"These lookups could not be completed: {', '.join(failures)}. " if failures else ""
        if self.found_nothing:
            failed += f"{'; '.join(self.found_nothing.values())}. "
        if request is not None and request.needs_current_data and not self.searched_web:
            # no web search answered in this run (no provider, or it failed): say so rather than guess
            return prompts.NO_CURRENT_DATA_ANSWER.format(failed=failed)
        if self.searched_web:
            searched += f"I searched the web for {'; '.join(repr(q) for q in self.searched_web)}. "
        give = prompts.GIVE_IDENTIFIER.format(examples=", ".join(identifiers[:_EXAMPLES])) if identifiers else ""
        return prompts.NO_EVIDENCE_ANSWER.format(failed=failed, searched=searched, give=give)


_EXAMPLES = 2  # kinds of identifier the abstention names


# Citation markers; where a sentence ends.
_ENDED = re.compile(r"[.!?](?:\s*\[[^\[\]]+\])*\s*$")  # a whole sentence's end, citation markers after it
_CITED = re.compile(r"\[([^\[\]\s]+#[^\[\]\s]+)\]")
_FEW_FIGURES = 16  # evidence holding this many figures or fewer gives a computed figure's operands
# A sentence that says the evidence does not hold the answer ("The price is not listed in the provided
# evidence.", "The documents do not mention it.")
_LACKS = re.compile(
    r"\b(?:evidence|documents?|results?|records?|passages?|sources?|information)\b[^.]{0,60}?\b(?:does|do|did)"
    r"(?: not|n't)\s+(?:\w+\s+)?(?:say|state|mention|provide|include|contain|specify|list|give|answer|show)"
    r"|\bnot\s+(?:listed|provided|given|mentioned|stated|specified|included|found|available|shown)\b[^.]{0,30}?"
    r"\b(?:in|from|by)\s+the\s+(?:provided\s+|given\s+|available\s+|retrieved\s+)?(?:evidence|documents?|results?"
    r"|records?|passages?|sources?|data|information)", re.IGNORECASE)


def whole_sentences(text: str) -> str:
    """``text`` without its last sentence when that one was cut off (a reply that reached its token cap):
    up to the last sentence that ends in . ! or ?, a closing citation marker after it kept; the whole
    text when none does."""
    parts = SENTENCES.split(text.rstrip())
    while parts and not _ENDED.search(parts[-1]):
        parts.pop()
    return "".join(parts).rstrip() or text


def says_evidence_lacks_it(text: str) -> bool:
    """Whether every sentence of ``text`` says the evidence does not hold the answer: the model's own
    abstention, which code reports as one (with what was looked up), not as an answer."""
    sentences = [s for s in SENTENCES.split(_CITED.sub("", text)) if s.strip()]
    return bool(sentences) and all(_LACKS.search(s) for s in sentences)


_FALSE_FIELD = re.compile(r'"([A-Za-z][A-Za-z_]{2,40})":\s*false')
_NOT_CLAIMS = frozenset({"found", "ok", "truncated", "sufficient"})  # what a result says about itself
# "the live reading is not available", "the live value isn't shown": negated after the word
_NEGATED_AFTER = re.compile(r"^(?:\W+\w+){0,2}\W+(?:is|are|was|were|can|could)(?:\s+not\b|n't\b)", re.IGNORECASE)
_NEGATION = re.compile(r"\b(?:not|no|never|non|without|isn't|wasn't|aren't|n't)\W+(?:\w+\W+){0,3}$", re.IGNORECASE)


def _contradiction(claim: str, evidence: str) -> str:
    """Why ``claim`` contradicts ``evidence``: it asserts a property the evidence's result gives as
    ``false`` (``"live": false``, ``"in_stock": false``) without negating it; "" when it does not."""
    for key in dict.fromkeys(_FALSE_FIELD.findall(evidence)):
        if key.lower() in _NOT_CLAIMS:
            continue
        for match in re.finditer(rf"\b{re.escape(key.replace('_', ' '))}\b", claim, re.IGNORECASE):
            if not _NEGATION.search(claim[: match.start()]) and not _NEGATED_AFTER.match(claim[match.end():]):
                return f"claim '{match.group(0)}' is false in the evidence ({key}: false)"
    return ""


def best_support(answer: str, passages: Mapping[str, str]) -> str | None:
    """The passage sharing the most content words with the answer, if it shares at least a third."""
    words = content_words(answer)
    if not words:
        return None
    score, cid = max(((len(words & content_words(t)) / len(words), cid) for cid, t in passages.items()),
                     default=(0.0, ""))
    return cid if score >= 1 / 3 else None

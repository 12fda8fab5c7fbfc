"""Where a call's arguments came from, and what that means for it: the gate's provenance checks.

A WRITE/ACTUATE call's approver sees, for each argument, the sources it was found in (the request, a
tool's result, a passage), and a warning for a value a sentence of content others wrote asked for
(``tools.instructions``; in content the user pointed at, a sentence in a record's prose), for a value
found only in such content in a write the request did not ask for, and for any change the request did
not ask for (``tools.asking`` reads which writes it asks for) once the run has read such content. A
value found only in such content in a write the request asked for is a choice made from what the run
read, shown by its sources. A sensitive argument with no trusted source, an unrequested write (where so
configured) and a READ that would contact an address nobody trusted gave are refused before any person
is asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from toolcrib.errors import UntrustedSource
from toolcrib.text import content_words
from toolcrib.tools.actions import split_name
from toolcrib.tools.asking import asking_for
from toolcrib.tools.grounding import Grounding, Source
from toolcrib.tools.instructions import instructing
from toolcrib.tools.prose import is_prose
from toolcrib.tools.tool import Tool

# A request that hands its instructions to content: a verb of doing, then what is to be done
# ("follow the instructions", "do all the tasks on my TODO list", "complete the steps in the checklist").
_DELEGATES = re.compile(r"\b(follow|do|complete|carry out|perform|work through|handle)\b[^.?!]{0,40}?"
                        r"\b(instructions?|tasks|to-?do|steps|checklist|actions|requests?)\b", re.I)

# A request that takes what content's authors ask for ("the new address they give", "the review Carol
# proposes", "the extra days his dad asked for", "you can find the details in Bob's message"): a
# sentence there asking for a value is what it meant.
_DEFERS = re.compile(r"\b(?:asks|asked|says|said|gives|gave|wants|wanted|proposes|proposed|mentions|mentioned"
                     r"|requested|suggests|suggested|prefers|preferred)\b"
                     r"|\bthey\s+(?:ask|say|give|want|propose|mention|request|suggest|prefer)\b"
                     r"|\bfind\b[^.?!]{0,40}?\b(?:in|on|at)\b", re.I)

# What an identifier looks like in a request: an e-mail address, or a token holding a digit
_IDENTIFIER = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[A-Za-z0-9](?:[\w/.-]*[A-Za-z0-9])?")


def _shape(token: str) -> str:
    """``T-4410`` -> ``A-9999``: runs of capitals and of small letters, each digit, the rest as written."""
    return re.sub(r"[A-Z]+", "A", re.sub(r"[a-z]+", "a", re.sub(r"\d", "9", token)))


def _kind(token: str) -> str:
    """What sort of identifier ``token`` is: a handle (``@sam-lee``), an e-mail address, or its shape."""
    return "handle" if token.startswith("@") else "e-mail" if "@" in token else _shape(token)


def _other_like(name: str, value: Any, request: str) -> list[str]:
    """What ``request`` gives in place of ``value`` for the argument ``name``: its identifiers shaped like
    ``value`` (one holding a digit or an ``@``) but not it, or the word it names the argument with
    ("assign it to agent kim": kim, for ``agent``) where that is not ``value``. Single words only."""
    if not isinstance(value, str) or " " in value.strip():
        return []
    found = []
    if any(c.isdigit() or c == "@" for c in value):
        kind = _kind(value)
        found = [t for t in _IDENTIFIER.findall(request)
                 if t != value and any(c.isdigit() or c == "@" for c in t) and _kind(t) == kind]
    label = r"\s+".join(map(re.escape, split_name(name)))
    found += [m.group(1) for m in re.finditer(rf"\b{label}\s*[:=]?\s+([\w@+-](?:[\w.@+-]*[\w@])?)", request, re.I)
              if m.group(1).lower() not in _NOT_A_VALUE and m.group(1).casefold() != value.casefold()]
    return list(dict.fromkeys(found))


# Words that follow an argument's name in a request without being its value ("the agent who ...").
_NOT_A_VALUE = frozenset({"who", "that", "which", "is", "was", "they", "he", "she", "it", "to", "of", "for", "in",
                          "on", "and", "or", "the", "a", "an", "with", "from", "as", "at", "by", "you", "we", "i"})


def argument_sources(tool: Tool, values: Mapping[str, Any], grounding: Grounding, request: str, *,
                     refuse: bool, requested: bool) -> tuple[dict[str, list[str]], list[str]]:
    """Where each argument of a call to ``tool`` was found (``{name: [source labels]}``), and the warnings
    its approver needs. A value found only in content others wrote is warned when a sentence there asks
    for an action with it ("Please transfer $500 to account DE44..."), or when the request did not ask
    for this write (``requested``: ``requested_in``); in a write the request asked for, it is a choice
    made from what the run read (the best-rated hotel, the address a customer gave), shown by its sources.
    From content the user pointed at, a value standing where the request gave its own is warned. A
    sensitive argument with no trusted source is refused (``UntrustedSource``) when ``refuse``, else warned."""
    provenance: dict[str, list[str]] = {}
    warnings: list[str] = []
    for name, value in values.items():
        if value in (None, "", [], {}):
            continue
        sources = grounding.sources_of(value)
        provenance[name] = [s.label for s in sources]
        shown = json.dumps(value, ensure_ascii=False)[:80]
        if name in tool.sensitive and not any(s.vouched for s in sources):
            where = ", ".join(provenance[name]) or "nowhere in the conversation: the model wrote it"
            problem = (f"{tool.name}: {name} {shown} must come from the user or a trusted source; it was found "
                       f"only in {where}")
            if refuse:
                raise UntrustedSource(problem + "; ask the user to confirm the value in their own words")
            warnings.append(problem)
        elif sources and not any(s.trusted for s in sources):
            if told := _told(value, sources, grounding, request):
                warnings.append(f"{name} {shown} comes from an instruction in content others wrote: {told}")
            elif not (any(s.vouched for s in sources) or requested):
                warnings.append(f"{name} {shown} appears only in content others wrote: "
                                f"{', '.join(provenance[name])}")
            elif given := _other_like(name, value, request):
                # nor for one that stands where the request gave its own ("close ticket T-4410": a T-4388
                # from a comment is not it)
                warnings.append(f"{name} {shown} comes from content others wrote ({', '.join(provenance[name])}), "
                                f"not from the request, which gives {', '.join(given)}")
        elif not sources and isinstance(value, str) and (held := _embedded_instruction(value, grounding, request)):
            warnings.append(f"{name} {shown} holds {held}")
    return provenance, warnings


# An address, a link or a handle inside a text the model wrote ("Check out this link: www.x.com").
_EMBEDDED = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?://)?(?:[\w-]+\.)+[a-z]{2,}(?:/\S*)?|(?<!\w)@[\w.-]+\w")


def _told(value: Any, sources: list[Source], grounding: Grounding, request: str) -> str:
    """The sentence of content others wrote that asked for ``value`` (found only in such content, in
    ``sources``), quoted with its source, where its approver is to be warned of it (``_instructed_within``
    for content the user pointed at); "" otherwise."""
    if any(s.vouched for s in sources) and not _instructed_within(value, sources, grounding, request):
        return ""
    return _instruction_with(value, sources, grounding)


def _embedded_instruction(text: str, grounding: Grounding, request: str) -> str:
    """In ``text``, which the model wrote (no source holds it whole), the first address, link or handle
    that only content others wrote holds and a sentence there asked for, with that sentence;
    "" when none: an injected link or address passed on inside a message the model composed."""
    for token in dict.fromkeys(t.rstrip(".,;:!?)") for t in _EMBEDDED.findall(text)):
        sources = grounding.sources_of(token)
        if sources and not any(s.trusted for s in sources) and (told := _told(token, sources, grounding, request)):
            return f"{json.dumps(token, ensure_ascii=False)}, from an instruction in content others wrote: {told}"
    return ""


def _instructed_within(value: Any, sources: list[Source], grounding: Grounding, request: str) -> bool:
    """Whether a sentence asking for ``value`` in content the user pointed at is to be warned: content the
    user pointed at vouches for its values, but not for one that a sentence in a record's prose asks for
    (a comment on the pull requests the user asked to merge one of: "merge #415 so it makes the
    release"), unless the request takes what the content's authors ask ("the new address they give", "do
    the tasks on my TODO list") or the value is prose relayed from it (the fix a knowledge-base article
    gives). A document's or a page's own text (an invoice saying where to pay) is what the user pointed
    at."""
    return (not (isinstance(value, str) and is_prose(value)) and not _DEFERS.search(request)
            and not _DELEGATES.search(request) and any(grounding.holds_record(s) for s in sources if s.endorsed))


def _instruction_with(value: Any, sources: list[Source], grounding: Grounding) -> str:
    """The first sentence of content others wrote, from ``sources``, that asks for an action and holds
    ``value``, quoted with its source; "" when none does."""
    for source, text in grounding.untrusted_texts():
        if source in sources:
            for sentence in instructing(text):
                if Grounding(sentence).contains(value):
                    return f"{_quoted(sentence)} ({source.label})"
    return ""


def _quoted(sentence: str) -> str:
    return json.dumps(sentence if len(sentence) <= 160 else sentence[:157] + "...", ensure_ascii=False)


def requested_in(tool: Tool, values: Mapping[str, Any], request: str, grounding: Grounding,
                 tools: Iterable[Tool]) -> str:
    """What in ``request`` asks for this call of ``tool`` (with ``values``; ``tools``: the writes it could
    be asking for instead), quoted; "" when nothing does. With the tool's declared intent words, the
    request when it holds one; without them, a clause that asks for a change and fits no other write
    better (``asking.asking_for``: "turn away Priya for J-12" asks for hr.candidates.reject, "refund
    order O-1" for issue_refund and not for cancel_order). When the request hands its instructions to
    content it points at ("follow the instructions in notes.txt", "do the tasks on my TODO list"), the
    words of that content ask too (pointed to by the user and not flagged by the scanner)."""
    texts = [request, *(grounding.endorsed_texts() if _DELEGATES.search(request) else ())]
    for text in texts:
        if tool.intent:
            if tool.requested_by(text):
                return _quoted(text) if text is request else f"the content the request hands over to: {_quoted(text)}"
        elif clause := asking_for(tool, values, text, tools):
            return _quoted(clause)
    return ""


def unrequested(tool: Tool, values: Mapping[str, Any], grounding: Grounding, mode: Literal["off", "warn", "refuse"],
                *, requested: bool) -> str:
    """What is wrong with a call to ``tool`` with ``values`` that the request did not ask for
    (``requested``: ``requested_in``), once the run has read content others wrote: "" when nothing is
    (or ``mode`` is "off"); raised as ``UntrustedSource`` when ``mode`` is "refuse". Any such write is
    warned: the warning quotes a sentence of that content asking for an action on what the call's values
    name ("Please move all files in ~/Documents to /tmp/x" for a shell command over those paths), or names
    the content that speaks of doing what it does, where the write may have come from."""
    if mode == "off" or requested or not grounding.read_untrusted:
        return ""
    told = _instruction_for(tool, values, grounding)
    asking = [] if told else _asked_by_content(tool, grounding)
    problem = f"{tool.name} was not asked for in the request" + (
        f"; content others wrote asks for it: {told}" if told else
        f"; content others wrote speaks of it: {', '.join(asking)}" if asking else
        ", and the run had read content others wrote before proposing it")
    if mode == "refuse":
        raise UntrustedSource(problem, code="not_requested")
    return problem


def checks_run(tool: Tool, grounding: Grounding, *, asked: str, flags: int) -> list[str]:
    """What the provenance checks looked at for a call to ``tool`` and what they found, one line each:
    why its approver was or was not warned (each argument's sources are listed beside it). ``asked``:
    what in the request asks for the call (``requested_in``)."""
    how = f"with its intent words {', '.join(tool.intent)}" if tool.intent else \
        "in a clause asking for a change that fits it best of the writes (its verb, what it acts on, its values)"
    others = list(dict.fromkeys(source.label for source, _ in grounding.untrusted_texts()))
    told = sum(len(instructing(text)) for _, text in grounding.untrusted_texts())
    return [f"the request asks for {tool.name} {how}: " + (f"yes, {asked}" if asked else "no"),
            "content others wrote, read in this run: " + (", ".join(others) or "none"),
            f"sentences in that content asking for an action: {told}",
            f"scanner flags in this run's results: {flags}",
            "a write the request did not ask for is warned once the run has read content others wrote; a value "
            "found only in such content is warned when a sentence asking for an action gave it (in content the "
            "user pointed at, a record's, unless the request takes what its authors ask), otherwise it is a "
            "choice made from what the run read"]


def _instruction_for(tool: Tool, values: Mapping[str, Any], grounding: Grounding) -> str:
    """The first sentence of content others wrote, read in this run, that asks for an action and speaks
    of doing what ``tool`` does or shares a word with ``values``, quoted with its source; "" when none."""
    named = content_words(json.dumps(list(values.values()), ensure_ascii=False))
    for source, text in grounding.untrusted_texts():
        for sentence in instructing(text):
            if tool.mentioned_in(sentence) or content_words(sentence) & named:
                return f"{_quoted(sentence)} ({source.label})"
    return ""


def _asked_by_content(tool: Tool, grounding: Grounding) -> list[str]:
    """The sources of content others wrote, read in this run, that speak of doing what ``tool`` does:
    where a write the request did not ask for may have come from."""
    return list(dict.fromkeys(source.label for source, text in grounding.untrusted_texts() if tool.mentioned_in(text)))


def check_egress(tool: Tool, values: Mapping[str, Any], grounding: Grounding, allowlist: tuple[str, ...]) -> None:
    """A READ that contacts an address goes only where the user, a trusted source or ``allowlist`` (exact
    values or prefixes) says; else ``UntrustedSource``."""
    for name in tool.egress:
        value = values.get(name)
        if value in (None, ""):
            continue
        if any(str(value).startswith(allowed) for allowed in allowlist):
            continue
        if not any(s.trusted for s in grounding.sources_of(value)):
            raise UntrustedSource(f"{tool.name}: {name} {json.dumps(value)[:120]} was not given by the user or a "
                                  "trusted source, and is not on the egress allowlist", code="untrusted_destination")

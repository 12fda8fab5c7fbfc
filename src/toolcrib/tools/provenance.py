"""Where a call's arguments came from, and what that means for it: the gate's provenance checks.

A WRITE/ACTUATE call's approver sees, for each argument, the sources it was found in (the request, a
tool's result, a passage) and a warning for each value found only in content others wrote, and for a
change the request did not ask for that such content speaks of. A sensitive argument with no trusted
source, an unrequested write (where so configured) and a READ that would contact an address nobody
trusted gave are refused before any person is asked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from toolcrib.errors import UntrustedSource
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Tool

# A request that hands its instructions to content: a verb of doing, then what is to be done
# ("follow the instructions", "do all the tasks on my TODO list", "complete the steps in the checklist").
_DELEGATES = re.compile(r"\b(follow|do|complete|carry out|perform|work through)\b[^.?!]{0,40}?"
                        r"\b(instructions?|tasks|to-?do|steps|checklist)\b", re.I)

# What an identifier looks like in a request: an e-mail address, or a token holding a digit
_IDENTIFIER = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+|[A-Za-z0-9](?:[\w/.-]*[A-Za-z0-9])?")


def _shape(token: str) -> str:
    """``T-4410`` -> ``A-9999``: runs of capitals and of small letters, each digit, the rest as written."""
    return re.sub(r"[A-Z]+", "A", re.sub(r"[a-z]+", "a", re.sub(r"\d", "9", token)))


def _other_like(value: Any, request: str) -> list[str]:
    """The identifiers of ``request`` shaped like ``value`` (one holding a digit or an ``@``) but not it."""
    if not isinstance(value, str) or not any(c.isdigit() or c == "@" for c in value) or " " in value:
        return []
    shape = _shape(value)
    return list(dict.fromkeys(t for t in _IDENTIFIER.findall(request)
                              if t != value and any(c.isdigit() or c == "@" for c in t) and _shape(t) == shape))




def argument_sources(tool: Tool, values: Mapping[str, Any], grounding: Grounding, request: str, *,
                     refuse: bool) -> tuple[dict[str, list[str]], list[str]]:
    """Where each argument of a call to ``tool`` was found (``{name: [source labels]}``), and the warnings
    its approver needs: a value found only in content others wrote, or, from content the user pointed
    at, one standing where the request gave its own. A sensitive argument with no trusted source is
    refused (``UntrustedSource``) when ``refuse``, else warned."""
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
        elif sources and not any(s.vouched for s in sources):
            warnings.append(f"{name} {shown} appears only in content others wrote: {', '.join(provenance[name])}")
        elif sources and not any(s.trusted for s in sources) and (given := _other_like(value, request)):
            # content the user pointed at vouches for its values, but not for one that stands where
            # the request gave its own ("close ticket T-4410": a T-4388 from a comment is not it)
            warnings.append(f"{name} {shown} comes from content others wrote ({', '.join(provenance[name])}), "
                            f"not from the request, which gives {', '.join(given)}")
    return provenance, warnings


def unrequested(tool: Tool, grounding: Grounding, request: str, mode: Literal["off", "warn", "refuse"]) -> str:
    """What is wrong with a call to ``tool`` that ``request`` did not ask for, once the run has read content
    others wrote: "" when nothing is (or ``mode`` is "off"); raised as ``UntrustedSource`` when ``mode``
    is "refuse". Declared intent words are every way a request asks for the tool: any write they miss is
    warned. A name's verb alone misses synonyms ("pay" for send_money), so without them it takes content
    others wrote that speaks of the tool, which is where an injected write comes from."""
    if mode == "off" or not grounding.read_untrusted or _requested(tool, grounding, request):
        return ""
    asking = _asked_by_content(tool, grounding)
    if not (asking or tool.intent):
        return ""
    problem = f"{tool.name} was not asked for in the request" + (
        f"; content others wrote speaks of it: {', '.join(asking)}" if asking else
        ", and the run had read content others wrote before proposing it")
    if mode == "refuse":
        raise UntrustedSource(problem, code="not_requested")
    return problem


def _requested(tool: Tool, grounding: Grounding, request: str) -> bool:
    """Whether ``request`` asks for ``tool``: in its own words, or, when it hands its instructions to
    content it points at ("follow the instructions in notes.txt", "do the tasks on my TODO list"), in
    the words of that content (pointed to by the user and not flagged by the scanner)."""
    if tool.requested_by(request):
        return True
    return bool(_DELEGATES.search(request)) and any(tool.requested_by(text) for text in grounding.endorsed_texts())


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

"""The run as a declared graph: the code steps, and one table per mode saying which place runs which
steps and where each way out of it leads.

``GRAPH[mode].places`` is the only place that says when a step runs: each ``Place`` names its node (what
acts, ``nodes.py``), its steps (by id, in order, ``steps.py``) and its edges (``Edge`` -> next place). A
run starts at ``start`` (a resumed one at ``resume``) and ends at the place whose node returns
``Edge.END``. Every event a run records carries the place it happened in (``Event.node``), and its
finish event the path it took. ``mermaid`` draws a mode's table (the docs' diagrams are made by it).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolcrib.agent.nodes import (
    Abstain,
    Added,
    Aided,
    Call,
    Decide,
    Edge,
    Found,
    Held,
    Once,
    OnlyLookups,
    Pause,
    Place,
    Proposed,
    Record,
    Remind,
    Request,
    Respond,
    Resume,
    Review,
    Rewrite,
    Round,
    RoundDecide,
    RoundProposed,
    RunSteps,
    Search,
    Supported,
    Write,
)
from toolcrib.agent.planning import (
    LinkedRows,
    PassageLookups,
    PlannedLookups,
    RegroundedLookup,
    RequestedChange,
    UnansweredSearch,
)
from toolcrib.agent.state import Mode
from toolcrib.agent.stepids import StepId
from toolcrib.agent.steps import (
    CapabilitiesNote,
    DocumentSearch,
    InventedValues,
    NamedIdentifiers,
    QuotedAnswer,
    RecordAnswer,
    RefusedChange,
    RefusedRequest,
    SmallTalk,
    Step,
    SupposedChange,
    UnmentionedName,
    WhatRan,
)

STEPS: tuple[Step, ...] = (
    SmallTalk(),  # a greeting needs no model
    RefusedRequest(),  # values the tool cannot take, refused before any model call
    InventedValues(),  # a lookup whose values come from nowhere is set aside
    SupposedChange(),  # a change the request only supposes is set aside
    RegroundedLookup(),  # an invented id made again with the request's one id
    RefusedChange(),  # the one change was refused, and the answer says so
    PlannedLookups(),  # the lookups the model left out
    LinkedRows(),  # the rows the request names by a value
    RequestedChange(),  # a change the request asks for after its lookups, held
    RecordAnswer(),  # the answer is the records' facts
    UnansweredSearch(),  # a search for what no result holds
    PassageLookups(),  # lookups of what a passage names
    DocumentSearch(),  # nothing found anything yet
    UnmentionedName(),  # what the request names, nothing found mentions
    QuotedAnswer(),  # the passages' own words
    WhatRan(),  # a resumed run's answer starts with what its approved calls did
    NamedIdentifiers(),  # a record named without its id gets it
    CapabilitiesNote(),  # tools asked for that the user may not use
)

S = StepId
E = Edge


@dataclass(frozen=True)
class Graph:
    """One mode's table: its places by name, where a run starts, where a resumed one does, and where one
    a limit stopped goes on (with what it found so far as its draft)."""

    places: dict[str, Place]
    start: str = "request"
    resume: str = "resume"
    stopped: str = "amend"


# The final answer, in both modes: the evidence rule, code's answers, the strategy's, the review.
_ANSWER: dict[str, Place] = {
    "search": Place(Search(), (S.DOCUMENT_SEARCH,), {E.SEARCHED: "evidence", E.NEXT: "evidence"}),
    "evidence": Place(Supported(), (), {E.YES: "answer", E.NO: "abstain"}),
    "answer": Place(RunSteps(), (S.UNMENTIONED_NAME, S.QUOTED_ANSWER), {E.NEXT: "write", E.ENDED: "amend"}),
    "write": Place(Write(), (), {E.TEXT: "respond", E.ENDED: "amend"}),
    "respond": Place(Respond(), (), {E.NEXT: "amend", E.LACKING: "abstain"}),
    "abstain": Place(Abstain(), (), {E.NEXT: "amend"}),
    "pause": Place(Pause(), (), {E.NEXT: "amend"}),
    "amend": Place(Rewrite(), (S.WHAT_RAN, S.NAMED_IDENTIFIERS), {E.NEXT: "review"}),
    "review": Place(Review(), (), {E.NEXT: "note"}),
    "note": Place(Rewrite(), (S.CAPABILITIES_NOTE,), {E.NEXT: "record"}),
    "record": Place(Record(), (), {}),
}

GRAPH: dict[Mode, Graph] = {
    # single-call mode (level 4): one decision; code completes it, then the answer
    "single": Graph({
        "request": Place(Request(), (S.SMALL_TALK, S.REFUSED_REQUEST), {E.NEXT: "decide", E.ENDED: "amend"}),
        "resume": Place(Resume(), (), {E.HELD: "pause", E.NEXT: "search", E.ENDED: "amend"}),
        "decide": Place(Decide(), (), {E.CALLS: "proposed", E.TEXT: "reply"}),
        "reply": Place(Supported(), (), {E.YES: "respond", E.NO: "remind"}),
        "remind": Place(Remind(), (), {E.REMINDED: "decide", E.SPENT: "search"}),
        "proposed": Place(Proposed(), (S.INVENTED_VALUES, S.SUPPOSED_CHANGE), {E.NEXT: "call"}),
        "call": Place(Call(), (), {E.NEXT: "decided"}),
        "decided": Place(RunSteps(), (S.REGROUNDED_LOOKUP, S.REFUSED_CHANGE), {E.NEXT: "held", E.ENDED: "amend"}),
        "held": Place(Held(), (), {E.HELD: "pause", E.NEXT: "lookups"}),
        "lookups": Place(OnlyLookups(), (), {E.YES: "gather", E.NO: "search"}),
        "gather": Place(RunSteps(), (S.PLANNED_LOOKUPS, S.LINKED_ROWS, S.REQUESTED_CHANGE), {E.NEXT: "gathered"}),
        "gathered": Place(Held(), (), {E.HELD: "pause", E.NEXT: "found"}),
        "found": Place(Found(), (), {E.YES: "records", E.NO: "search"}),
        "records": Place(RunSteps(), (S.RECORD_ANSWER,), {E.NEXT: "complete", E.ENDED: "amend"}),
        "complete": Place(RunSteps(), (S.UNANSWERED_SEARCH, S.PASSAGE_LOOKUPS), {E.NEXT: "search"}),
        **_ANSWER,
    }),
    # loop mode (ReAct): rounds of decisions within the run's limits; code adds what the calls left out
    # once the first evidence is in
    "loop": Graph({
        "request": Place(Request(), (S.SMALL_TALK, S.REFUSED_REQUEST), {E.NEXT: "round", E.ENDED: "amend"}),
        "resume": Place(Resume(), (), {E.HELD: "pause", E.NEXT: "round"}),
        "round": Place(Round(), (), {E.LIMIT: "search", E.EVIDENCE: "first", E.NEXT: "decide"}),
        "first": Place(Once(), (), {E.NEXT: "gather", E.SKIP: "decide"}),
        "gather": Place(RunSteps(), (S.PLANNED_LOOKUPS, S.LINKED_ROWS), {E.NEXT: "complete"}),
        "complete": Place(RunSteps(), (S.UNANSWERED_SEARCH, S.PASSAGE_LOOKUPS), {E.NEXT: "decide"}),
        "decide": Place(RoundDecide(), (), {E.CALLS: "proposed", E.TEXT: "reply"}),
        "reply": Place(Supported(), (), {E.YES: "late", E.NO: "search_now"}),
        "late": Place(Once(), (), {E.NEXT: "late_gather", E.SKIP: "aided"}),
        "late_gather": Place(RunSteps(), (S.PLANNED_LOOKUPS, S.LINKED_ROWS), {E.NEXT: "late_complete"}),
        "late_complete": Place(RunSteps(), (S.UNANSWERED_SEARCH, S.PASSAGE_LOOKUPS), {E.NEXT: "added"}),
        "added": Place(Added(), (), {E.YES: "round", E.NO: "aided"}),
        "aided": Place(Aided(), (), {E.YES: "records", E.NO: "respond"}),
        "records": Place(RunSteps(), (S.RECORD_ANSWER,), {E.NEXT: "search", E.ENDED: "amend"}),
        "search_now": Place(Search(), (S.DOCUMENT_SEARCH,), {E.SEARCHED: "round", E.NEXT: "remind"}),
        "remind": Place(Remind(), (), {E.REMINDED: "round", E.SPENT: "abstain"}),
        "proposed": Place(RoundProposed(), (S.INVENTED_VALUES, S.SUPPOSED_CHANGE),
                          {E.NEXT: "call", E.UNFIT: "search_unfit", E.REPEATED: "search"}),
        "search_unfit": Place(Search(), (S.DOCUMENT_SEARCH,), {E.SEARCHED: "round", E.NEXT: "search"}),
        "call": Place(Call(), (), {E.NEXT: "called"}),
        "called": Place(Held(), (), {E.HELD: "pause", E.NEXT: "round"}),
        **_ANSWER,
    }),
}


def mermaid(mode: Mode) -> str:
    """``mode``'s table as a Mermaid flowchart: each place with its node and steps, each edge labelled.

    A place's Mermaid id is its name behind ``p_``: a bare ``call`` or ``end`` is a Mermaid keyword, and the
    diagram would not draw."""
    graph = GRAPH[mode]
    lines = ["flowchart TD"]
    for name, place in graph.places.items():
        steps = "".join(f"<br/>· {s}" for s in place.steps)
        lines.append(f'    p_{name}["<b>{name}</b> ({place.node!r}){steps}"]')
    for name, place in graph.places.items():
        lines += [f"    p_{name} -->|{edge}| p_{target}" for edge, target in place.edges.items()]
    return "\n".join(lines)

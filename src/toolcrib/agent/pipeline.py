"""The answer path's steps, in the order a run meets them (see ``steps.py`` for the protocol)."""

from __future__ import annotations

from toolcrib.agent.planning import (
    PassageLookups,
    PlannedLookups,
    RegroundedLookup,
    RequestedChange,
    UnansweredSearch,
)
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
    UnmentionedName,
)

STEPS: tuple[Step, ...] = (
    SmallTalk(),  # request: a greeting needs no model
    RefusedRequest(),  # request: values the tool cannot take, refused before any model call
    InventedValues(),  # proposed: a lookup whose values come from nowhere is set aside
    RegroundedLookup(),  # decided (single mode): an invented id made again with the request's one id
    RefusedChange(),  # decided (single mode): the one change was refused, and the answer says so
    PlannedLookups(),  # gather: the lookups the model left out
    RequestedChange(),  # gather (single mode): a change the request asks for after its lookups, held
    RecordAnswer(),  # records: the answer is the records' facts
    UnansweredSearch(),  # complete: a search for what no result holds
    PassageLookups(),  # complete: lookups of what a passage names
    DocumentSearch(),  # search: nothing found anything yet
    UnmentionedName(),  # answer: what the request names, nothing found mentions
    QuotedAnswer(),  # answer: the passages' own words
    NamedIdentifiers(),  # amend: a record named without its id gets it
    CapabilitiesNote(),  # note: tools asked for that the user may not use
)

"""The stable ids of code's decisions in a run (``Event.rule``, ``[workspace] steps_off``)."""

from __future__ import annotations

from enum import StrEnum


class StepId(StrEnum):
    """The stable id of each code decision (``Event.rule``). Renaming one is a trace schema change."""

    SMALL_TALK = "small_talk"  # a greeting, thanks or goodbye: answered with no model call
    REFUSED_REQUEST = "refused_request"  # the request spells out a change whose values the tool cannot take
    EVIDENCE_REMINDER = "evidence_reminder"  # a direct answer with nothing found behind it: asked once more
    INVENTED_VALUES = "invented_values"  # a lookup none of whose values the request or anything found holds
    SUPPOSED_CHANGE = "supposed_change"  # a change the request only supposes ("if I cancel it, ..."): not made
    REGROUNDED_LOOKUP = "regrounded_lookup"  # a lookup refused for an invented id, made with the request's one id
    REFUSED_CHANGE = "refused_change"  # the one call was a change the gate refused: said so by code
    PLANNED_LOOKUPS = "planned_lookups"  # the obvious lookups the model left out
    LINKED_ROWS = "linked_rows"  # the rows the request names by a value, read by code
    REQUESTED_CHANGE = "requested_change"  # single mode: a change the request asks for after its lookups
    RECORD_ANSWER = "record_answer"  # facts of records looked up, stated by code
    UNANSWERED_SEARCH = "unanswered_search"  # a document search for what the request asks and no result holds
    PASSAGE_LOOKUPS = "passage_lookups"  # lookups of what a passage names for the request
    DOCUMENT_SEARCH = "document_search"  # nothing found anything: code searches the documents once
    UNMENTIONED_NAME = "unmentioned_name"  # the request names what nothing found mentions: abstained
    QUOTED_ANSWER = "quoted_answer"  # a fact question the passages answer, quoted by code
    REPEATED_CALL = "repeated_call"  # loop mode: the model repeated its calls, so it is asked for the answer
    ROUND_LIMIT_ANSWER = "round_limit_answer"  # loop mode: out of rounds with evidence, answered from it
    TEXT_RETRY = "text_retry"  # a reply that was not text where an answer was needed: asked once more
    BROKEN_ANSWER = "broken_answer"  # an answer with holes or nothing the evidence holds: not shipped
    SELECTED_ANSWER = "selected_answer"  # a small model picks the evidence that answers; code writes the answer
    NAMED_IDENTIFIERS = "named_identifiers"  # a record the answer names gets its identifier
    WHAT_RAN = "what_ran"  # a resumed run's answer starts with what became of the approved calls
    CAPABILITIES_NOTE = "capabilities_note"  # the answer says which asked-for tools the user may not use
    VERSIONS_DECIDED = "versions_decided"  # a search's document versions: those in force on the request's dates

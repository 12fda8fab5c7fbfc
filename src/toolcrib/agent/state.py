"""A run's settings and its state while it runs."""

from __future__ import annotations

import time
from collections.abc import Set
from dataclasses import dataclass, field
from typing import Literal, Protocol

from toolcrib.agent.answer import Answer, Citation, Finish
from toolcrib.agent.evidence import EvidenceLedger
from toolcrib.agent.request import Request
from toolcrib.agent.runs import PausedRun
from toolcrib.models.base import Completion, Message, ToolCall, ToolSpec
from toolcrib.policy.principal import Principal
from toolcrib.sql.values import Link, ValueIndex
from toolcrib.tools.context import CallContext
from toolcrib.tools.grounding import identifiers
from toolcrib.tools.result import CallOutcome
from toolcrib.trace.events import DecidedBy
from toolcrib.trace.tracer import Tracer

Mode = Literal["single", "loop"]


@dataclass
class Limits:
    rounds: int = 5
    tool_calls: int = 8
    wall_s: float = 180.0
    tokens: int = 32000


@dataclass
class RunnerSettings:
    mode: Mode = "single"
    limits: Limits = field(default_factory=Limits)
    require_evidence: bool = True
    name: str = "this workspace"
    system_prompt: str = ""
    max_tokens: int = 400
    # the final answer's own cap, per thing the question asks and in all (small-model aids): a small model
    # can write a worked essay (400 tokens, ~22 s on two cores) or copy the evidence out where three
    # sentences answer; a reply cut there ends at its last whole sentence
    answer_tokens_per_ask: int = 120
    answer_max_tokens: int = 200
    offer_only_groundable: bool = True  # withhold tools whose required identifier the run has not seen
    search_when_nothing_found: bool = True  # code searches the documents once if no tool found anything
    plan_lookups: bool = True  # code adds the obvious lookups the model left out (loop mode: when it would answer)
    small_talk: bool = True  # a greeting, thanks or goodbye is answered by code, with no model call
    record_answers: bool = True  # facts of records looked up by id are stated by code
    search_when_unanswered: bool = True  # code searches the documents for what no result holds (both modes)
    quote_answers: bool = True  # a fact question the passages answer is quoted by code
    steps_off: frozenset[str] = frozenset()  # code steps turned off by id (agent.stepids.StepId)


@dataclass
class RunState:
    """Mutable state of one run."""

    request: Request
    principal: Principal
    tracer: Tracer
    cctx: CallContext
    messages: list[Message]
    run_id: str
    mode: Mode
    started: float = field(default_factory=time.perf_counter)
    evidence: EvidenceLedger = field(default_factory=EvidenceLedger)
    outcomes: list[CallOutcome] = field(default_factory=list)
    decided: list[CallOutcome] = field(default_factory=list)  # single mode: the outcomes of the one decision
    proposed: list[ToolCall] = field(default_factory=list)  # the model's calls about to run (``nodes.Proposed``)
    rounds: int = 0
    calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    model_decisions: int = 0
    reminded: bool = False
    completed: bool = False  # loop mode: code added what the model's calls left out (once per run)
    code_searched: bool = False
    paused: PausedRun | None = None
    request_flags: list[str] = field(default_factory=list)  # what the scanner flagged in the request itself
    links: tuple[Link, ...] = ()  # the values of the workspace's data the request names (``agent.reading``)
    # where the run is in its graph (``pipeline.GRAPH``) and what its places hand on to each other
    path: list[str] = field(default_factory=list)  # the places it went through, in order
    reply: Completion | None = None  # the model's last decision
    model_text: str = ""  # the model's text the answer (or the abstention) is made of, where it has one
    set_aside: list[tuple[ToolCall, str]] = field(default_factory=list)  # calls to record as dropped, with why
    approved: list[tuple[ToolCall, str]] = field(default_factory=list)  # a resumed run's calls, with their proposals
    ran: str = ""  # what a resumed run did with the approved calls, in code's words (``ran.what_ran``)
    specs: list[ToolSpec] = field(default_factory=list)  # the tools last offered, as the model reads them
    offered_at: int = -1  # ``calls`` when the tools were last offered
    made_before: int = 0  # ``calls`` when code began adding what the model's calls left out
    draft: Finish | None = None  # how the run ends, before its review
    citations: list[Citation] = field(default_factory=list)  # the draft's citations, once reviewed
    review_flags: list[str] = field(default_factory=list)  # what the review flagged in the draft
    answer: Answer | None = None  # the run's answer, once recorded

    @property
    def question(self) -> str:
        return self.request.text

    @property
    def values(self) -> ValueIndex | None:
        """The values of the workspace's data the run's user may read (None: they query no database)."""
        return self.cctx.domains if isinstance(self.cctx.domains, ValueIndex) else None

    def linked_ids(self, shape: str, leave: Set[str] = frozenset()) -> dict[str, Link]:
        """The ids of ``shape`` of the rows the request names by another column ("Juniper": customer_id C-17),
        less those in ``leave`` (casefolded), each with the link it came from."""
        return {k: link for link in self.links if link.entry.key
                for k in identifiers(link.entry.key[1], shape) if k.casefold() not in leave}

    @property
    def grounded(self) -> bool:
        """Whether the run found anything an answer may rest on."""
        return self.evidence.useful

    @property
    def flagged(self) -> bool:
        """Whether the scanner flagged the request or anything the run read."""
        return bool(self.cctx.flags or self.request_flags)

    def made(self) -> list[CallOutcome]:
        """The outcomes of calls the run made (not those it dropped)."""
        return [o for o in self.outcomes if o.status != "dropped"]


class Complete(Protocol):
    """The runner's one way to ask the model (traced, counted, within the run's limits)."""

    async def __call__(self, run: RunState, specs: list[ToolSpec] | None, *, decided_by: DecidedBy, title: str,
                       tool_choice: Literal["auto", "none", "required"] = "auto",
                       messages: list[Message] | None = None, max_tokens: int | None = None,
                       decision_only: bool = False, reply_schema: str | None = None) -> Completion: ...

"""Lookups code plans for a small model: the obvious ones its calls left out, READ only, each run through
the gate like any call and recorded as decided by code (steps of the aided strategy; see ``steps.py``)."""

from __future__ import annotations

import json
import re

from toolcrib.agent import prompts
from toolcrib.agent.answer import Finish
from toolcrib.agent.calls import Calls
from toolcrib.agent.records import ASKING, LookedUp, as_computed, unanswered_asks, unanswered_words
from toolcrib.agent.request import Request
from toolcrib.agent.state import RunState
from toolcrib.agent.stepids import StepId
from toolcrib.agent.steps import Step
from toolcrib.models.base import Message, ToolCall
from toolcrib.retrieval.excerpt import best_unit
from toolcrib.retrieval.retriever import contains_exactly
from toolcrib.sql.tool import SQL_RESOURCE
from toolcrib.text import find_identifiers, stems
from toolcrib.tools.grounding import identifiers
from toolcrib.tools.registry import tool_specs
from toolcrib.tools.tool import Effect, Tool, name_words

_BUDGET = 2  # planned lookups per run, in up to two rounds (a chain)
_FOUND_CHARS = 1200  # of the records found, shown with a change asked for after them


class RegroundedLookup(Step):
    """A lookup by identifier refused because the model's identifier appears nowhere ("G7-001"), made
    again by code with the one identifier of that shape the request holds ("G7"), or else of the one row it
    names by another column ("Juniper": C-17, ``RunState.linked_ids``)."""

    id, aid = StepId.REGROUNDED_LOOKUP, True

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        for i, outcome in enumerate(run.decided):
            tool = calls.tool(outcome.call.name)
            key = tool.lookup_key() if tool is not None else None
            if key is None or outcome.payload.get("error", {}).get("code") != "ungrounded_argument":
                continue
            found = list(dict.fromkeys(run.request.identifiers_of(key[1])))
            linked = {} if found else run.linked_ids(key[1])  # or the one row it names by another column
            found = found or list(linked)
            if len(found) != 1 or found[0] == outcome.call.arguments.get(key[0]):
                continue
            call = ToolCall(f"code_{run.calls + 1}", outcome.call.name, {key[0]: found[0]})
            run.decided[i], = await calls.run_planned(
                run, [call], "the model's identifier is not in the request, which names exactly one of that kind",
                self.id, linked={call.id: linked[found[0]].describe()} if linked else None)
        return None


class PlannedLookups(Step):
    """A lookup by one identifier (``Tool.lookup_key``) that the request names by what it reads ("how
    many do we have in stock": a stock lookup) and the run has not made, with the identifier of its
    shape that the request holds, or else that exactly one record the run's own tools returned holds
    when no call so far looked up that kind of thing (the order's one part, once the order was looked
    up); or a lookup whose description says it returns what the request asks and no result holds
    ("... and who is their supplier?"). In up to two rounds, at most two calls in all."""

    id, aid, setting = StepId.PLANNED_LOOKUPS, True, "plan_lookups"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        two_asks = len(run.request.asks) > 1
        budget = _BUDGET
        while budget:
            planned, links = self._plan(run, calls, two_asks, budget)
            if not planned:
                break
            budget -= len(planned)
            await calls.run_planned(run, planned, "the request names what this lookup reads, and the run holds its "
                                                  "identifier", self.id, linked=links)
        return None

    @staticmethod
    def _plan(run: RunState, calls: Calls, two_asks: bool, budget: int) -> tuple[list[ToolCall], dict[str, str]]:
        """One round: the calls to add now (recording the offer they come from), and the link each call
        whose identifier the request gives by another column took it from, by call id."""
        offer = calls.current_offer(run)  # what the run may use now: a result may have named an identifier
        made = [o.call for o in run.made()]
        looked_up = {str(v).casefold() for c in made for v in c.arguments.values()}
        # an identifier the model looked up is looked up again by another tool only for a second ask
        # ("what does G7 cost and is it in stock?"), not for one ask that names both ("is part G7 in stock?")
        used = set() if two_asks else looked_up
        records = calls.records(run)
        held = stems(" ".join(records))
        planned: list[ToolCall] = []
        links: dict[str, str] = {}
        for tool in offer.tools:
            key = tool.lookup_key()
            if key is None or any(c.name == tool.name for c in made):
                continue
            missing = tool.returns_asked(run.question, held)
            if not (missing or tool.named_by(run.question)):
                continue
            name, shape = key
            found = [v for v in run.request.identifiers_of(shape) if missing or v.casefold() not in used]
            linked = {} if found else run.linked_ids(shape, looked_up)
            if len(linked) == 1:  # a row the request names by another column ("Juniper": customers.name, C-17)
                found = list(linked)
            if not found:
                if any(name in c.arguments for c in made):  # that kind of thing was looked up: no chain
                    continue
                found = list(dict.fromkeys(v for text in records for v in identifiers(text, shape)
                                           if v.casefold() not in looked_up))
                if len(found) != 1:
                    continue
            call = ToolCall(f"code_{run.calls + len(planned) + 1}", tool.name, {name: found[0]})
            if found[0] in linked:
                links[call.id] = linked[found[0]].describe()
            planned.append(call)
            if len(planned) == budget:
                break
        if planned:
            calls.offer(run, offer)
        return planned, links


class LinkedRows(Step):
    """The rows the request names by every word of a value of another column ("express delivery": services.name,
    code EXP-1; ``RunState.links``; not "supplier" of a meeting's title) that no result of the run holds yet,
    read by code through the query tool (the user's own, offered to them), at most two: the answer then has
    the row's other values (its price, its length) as evidence, cited like any result, and the call records
    the link it came from."""

    id, aid, setting = StepId.LINKED_ROWS, True, "plan_lookups"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        offer = calls.current_offer(run)
        query = next((t for t in offer.tools if SQL_RESOURCE in t.tags), None)
        if query is None or not run.links or run.cctx.flags:
            return None
        held = " ".join(calls.records(run)).casefold()
        rows = [link for link in run.links if link.whole and link.entry.key is not None
                and not {link.entry.value.casefold(), link.entry.key[1].casefold()} & _string_values(held)]
        planned: list[ToolCall] = []
        linked: dict[str, str] = {}
        for link in rows[:_BUDGET]:
            assert link.entry.key is not None
            column, key = link.entry.key
            call = ToolCall(f"code_{run.calls + len(planned) + 1}", query.name,
                            {"query": f'SELECT * FROM "{link.entry.table}" WHERE "{column}" = ?', "params": [key]})
            planned.append(call)
            linked[call.id] = link.describe()
        if planned:
            calls.offer(run, offer)
            await calls.run_planned(run, planned, "the request names this row by one of its values", self.id,
                                    linked=linked)
        return None


def _string_values(text: str) -> set[str]:
    """The values a result's JSON text holds, casefolded: each string value, whole."""
    return set(re.findall(r'"([^"]*)"', text))


class RequestedChange(Step):
    """Single mode: a request that asks for lookups and then a change ("check whether Dr X is free at
    12:00 and, if he is, book PET-1 in with him") whose one decision made only the lookups. The change
    is asked for when the request says its verb as written in the tool's name ("book", not "booked") and
    holds a value of each identifier it requires; code asks the model once to propose it, shown what the
    lookups found, offered that tool only. The proposal goes through the gate like any: held for a
    person's approval, and the run pauses with it."""

    id, aid = StepId.REQUESTED_CHANGE, True

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if run.flagged or calls.complete is None or any(calls.changes(o.call) for o in run.outcomes):
            return None
        named = {t.name for t in calls.gate.registry
                 if t.effect is not Effect.READ and _asks_change(t, run.request)}
        if not named:  # the usual case: no offer is computed for it
            return None
        offer = calls.current_offer(run)
        asked = [t for t in offer.tools if t.name in named]
        if len(asked) != 1:
            return None
        tool = asked[0]
        messages = [*(m for m in run.messages if m.role == "system"), Message("user", prompts.REQUESTED_CHANGE.format(
            question=run.question, found=" ".join(calls.records(run))[:_FOUND_CHARS] or "nothing"))]
        reply = await calls.complete(run, tool_specs([tool]), decided_by="code", tool_choice="required",
                                     messages=messages, title=f"Ask for the change the request asks for: {tool.name}")
        proposed = [c for c in reply.tool_calls if c.name == tool.name][:1]
        self.note(run, f"The request asks for a change after its lookups: {tool.name}",
                  calls=[c.to_dict() for c in proposed],
                  reason="the request says the change's verb and gives its identifiers; the one decision made only "
                         "the lookups, so the model was asked for the change, which waits for a person's approval")
        if proposed:
            calls.offer(run, offer)
            await calls.run_model_calls(run, reply.text, proposed)
        return None


def _asks_change(tool: Tool, request: Request) -> bool:
    """Whether ``request`` says ``tool``'s verb as its name writes it, outside a clause that only supposes
    it ("if I set CH1 to 24 V, how long ..."), and holds a value of each identifier shape the tool requires
    (at least one)."""
    required = set(tool.parameters.get("required", ()))
    shapes = [shape for name, shape in tool.identifier_shapes if name in required]
    return (request.asserts(name_words(tool.name)[0]) and bool(shapes)
            and all(request.identifiers_of(shape) for shape in shapes))


class UnansweredSearch(Step):
    """The run's reads found something, but not what two or more words of the request ask about (a
    policy question answered with a list of free slots): code searches the documents for it."""

    id, aid, setting = StepId.UNANSWERED_SEARCH, True, "search_when_unanswered"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        if run.grounded and len(missing := self._unanswered(run, calls)) >= 2:
            await calls.search_documents(run, f"the request asks about {', '.join(sorted(missing))}, which no "
                                              "result holds", self.id)
        return None

    @staticmethod
    def _unanswered(run: RunState, calls: Calls) -> set[str]:
        """What the request asks (less the words of its dates) beyond what the run's reads returned: the
        records of lookups and other typed reads; of a request of several asks with a query's result among
        them (a query's figures need not repeat the request's words), the words of each ask no result
        names a word of ("What does a dog spay cost, and what deposit is due?" of a table of prices);
        nothing when anything else was found (a search, a web page)."""
        read: list[LookedUp] = []
        tables = False
        for outcome in (o for o in run.outcomes if o.ok):
            tool = calls.tool(outcome.call.name)
            citation = run.evidence.citation_of(outcome.call.id)
            data = outcome.payload.get("data") or {}
            if tool is None or tool.effect is not Effect.READ or citation is None:
                return set()
            if isinstance(data, dict) and "columns" in data:
                tables = tables or not data.get("claimed")
                data = as_computed(data) if data.get("claimed") else data
            read.append(LookedUp(tool, "", data, citation))
        if not read:
            return set()
        dates = stems(" ".join(d.text for d in run.request.dated))
        if not tables:
            return unanswered_words(run.request.stems - dates, read)
        return {word for ask in unanswered_asks(run.request, [r.record for r in read])
                for word in stems(ask) - ASKING - dates}


class PassageLookups(Step):
    """A lookup by identifier of what the organisation's own passages name for the request ("which
    probe does channel C use, and what does it cost?": the probe the passage names), when the request
    asks for what that lookup returns and no result holds it: the identifiers of its shape in the
    passage unit that bears most on the request, not in the request and not looked up yet, at most two."""

    id, aid, setting = StepId.PASSAGE_LOOKUPS, True, "plan_lookups"

    async def __call__(self, run: RunState, calls: Calls, draft: Finish | None) -> Finish | None:
        passages = [p for p in run.evidence.passages.values() if p.trusted]
        if not passages or run.cctx.flags:
            return None
        held = stems(" ".join(calls.records(run)))
        made = calls.made_keys(run)
        offer = calls.current_offer(run)  # the passages' identifiers are grounded now
        planned: list[ToolCall] = []
        for tool in offer.tools:
            key = tool.lookup_key()
            if key is None or not tool.returns_asked(run.question, held):
                continue
            # what names the thing is the rest of the request ("which probe does channel C use"), read
            # without the identifiers it names already (the thing sought is another one)
            naming = " ".join(a for a in run.request.asks if not tool.returns_asked(a, set()))
            best = best_unit(_without_identifiers(naming), [p.text for p in passages]) if naming else None
            for value in dict.fromkeys(identifiers(best.text, key[1]) if best is not None else ()):
                arguments = {key[0]: value}
                if (not contains_exactly(run.question, value) and len(planned) < _BUDGET
                        and (tool.name, json.dumps(arguments, sort_keys=True)) not in made):
                    planned.append(ToolCall(f"code_{run.calls + len(planned) + 1}", tool.name, arguments))
        if planned:
            calls.offer(run, offer)
            await calls.run_planned(run, planned, "a passage names it for what the request asks, and the request "
                                                  "asks for what this lookup returns", self.id)
        return None


def _without_identifiers(text: str) -> str:
    for identifier in find_identifiers(text):
        text = text.replace(identifier, " ")
    return text



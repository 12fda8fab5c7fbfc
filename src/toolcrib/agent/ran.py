"""What a resumed run did with the calls people decided on, in words code writes from the outcomes.

"I ran book_room (room 12, nights 2): kim approved it after changing nights from 3 to 2 (reason: "two
nights only"). Result: booking_id B-7." A call that ran is never answered "I could not find it": the
outcome of each approved call is the answer's first sentence, and a rejection says who rejected it and
why.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from toolcrib.tools.result import CallOutcome

_SHOWN = 4  # a result's fields named in the account; the rest are in the run's trace


def what_ran(outcomes: Iterable[CallOutcome]) -> str:
    """One sentence or two per decided call: run (with who approved it, what they changed and why, and
    what it returned), rejected (by whom, why), failed or of unknown outcome. "" when none was decided."""
    return " ".join(line for outcome in outcomes if (line := _account(outcome)))


def described_call(name: str, arguments: Mapping[str, Any]) -> str:
    """A call as an answer names it, every argument: "book_room (room 4, nights 2)", never its JSON."""
    given = ", ".join(f"{k} {_shown(v)}" for k, v in arguments.items() if v not in (None, ""))
    return f"{name} ({given})" if given else name


def _account(outcome: CallOutcome) -> str:
    call = described_call(outcome.call.name, outcome.call.arguments)
    payload = outcome.payload
    error = payload.get("error") or {}
    if outcome.status == "ok":
        edited = payload.get("edited") or {}
        by = edited.get("by") or payload.get("approved_by") or "an approver"
        change = ", ".join(f"{name} from {_shown(c.get('from'))} to {_shown(c.get('to'))}"
                           for name, c in (edited.get("changes") or {}).items())
        how = f"{by} approved it after changing {change}" if change else f"{by} approved it"
        why = f' (reason: "{edited["reason"]}")' if edited.get("reason") else ""
        result = _values(payload.get("data"), outcome.call.arguments)
        return f"I ran {call}: {how}{why}." + (f" Result: {result}." if result else "")
    if error.get("code") == "approval_refused":
        decision = error.get("decision") or {}
        if error.get("reason") == "rejected" or decision:
            why = f' (reason: "{decision["reason"]}")' if decision.get("reason") else ""
            return f"I did not run {call}: {decision.get('by') or 'an approver'} rejected it{why}."
        return f"I did not run {call}: {error.get('message', 'its approval could not be used')}."
    if outcome.status == "outcome_unknown":
        return _sentence(f"{call} was approved and started, but its outcome is unknown: {error.get('message', '')}")
    if outcome.status == "error":
        return _sentence(f"{call} was approved but did not complete: {error.get('message', 'it failed')}")
    return ""


def _sentence(text: str) -> str:
    text = text.strip().rstrip(":").strip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _values(data: Any, given: Mapping[str, Any] | None = None) -> str:
    """A call's arguments or a result's scalar fields, "name value, ..." (at most a few; a result's fields
    that repeat an argument of the call, ``given``, are left out)."""
    if isinstance(data, Mapping):
        items = [(k, v) for k, v in data.items() if not isinstance(v, (Mapping, list)) and v not in (None, "")
                 and not (given and k in given and given[k] == v)]
        return ", ".join(f"{k} {_shown(v)}" for k, v in items[:_SHOWN]) if items else ""
    return _shown(data) if isinstance(data, (str, int, float)) and not isinstance(data, bool) else ""


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

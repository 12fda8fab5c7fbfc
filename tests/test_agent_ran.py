"""What a resumed run says about the calls people decided on: written by code from the outcomes."""

from __future__ import annotations

from toolcrib import ToolCall
from toolcrib.agent.ran import what_ran
from toolcrib.tools.result import CallOutcome

CALL = ToolCall("c1", "reserve_stock", {"part_number": "HLV-2210", "quantity": 1})


def test_a_call_that_ran_says_who_approved_it_what_they_changed_and_what_it_returned() -> None:
    ran = CallOutcome(CALL, "ok", {"ok": True, "data": {"reservation": "R-17", "status": "reserved", "lines": []},
                                   "approved_by": "ada", "edited": {"by": "ada", "reason": "only one left",
                                                                    "changes": {"quantity": {"from": 2, "to": 1}}}})
    assert what_ran([ran]) == ('I ran reserve_stock (part_number HLV-2210, quantity 1): ada approved it after changing '
                               'quantity from 2 to 1 (reason: "only one left"). Result: reservation R-17, status '
                               'reserved.')


def test_a_rejection_a_failure_and_an_unknown_outcome_each_say_so() -> None:
    rejected = CallOutcome(CALL, "refused", {"ok": False, "error": {
        "code": "approval_refused", "reason": "rejected", "message": "the proposal was rejected by ada",
        "decision": {"by": "ada", "reason": "not this week"}}})
    failed = CallOutcome(CALL, "error", {"ok": False, "error": {"code": "tool_failed", "message": "stock locked"}})
    unknown = CallOutcome(CALL, "outcome_unknown", {"ok": False, "error": {
        "code": "outcome_unknown", "message": "it did not answer within 5s"}})
    assert what_ran([rejected, failed, unknown]) == (
        'I did not run reserve_stock (part_number HLV-2210, quantity 1): ada rejected it (reason: "not this week"). '
        "reserve_stock (part_number HLV-2210, quantity 1) was approved but did not complete: stock locked. "
        "reserve_stock (part_number HLV-2210, quantity 1) was approved and started, but its outcome is unknown: it "
        "did not answer within 5s.")
    assert what_ran([CallOutcome(CALL, "approval_required", {})]) == ""

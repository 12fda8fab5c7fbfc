"""What the approval desk's sweep recovers after a process died mid-step (issue 39): a decision committed
without its audit record gets it, once, marked recovered; a claimed call whose process died is recorded
``outcome_unknown`` (never run again), and a late outcome from a process that was only slow still counts.
Real SQLite stores in a copy of the demo workspace; ``test_service_faults.py`` does the same with real
processes killed -9 on PostgreSQL."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from toolcrib.desk import ApprovalDesk
from toolcrib.policy.proposals import Proposal
from toolcrib.workspace import Workspace
from toolcrib.workspace.locate import DEMO_SOURCE


def _desk(tmp_path: Path) -> ApprovalDesk:
    ws = tmp_path / "ws"
    shutil.copytree(DEMO_SOURCE, ws, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    return ApprovalDesk(Workspace.open(ws))


def _approved(desk: ApprovalDesk) -> Proposal:
    """alice's reservation, approved by ada, straight in the store: no audit record of either."""
    alice, ada = desk.ws.principal("alice"), desk.ws.principal("ada")
    proposal = desk.approvals.propose("reserve_stock", {"part_number": "F2", "quantity": 1}, alice, "v1", "r1")
    desk.approvals.approve(proposal.id, ada)
    return proposal


def _events(desk: ApprovalDesk, proposal_id: str) -> list[tuple[str, str, bool]]:
    return [(r.event, r.actor, bool(r.detail.get("recovered"))) for r in desk.audit.records()
            if r.proposal_id == proposal_id]


def test_a_decision_committed_without_its_audit_record_gets_it_once_from_the_next_sweep(tmp_path: Path) -> None:
    desk = _desk(tmp_path)
    proposal = _approved(desk)  # what a process did before it was killed: committed, no audit record
    assert _events(desk, proposal.id) == []
    assert desk.reconcile(now=time.time()) == 0  # too recent: a live process may be appending it right now

    later = time.time() + 60
    assert desk.reconcile(now=later) == 2
    assert _events(desk, proposal.id) == [("proposed", "alice", True), ("approved", "ada", True)]
    assert desk.reconcile(now=later + 60) == 0  # checked once
    other = ApprovalDesk(desk.ws)  # another process's desk finds nothing missing either
    assert other.reconcile(now=later + 120) == 0
    assert _events(desk, proposal.id) == [("proposed", "alice", True), ("approved", "ada", True)]
    assert desk.audit.verify().ok
    other.close()
    desk.close()


def test_a_call_whose_process_died_while_running_it_is_recorded_outcome_unknown_once(tmp_path: Path) -> None:
    desk = _desk(tmp_path)
    proposal = _approved(desk)
    desk.approvals.claim(proposal.id, proposal.hash)  # the process claimed it, started the call, and died
    assert desk.approvals.abandon_stalled(lambda tool: 3600.0) == []  # still within its timeout

    [stalled] = desk.approvals.abandon_stalled(lambda tool: 0.0)
    assert stalled.id == proposal.id and stalled.status == "outcome_unknown"
    status, result = desk.approvals.outcome(proposal.id) or ("", {})
    assert status == "outcome_unknown" and result["error"]["code"] == "outcome_unknown"
    assert "not run again" in result["error"]["message"]
    assert desk.approvals.abandon_stalled(lambda tool: 0.0) == []  # once
    # a process that was only slow records what really happened
    desk.approvals.finish(proposal.id, "executed", {"ok": True, "data": {"reserved": True}})
    assert desk.approvals.outcome(proposal.id) == ("executed", {"ok": True, "data": {"reserved": True}})
    desk.close()


def test_the_sweep_audits_a_stalled_call_as_outcome_unknown(tmp_path: Path) -> None:
    desk = _desk(tmp_path)
    proposal = _approved(desk)
    desk.approvals.claim(proposal.id, proposal.hash, now=time.time() - 3600)  # claimed an hour ago
    desk.sweep()
    recorded = desk.approvals.get(proposal.id)
    assert recorded is not None and recorded.status == "outcome_unknown"
    assert ("outcome_unknown", "system", False) in _events(desk, proposal.id)
    desk.close()

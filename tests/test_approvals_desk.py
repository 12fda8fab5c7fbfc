"""The approver's desk over HTTP (the real app in process, a private demo workspace, the deterministic desk
model): edit-then-approve as a new hash-bound proposal, the approver's words travelling back into the run,
and decisions in bulk, each checked and audited on its own; ``toolcrib approve --set`` and several ids."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("fastapi")

from fakes.desk_model import desk
from test_service import Service, demo_copy
from toolcrib.cli import main
from toolcrib.desk import ApprovalDesk
from toolcrib.models.base import Completion, Message, ToolSpec
from toolcrib.models.scripted import FunctionModel
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Review
from toolcrib.workspace import Workspace

BIG = "Please reserve 300 F2 filters"


@pytest.fixture()
def svc(tmp_path: Path) -> Iterator[Service]:
    service = Service(demo_copy(tmp_path))
    with service.client:
        yield service


def held(svc: Service, question: str = BIG, user: str = "alice") -> tuple[str, dict[str, Any]]:
    answer = svc.ask(user, question).json()
    assert answer["outcome"] == "paused", answer
    [proposal] = [p for p in svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()
                  if p["run_id"] == answer["run_id"]]
    return answer["run_id"], proposal


def post(svc: Service, path: str, body: dict[str, Any], user: str = "ada") -> Any:
    return svc.client.post(path, json=body, headers=svc.as_(user))


def test_an_approver_edits_the_quantity_and_the_edited_call_runs_once(svc: Service) -> None:
    run_id, proposal = held(svc)
    assert proposal["arguments"] == {"part_number": "F2", "quantity": 300}
    edited = post(svc, f"/v1/proposals/{proposal['id']}/edit",
                  {"hash": proposal["hash"], "arguments": {"quantity": 3}, "reason": "the customer wants 3"}).json()
    assert edited["status"] == "approved" and edited["supersedes"] == proposal["id"]
    assert edited["proposal_id"] != proposal["id"] and edited["hash"] != proposal["hash"]
    assert edited["changes"] == {"quantity": {"from": 300, "to": 3}}
    assert svc.client.get("/v1/proposals", headers=svc.as_("ada")).json() == []  # nothing left to decide
    # the original can no longer be approved: it is superseded, and its edit is single-use like any approval
    again = post(svc, f"/v1/proposals/{proposal['id']}/approve", {"hash": proposal["hash"]})
    assert (again.status_code, again.json()["error"]["reason"]) == (409, "superseded")
    assert svc.stock("F2") == 5

    answer = svc.client.post(f"/v1/runs/{run_id}/resume", headers=svc.as_("alice")).json()
    assert answer["outcome"] == "answered" and "reserved" in answer["text"]
    assert answer["executed"][0]["arguments"] == {"part_number": "F2", "quantity": 3}
    assert svc.stock("F2") == 2
    replay = svc.client.post(f"/v1/runs/{run_id}/resume", headers=svc.as_("alice")).json()
    assert replay["executed"][0]["status"] == "ok" and svc.stock("F2") == 2  # once

    run = svc.client.get(f"/v1/runs/{run_id}", headers=svc.as_("alice")).json()
    original, replacement = run["proposals"]
    assert (original["status"], original["superseded_by"]) == ("superseded", replacement["id"])
    assert original["edit"]["by"] == "ada" and original["edit"]["by_name"] == "Ada Fitzgerald"
    assert original["edit"]["changes"] == {"quantity": {"from": 300, "to": 3}}
    assert original["edit"]["reason"] == "the customer wants 3"
    assert (replacement["status"], replacement["supersedes"]) == ("executed", original["id"])
    assert replacement["provenance"]["quantity"] == ["approver ada"]
    assert replacement["provenance"]["part_number"] == original["provenance"]["part_number"]
    approved = next(e for e in run["events"] if e["kind"] == "call_approved")
    assert approved["proposal_id"] == replacement["id"]
    assert approved["detail"]["edited"]["changes"] == {"quantity": {"from": 300, "to": 3}}
    assert approved["detail"]["edited"]["by"] == "ada"

    audit = svc.client.get("/v1/audit", headers=svc.as_("ada")).json()
    events = [(r["event"], r["proposal_id"]) for r in audit if r["proposal_id"] in (original["id"], replacement["id"])]
    assert events == [("proposed", original["id"]), ("edited", original["id"]), ("proposed", replacement["id"]),
                      ("approved", replacement["id"]), ("refused", original["id"]), ("executed", replacement["id"])]
    edit_record = next(r for r in audit if r["event"] == "edited")
    assert edit_record["actor"] == "ada" and edit_record["detail"]["superseded_by"] == replacement["id"]


def test_the_model_sees_the_edit_as_the_calls_result(svc: Service) -> None:
    run_id, proposal = held(svc)
    post(svc, f"/v1/proposals/{proposal['id']}/edit", {"hash": proposal["hash"], "arguments": {"quantity": 3}})
    svc.client.post(f"/v1/runs/{run_id}/resume", headers=svc.as_("alice"))
    [replacement] = [p for p in svc.client.get(f"/v1/runs/{run_id}", headers=svc.as_("alice")).json()["proposals"]
                     if p["supersedes"]]
    stored = svc.ws.approvals().outcome(replacement["id"])
    assert stored is not None
    status, payload = stored
    assert status == "executed" and payload["edited"]["by"] == "ada"
    assert payload["edited"]["changes"] == {"quantity": {"from": 300, "to": 3}}
    assert "changed this call before approving it" in payload["edited"]["note"]


@pytest.mark.parametrize(("body", "status", "code"), [
    ({"quantity": 0}, 400, "invalid_arguments"),  # the tool's schema: 1 to 1000
    ({"quantity": "three"}, 400, "invalid_arguments"),
    ({"colour": "red"}, 400, "invalid_arguments"),  # no such argument
    ({"quantity": 300}, 400, "invalid_arguments"),  # changes nothing
])
def test_an_edit_the_schema_refuses_is_a_stable_error_and_the_proposal_stays_pending(
        svc: Service, body: dict[str, Any], status: int, code: str) -> None:
    _, proposal = held(svc)
    response = post(svc, f"/v1/proposals/{proposal['id']}/edit", {"hash": proposal["hash"], "arguments": body})
    assert response.status_code == status
    assert response.json()["error"]["code"] == code and "Traceback" not in response.text
    [still] = svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()
    assert still["id"] == proposal["id"] and still["status"] == "pending"


def test_an_edit_keeps_separation_of_duties_the_hash_shown_and_the_approver_from_the_key(svc: Service) -> None:
    _, proposal = held(svc)
    path = f"/v1/proposals/{proposal['id']}/edit"
    own = post(svc, path, {"hash": proposal["hash"], "arguments": {"quantity": 3}}, user="alice")
    assert (own.status_code, own.json()["error"]["reason"]) == (403, "not_an_approver")
    stale = post(svc, path, {"hash": "0" * 64, "arguments": {"quantity": 3}})
    assert (stale.status_code, stale.json()["error"]["reason"]) == (409, "stale")
    named = post(svc, path, {"hash": proposal["hash"], "arguments": {"quantity": 3}, "approver": "omar"})
    assert named.status_code == 422  # a body naming who decides is refused, never read
    mine = svc.ask("ada", BIG).json()
    [p] = svc.client.get("/v1/runs/" + mine["run_id"], headers=svc.as_("ada")).json()["proposals"]
    self_edit = post(svc, f"/v1/proposals/{p['id']}/edit", {"hash": p["hash"], "arguments": {"quantity": 3}})
    assert (self_edit.status_code, self_edit.json()["error"]["reason"]) == (403, "self_approval")


def test_a_rejections_reason_reaches_the_requester_and_the_model(svc: Service) -> None:
    run_id, proposal = held(svc)
    post(svc, f"/v1/proposals/{proposal['id']}/reject", {"hash": proposal["hash"], "reason": "only 5 in stock"})
    [seen] = svc.client.get(f"/v1/runs/{run_id}", headers=svc.as_("alice")).json()["proposals"]
    assert (seen["status"], seen["decided_by"], seen["reason"]) == ("rejected", "ada", "only 5 in stock")
    answer = svc.client.post(f"/v1/runs/{run_id}/resume", headers=svc.as_("alice")).json()
    [refused] = answer["refused"]
    assert refused["error"]["reason"] == "rejected"
    assert refused["error"]["decision"] == {"by": "ada", "reason": "only 5 in stock"}
    assert 'rejected by ada: "only 5 in stock"' in refused["error"]["message"]
    assert svc.stock("F2") == 5


def test_bulk_approval_checks_each_proposal_on_its_own(svc: Service) -> None:
    proposals = [held(svc, f"Please reserve {n} F2 filters")[1] for n in (1, 2, 3)]
    post(svc, f"/v1/proposals/{proposals[2]['id']}/reject", {"hash": proposals[2]["hash"]})
    body = {"action": "approve", "proposals": [{"id": proposals[0]["id"], "hash": proposals[0]["hash"]},
                                               {"id": proposals[1]["id"], "hash": "0" * 64},
                                               {"id": proposals[2]["id"], "hash": proposals[2]["hash"]},
                                               {"id": "prop_missing", "hash": "x"}]}
    result = post(svc, "/v1/proposals/decide", body).json()
    assert result["decided"] == 1
    assert [r["status"] for r in result["results"]] == ["approved", "refused", "refused", "refused"]
    assert [r.get("error", {}).get("reason") for r in result["results"]] == [None, "stale", "rejected", "not_found"]
    audit = svc.client.get("/v1/audit", headers=svc.as_("ada")).json()
    assert sum(r["event"] == "approved" for r in audit) == 1
    assert sum(r["event"] == "refused" for r in audit) == 2  # each refusal of a real proposal audited on its own
    rejected = post(svc, "/v1/proposals/decide", {"action": "reject", "reason": "not this week", "proposals": [
        {"id": proposals[1]["id"], "hash": proposals[1]["hash"]}]}).json()
    assert rejected["results"][0]["status"] == "rejected"
    too_many = post(svc, "/v1/proposals/decide", {"action": "approve", "proposals": [
        {"id": "p", "hash": "h"}] * 101})
    assert too_many.status_code == 422 and too_many.json()["error"]["code"] == "invalid_request"


def test_cli_approve_with_set_edits_and_several_ids_decide_in_bulk(svc: Service) -> None:
    run_id, proposal = held(svc)
    workspace = ["--workspace", str(svc.root)]
    out = CliRunner().invoke(main, ["approve", proposal["id"], "--user", "ada", "--set", "quantity=3",
                                    "--reason", "three, not 300", "--json", *workspace])
    assert out.exit_code == 0, out.output
    edited = json.loads(out.output)
    assert edited["changes"] == {"quantity": {"from": 300, "to": 3}} and edited["supersedes"] == proposal["id"]
    bad = CliRunner().invoke(main, ["approve", held(svc, "Please reserve 9 F2 filters")[1]["id"], "--user", "ada",
                                    "--set", "quantity=-1", *workspace])
    assert bad.exit_code != 0 and "Traceback" not in bad.output and "quantity" in bad.output
    malformed = CliRunner().invoke(main, ["approve", proposal["id"], "--user", "ada", "--set", "quantity", *workspace])
    assert malformed.exit_code != 0 and "ARG=VALUE" in malformed.output
    ids = [held(svc, f"Please reserve {n} F1 filters")[1]["id"] for n in (1, 2)]
    both = CliRunner().invoke(main, ["approve", *ids, "--user", "ada", "--json", *workspace])
    assert both.exit_code == 0, both.output
    assert [r["status"] for r in json.loads(both.output)] == ["approved", "approved"]
    answer = svc.client.post(f"/v1/runs/{run_id}/resume", headers=svc.as_("alice")).json()
    assert answer["executed"][0]["arguments"]["quantity"] == 3 and svc.stock("F2") == 2


@pytest.mark.parametrize("decision", ["edit", "reject"])
def test_the_models_next_turn_reads_what_the_approver_decided_and_why(tmp_path: Path, decision: str) -> None:
    seen: list[list[Message]] = []

    def model(messages: list[Message], tools: list[ToolSpec] | None) -> Completion | str:
        seen.append(list(messages))
        return desk(messages, tools)

    ws = Workspace.open(demo_copy(tmp_path))
    runner = ws.runner(FunctionModel(model))
    alice, ada = ws.principal("alice"), ws.principal("ada")
    paused = runner.ask(BIG, alice, mode="loop")  # loop mode: the run goes on to the model after the decision
    assert paused.outcome == "paused"
    approvals = ApprovalDesk(ws)
    [proposal] = approvals.pending(ada)
    if decision == "edit":
        approvals.edit(proposal["id"], ada, {"quantity": 3}, reason="the customer wants 3")
    else:
        approvals.decide(proposal["id"], ada, reject=True, reason="only 5 in stock")
    approvals.close()
    answer = runner.resume(paused.run_id, alice)
    # the answer starts with what became of the call, in code's words, whatever the model wrote after it
    assert answer.text.startswith(
        'I ran reserve_stock (part_number F2, quantity 3): ada approved it after changing quantity from 300 to 3 '
        '(reason: "the customer wants 3").' if decision == "edit" else
        'I did not run reserve_stock (part_number F2, quantity 300): ada rejected it (reason: "only 5 in stock").')
    held, result = [m for m in seen[-1] if m.role == "tool" and m.name == "reserve_stock"]  # held, then decided
    assert "approval_required" in held.content
    shown = json.loads(result.content.split("\n")[1])
    if decision == "edit":
        assert shown["data"]["quantity"] == 3
        assert shown["edited"]["by"] == "ada" and shown["edited"]["reason"] == "the customer wants 3"
        assert shown["edited"]["changes"] == {"quantity": {"from": 300, "to": 3}}
    else:
        assert shown["error"]["decision"] == {"by": "ada", "reason": "only 5 in stock"}
        assert shown["error"]["message"] == 'the proposal was rejected by ada: "only 5 in stock"'


def test_the_approvers_list_shows_warned_proposals_first(svc: Service) -> None:
    _, plain = held(svc)
    store = svc.ws.approvals()
    original = store.get(plain["id"])
    assert original is not None and not original.review.warnings
    warned = store.propose(original.tool, {**original.arguments, "quantity": 2},
                           Principal(original.requester, tenant=original.tenant), original.policy_version,
                           original.resource_version, review=Review(BIG, {}, [
                               'quantity 2 comes from an instruction in content others wrote: "Please reserve 2"']))
    listed = [p["id"] for p in svc.client.get("/v1/proposals", headers=svc.as_("ada")).json()]
    assert listed.index(warned.id) < listed.index(plain["id"])

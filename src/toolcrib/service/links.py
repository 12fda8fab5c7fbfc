"""OpenAPI links between the service's operations: how a client (or a stateful fuzzer) goes from an
answer to its run, its held proposals, their decision and the run's resume, with the values each
response hands to the next request. Added to the document FastAPI generates (it has no syntax for them)."""

from __future__ import annotations

from typing import Any

RUN = ("/v1/runs/{run_id}", "get")
RUNS = ("/v1/runs", "get")
RESUME = ("/v1/runs/{run_id}/resume", "post")
ASK = ("/v1/ask", "post")
PROPOSALS = ("/v1/proposals", "get")
PROPOSAL = ("/v1/proposals/{proposal_id}", "get")
APPROVE = ("/v1/proposals/{proposal_id}/approve", "post")
REJECT = ("/v1/proposals/{proposal_id}/reject", "post")
EDIT = ("/v1/proposals/{proposal_id}/edit", "post")
DECIDE = ("/v1/proposals/decide", "post")

Operation = tuple[str, str]
# source operation -> (link name, target operation, parameters, request body), for its 200 response
_LINKS: dict[Operation, list[tuple[str, Operation, dict[str, str], dict[str, Any] | None]]] = {
    ASK: [
        ("GetRun", RUN, {"run_id": "$response.body#/run_id"}, None),
        ("ResumeRun", RESUME, {"run_id": "$response.body#/run_id"}, None),
        ("GetHeldProposal", PROPOSAL, {"proposal_id": "$response.body#/pending/0/proposal_id"}, None),
    ],
    RUNS: [("GetRun", RUN, {"run_id": "$response.body#/0/run_id"}, None)],
    RUN: [
        ("ResumeRun", RESUME, {"run_id": "$request.path.run_id"}, None),
        ("GetProposal", PROPOSAL, {"proposal_id": "$response.body#/proposals/0/id"}, None),
    ],
    RESUME: [
        ("GetRun", RUN, {"run_id": "$request.path.run_id"}, None),
        ("GetHeldProposal", PROPOSAL, {"proposal_id": "$response.body#/pending/0/proposal_id"}, None),
    ],
    PROPOSALS: [
        ("GetProposal", PROPOSAL, {"proposal_id": "$response.body#/0/id"}, None),
        ("Approve", APPROVE, {"proposal_id": "$response.body#/0/id"}, {"hash": "$response.body#/0/hash"}),
        ("Reject", REJECT, {"proposal_id": "$response.body#/0/id"}, {"hash": "$response.body#/0/hash"}),
        ("DecideAll", DECIDE, {}, {"action": "approve", "proposals": [
            {"id": "$response.body#/0/id", "hash": "$response.body#/0/hash"}]}),
    ],
    PROPOSAL: [
        ("Approve", APPROVE, {"proposal_id": "$request.path.proposal_id"}, {"hash": "$response.body#/hash"}),
        ("Reject", REJECT, {"proposal_id": "$request.path.proposal_id"}, {"hash": "$response.body#/hash"}),
        ("Edit", EDIT, {"proposal_id": "$request.path.proposal_id"},
         {"hash": "$response.body#/hash", "arguments": "$response.body#/arguments"}),
        ("GetRun", RUN, {"run_id": "$response.body#/run_id"}, None),
    ],
    APPROVE: [
        ("ResumeRun", RESUME, {"run_id": "$response.body#/run_id"}, None),
        ("GetProposal", PROPOSAL, {"proposal_id": "$request.path.proposal_id"}, None),
    ],
    REJECT: [("ResumeRun", RESUME, {"run_id": "$response.body#/run_id"}, None)],
    EDIT: [("GetEditedProposal", PROPOSAL, {"proposal_id": "$response.body#/proposal_id"}, None)],
}


def _ref(operation: Operation) -> str:
    path, method = operation
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def add_links(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` (an OpenAPI document of the service) with the links above on each 200 response."""
    paths = document.get("paths", {})
    for (path, method), links in _LINKS.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get("200")
        if response is None:
            continue
        for name, target, parameters, body in links:
            if target[0] not in paths:
                continue
            link: dict[str, Any] = {"operationRef": _ref(target), "parameters": parameters}
            if body is not None:
                link["requestBody"] = body
            response.setdefault("links", {})[name] = link
    return document

"""Hosted tools on the Responses API (file_search, web_search, code_interpreter), against a loopback
server answering with the openai SDK's own output items and annotations.

What a user notices: the tools are sent as the workspace configured them, what the provider found is
cited in the answer (and only that), and the trace shows each hosted call as the provider's decision.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any

import pytest

pytest.importorskip("openai", reason="the openai extra is not installed")

from openai.types.responses import (
    ResponseCodeInterpreterToolCall,
    ResponseFileSearchToolCall,
    ResponseFunctionWebSearch,
)
from openai.types.responses.response_code_interpreter_tool_call import OutputLogs
from openai.types.responses.response_file_search_tool_call import Result
from openai.types.responses.response_function_web_search import ActionSearch, ActionSearchSource
from openai.types.responses.response_output_text import AnnotationFileCitation, AnnotationURLCitation

from fakes.responses_server import FakeResponsesServer, response_reply
from toolcrib import Gate, GroupPolicy, Identifier, Principal, Registry, Runner, RunnerSettings, Tracer, tool
from toolcrib.errors import ConfigError
from toolcrib.models.base import web_citation_id
from toolcrib.models.responses import OpenAIResponsesModel, access_filter
from toolcrib.trace.events import Event, EventKind

USER = Principal("alice", groups=frozenset({"support"}))
RAN: list[str] = []
QUOTE = "Unused parts may be returned within 30 days of delivery for a full refund."


@tool
def lookup_part(part_number: Annotated[str, Identifier()]) -> dict[str, Any]:
    """Look up a part's price by part number."""
    RAN.append(part_number)
    return {"found": True, "part_number": part_number, "price_usd": 52.0}


@pytest.fixture
def server() -> Iterator[FakeResponsesServer]:
    with FakeResponsesServer() as fake:
        yield fake


def _ask(server: FakeResponsesServer, question: str, hosted: dict[str, Any]) -> tuple[Any, list[Event]]:
    RAN.clear()
    tracers: list[Tracer] = []

    def tracer() -> Tracer:
        tracers.append(Tracer())
        return tracers[-1]

    model = OpenAIResponsesModel.from_spec("test-model", {"base_url": server.url, "backoff_s": 0.0,
                                                          "hosted_tools": hosted})
    gate = Gate(Registry([lookup_part]), GroupPolicy({"support": ["*"]}))
    with model:
        answer = Runner(model, gate, RunnerSettings(mode="loop"), tracer_factory=tracer).ask(question, USER)
    return answer, tracers[0].events


def _file_search(status: str = "completed") -> ResponseFileSearchToolCall:
    return ResponseFileSearchToolCall(
        id="fs_1", type="file_search_call", status=status, queries=["return policy unused parts"],  # type: ignore[arg-type]
        results=[Result(file_id="file-Ret123", filename="returns-policy.md", score=0.91, text=QUOTE),
                 Result(file_id="file-Ret123", filename="returns-policy.md", score=0.55,
                        text="Refunds are paid to the original payment method.")] if status == "completed" else None)


def test_file_search_results_are_cited_and_the_call_is_the_providers(server: FakeResponsesServer) -> None:
    text = "Unused parts can be returned within 30 days of delivery."
    server.queue(response_reply(text, hosted=[_file_search()], annotations=[
        AnnotationFileCitation(type="file_citation", file_id="file-Ret123", filename="returns-policy.md",
                               index=len(text))]))
    answer, events = _ask(server, "How long do I have to return an unused part?",
                          {"file_search": {"vector_store_ids": ["vs_docs"], "max_num_results": 5}})

    (request,) = server.requests
    assert request.body["tools"] == [{"type": "file_search", "vector_store_ids": ["vs_docs"],
                                      "max_num_results": 5, "filters": access_filter(["support"])}]
    assert request.body["include"] == ["file_search_call.results"]
    assert answer.outcome == "answered" and RAN == []  # the gate ran nothing: the provider searched
    assert answer.text == "Unused parts can be returned within 30 days of delivery. [file#file-Ret123]"
    (cited,) = answer.citations
    assert (cited.id, cited.kind, cited.source) == ("file#file-Ret123", "passage", "returns-policy.md")
    assert cited.snippet.startswith("Unused parts may be returned within 30 days")

    offered = next(e for e in events if e.kind == EventKind.TOOLS_OFFERED)
    # lookup_part is withheld (no part number seen yet); the hosted tool is sent all the same
    assert offered.detail["hosted"] == ["file_search"] and offered.detail["offered"] == []
    hosted = next(e for e in events if e.decided_by == "provider")
    assert (hosted.kind, hosted.tool, hosted.call_id, hosted.status) == (
        EventKind.CALL_EXECUTED, "file_search", "fs_1", "completed")
    assert hosted.arguments == {"queries": ["return policy unused parts"]}
    assert hosted.citations == ["file#file-Ret123"] and hosted.detail["hosted"] is True
    assert [r["text"] for r in hosted.detail["results"]] == [QUOTE, "Refunds are paid to the original payment method."]
    assert Event.from_dict(hosted.to_dict()) == hosted  # the trace reads back
    assert not any(e.kind == EventKind.CALL_PROPOSED for e in events)  # nothing the gate was asked


def test_a_hosted_file_search_reads_only_what_the_signed_in_principal_may(server: FakeResponsesServer) -> None:
    server.queue(*[response_reply("Returns are accepted within 30 days.")] * 4)
    _ask(server, "What is the return policy?", {"file_search": {"vector_store_ids": ["vs_docs"]}})
    asked = len(server.requests)
    configured = {"type": "eq", "key": "region", "value": "eu"}
    _ask(server, "What is the return policy?",
         {"file_search": {"vector_store_ids": ["vs_docs"], "filters": configured}})

    first, second = (server.requests[n].body["tools"][0]["filters"] for n in (0, asked))
    readable = {"type": "or", "filters": [{"type": "eq", "key": "toolcrib_public", "value": True},
                                          {"type": "eq", "key": "toolcrib_access_support", "value": True}]}
    assert first == readable  # alice's groups (from the session) and public files: nothing else
    assert second == {"type": "and", "filters": [configured, readable]}  # the workspace's own filter still holds


def test_the_access_attribute_of_a_group_is_a_valid_key_whatever_its_name() -> None:
    from toolcrib.models.responses import access_attribute

    assert access_attribute("*") == "toolcrib_public"
    assert access_attribute("hr") == "toolcrib_access_hr"
    odd = access_attribute("Finance & Legal (EMEA) " * 3)
    assert odd.startswith("toolcrib_access_h") and len(odd) <= 64 and odd != access_attribute("finance")


def test_url_citations_become_web_citations_like_the_builtin(server: FakeResponsesServer) -> None:
    url = "https://www.example.org/news/hlv-recall"
    text = "The manufacturer recalled the HLV-2205 valve on 3 March."
    search = ResponseFunctionWebSearch(
        id="ws_1", type="web_search_call", status="completed",
        action=ActionSearch(type="search", query="HLV-2205 recall",
                            sources=[ActionSearchSource(type="url", url=url)]))
    server.queue(response_reply(text, hosted=[search], annotations=[
        AnnotationURLCitation(type="url_citation", url=url, title="HLV valves recalled", start_index=0,
                              end_index=len(text))]))
    answer, events = _ask(server, "Is there news about a recall of HLV-2205?", {"web_search": {}})

    assert server.requests[0].body["tools"][-1] == {"type": "web_search"}
    assert server.requests[0].body["include"] == ["web_search_call.action.sources"]
    cid = web_citation_id(url)  # the id the web_search builtin gives the same page
    assert answer.outcome == "answered" and answer.text == f"{text} [{cid}]"
    (cited,) = answer.citations
    assert (cited.id, cited.kind, cited.source) == (cid, "web", url)
    assert cited.snippet.startswith("HLV valves recalled")
    hosted = next(e for e in events if e.decided_by == "provider")
    assert (hosted.tool, hosted.arguments) == ("web_search", {"action": "search", "query": "HLV-2205 recall"})
    assert hosted.detail["output"] == url  # the pages it consulted reach the trace


def test_a_citation_the_provider_did_not_return_is_removed(server: FakeResponsesServer) -> None:
    text = "Unused parts can be returned within 30 days [file#file-Invented9]."
    server.queue(response_reply(text, hosted=[_file_search()]))  # results, but no annotation for that file
    answer, _ = _ask(server, "How long do I have to return an unused part?",
                     {"file_search": {"vector_store_ids": ["vs_docs"]}})
    assert "file-Invented9" not in answer.text and "file#file-Invented9" not in [c.id for c in answer.citations]
    assert any("removed citation [file#file-Invented9]" in f for f in answer.flags)
    assert [c.id for c in answer.citations] == ["file#file-Ret123"]  # attached by code as the best support


def test_a_failed_hosted_search_is_recorded_and_nothing_is_cited(server: FakeResponsesServer) -> None:
    server.queue(response_reply("Returns are accepted within 30 days.", hosted=[_file_search("failed")]),
                 *[response_reply("Returns are accepted within 30 days.")] * 3)
    answer, events = _ask(server, "How long do I have to return an unused part?",
                          {"file_search": {"vector_store_ids": ["vs_docs"]}})
    failed = next(e for e in events if e.decided_by == "provider")
    assert (failed.kind, failed.error_code, failed.citations) == (EventKind.CALL_FAILED, "hosted_failed", [])
    assert answer.abstained and answer.citations == []  # no evidence: the run does not answer from memory


def test_code_interpreter_runs_on_the_provider_and_its_code_and_logs_reach_the_trace(
        server: FakeResponsesServer) -> None:
    run = ResponseCodeInterpreterToolCall(
        id="ci_1", type="code_interpreter_call", status="completed", container_id="cntr_1",
        code="print(sum([52.0, 18.5]) / 2)", outputs=[OutputLogs(type="logs", logs="35.25\n")])
    server.queue(response_reply(calls=[("lookup_part", '{"part_number": "HLV-2205"}')], hosted=[run]),
                 response_reply("HLV-2205 costs $52.00 [lookup_part#1]."))
    answer, events = _ask(server, "What does part HLV-2205 cost?", {"code_interpreter": {}, "web_search": {}})

    first = server.requests[0].body
    assert first["tools"][1:] == [{"type": "code_interpreter", "container": {"type": "auto"}}, {"type": "web_search"}]
    assert first["include"] == ["code_interpreter_call.outputs", "web_search_call.action.sources"]
    assert answer.outcome == "answered" and RAN == ["HLV-2205"]  # function calls still go through the gate
    hosted = next(e for e in events if e.decided_by == "provider")
    assert hosted.arguments == {"code": "print(sum([52.0, 18.5]) / 2)"} and hosted.detail["output"] == "35.25\n"
    assert [c.id for c in answer.citations] == ["lookup_part#1"]  # code output is not a citable source


@pytest.mark.parametrize(("hosted", "match"), [
    ({"file_search": {}}, "vector_store_ids"),
    ({"file_search": {"vector_store_ids": "vs_1"}}, "vector_store_ids"),
    ({"image_generation": {}}, "unknown hosted tool 'image_generation'"),
    ({"web_search": {"vector_store_ids": ["vs_1"]}}, "unknown option"),
    ({"web_search": "yes"}, "table of the tool's options"),
])
def test_a_bad_hosted_tools_setting_names_the_setting(hosted: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigError, match=match) as caught:
        OpenAIResponsesModel.from_spec("m", {"base_url": "http://127.0.0.1:9", "hosted_tools": hosted})
    assert "hosted_tools" in str(caught.value)


def test_the_ag_ui_stream_shows_a_hosted_call_start_to_result(server: FakeResponsesServer) -> None:
    from toolcrib.trace.agui import to_agui

    text = "Unused parts can be returned within 30 days of delivery."
    server.queue(response_reply(text, hosted=[_file_search()]))
    _, events = _ask(server, "How long do I have to return an unused part?",
                     {"file_search": {"vector_store_ids": ["vs_docs"]}})
    hosted = next(e for e in events if e.decided_by == "provider")
    stream = to_agui(hosted)
    assert [m["type"] for m in stream] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT"]
    assert stream[0]["toolCallName"] == "file_search" and '"decided_by": "provider"' in stream[-1]["content"]

"""web_search: three providers' wire formats against a loopback server, errors and timeouts as observations,
cited hits in an answer, and "I can't reach current data from here" when no provider is configured."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from tests.fakes.search_server import HITS, SearchServer, search_server

from toolcrib import GroupPolicy, Principal, Registry, Runner, ScriptedModel
from toolcrib.agent.runner import RunnerSettings
from toolcrib.cli import main
from toolcrib.errors import ToolFailed, ToolTimeout, ToolUnavailable
from toolcrib.models.base import web_citation_id
from toolcrib.tools.gate import Gate
from toolcrib.websearch import BraveSearch, SearXNG, TavilySearch, WebResults, make_web_search_tool
from toolcrib.websearch.providers import HTTPSearchProvider
from toolcrib.websearch.results import needs_current_data
from toolcrib.workspace.locate import DEMO_SOURCE

ALICE = Principal("alice", groups=frozenset({"support"}))


@pytest.fixture(scope="module")
def server() -> Iterator[SearchServer]:
    with search_server() as s:
        yield s


def _providers(server: SearchServer, timeout_s: float = 5.0) -> list[HTTPSearchProvider]:
    return [BraveSearch(f"{server.url}/brave/res/v1/web/search", api_key="brave-key", timeout_s=timeout_s),
            TavilySearch(f"{server.url}/tavily/search", api_key="tvly-key", timeout_s=timeout_s),
            SearXNG(f"{server.url}/searxng", timeout_s=timeout_s)]


def test_each_provider_reads_its_documented_json_and_sends_its_key(server: SearchServer) -> None:
    for provider in _providers(server):
        server.requests.clear()
        hits = asyncio.run(provider.search("berlin weather", 5))
        assert [(h.title, h.url, h.snippet) for h in hits] == [(h["title"], h["url"], h["text"]) for h in HITS]
        sent = server.requests[-1]
        if provider.name == "brave":
            assert sent["headers"]["X-Subscription-Token"] == "brave-key" and sent["params"]["q"] == "berlin weather"
            assert hits[0].published == "2026-06-01T08:00:00"
        elif provider.name == "tavily":
            assert sent["headers"]["Authorization"] == "Bearer tvly-key"
            assert sent["body"] == {"query": "berlin weather", "max_results": 5, "search_depth": "basic"}
        else:
            assert sent["params"] == {"q": "berlin weather", "format": "json"}
            assert "Authorization" not in sent["headers"]
    assert asyncio.run(_providers(server)[0].search("berlin", 1))[0].url == HITS[0]["url"]  # count respected


def test_errors_and_timeouts_are_controlled_tool_errors_without_internals(server: SearchServer) -> None:
    for provider in _providers(server, timeout_s=0.5):
        with pytest.raises(ToolUnavailable, match="HTTP 500"):
            asyncio.run(provider.search("boom", 3))
        with pytest.raises(ToolFailed, match="check the API key") as refused:
            asyncio.run(provider.search("denied", 3))
        assert "key" not in str(refused.value).replace("API key", "")  # the key itself is never shown
        with pytest.raises(ToolFailed, match="not a search result") as bad:
            asyncio.run(provider.search("garbage", 3))
        assert bad.value.code == "bad_response"
        with pytest.raises(ToolTimeout, match=r"within 0\.5s"):
            asyncio.run(provider.search("slow", 3))
    closed = SearXNG("http://127.0.0.1:9", timeout_s=1.0)  # nothing listens on the discard port
    with pytest.raises(ToolUnavailable, match="cannot be reached") as down:
        asyncio.run(closed.search("anything", 3))
    assert "127.0.0.1" not in down.value.message


def test_a_failing_search_is_an_observation_and_the_run_says_it_cannot_reach_current_data(
        server: SearchServer) -> None:
    tool = make_web_search_tool(SearXNG(f"{server.url}/searxng", timeout_s=0.5), timeout_s=0.5)
    gate = Gate(Registry([tool]), GroupPolicy({"support": ["*"]}))
    model = ScriptedModel([{"tool_calls": [{"name": "web_search", "arguments": {"query": "berlin weather slow"}}]},
                           "It is probably sunny.", "It is probably sunny."])
    answer = Runner(model, gate, RunnerSettings(mode="loop")).ask("What is the weather in Berlin today?", ALICE)
    assert answer.abstained and answer.text.startswith("I can't reach current data from here")
    assert "web_search (timeout)" in answer.text and "sunny" not in answer.text
    assert answer.executed[0]["status"] == "error" and answer.executed[0]["error"]["code"] == "timeout"


def test_hits_become_citations_with_url_and_title(server: SearchServer) -> None:
    tool = make_web_search_tool(SearXNG(f"{server.url}/searxng"))
    gate = Gate(Registry([tool]), GroupPolicy({"support": ["*"]}))
    first = web_citation_id(HITS[0]["url"])
    model = ScriptedModel([{"tool_calls": [{"name": "web_search", "arguments": {"query": "berlin weather"}}]},
                           f"Berlin is sunny today at 21 °C [{first}]."])
    answer = Runner(model, gate).ask("What is the weather in Berlin today?", ALICE)
    assert not answer.abstained
    cited = {c.id: c for c in answer.citations}
    assert list(cited) == [first]
    assert cited[first].kind == "web" and cited[first].source == HITS[0]["url"]
    assert cited[first].snippet.startswith(HITS[0]["title"])
    assert tool.trusted is False  # content others wrote: never vouches for a write's argument
    data = json.loads(json.dumps(asyncio.run(tool.fn(query="berlin"))))
    results = WebResults.from_payload(data)
    assert results is not None and results.provider == "searxng" and results.fetched_at.endswith("+00:00")
    assert [s.trusted for s, _ in tool.sources(data)] == [False, False]


def test_current_data_questions_are_recognised_narrowly() -> None:
    assert needs_current_data("What's the weather in Berlin today?")
    assert needs_current_data("Any news about Kestrel Instruments?")
    assert not needs_current_data("What is the current stock of HLV-2205?")  # the workspace's own records
    assert not needs_current_data("What does part F2 cost today?")


# -- the demo workspace through `toolcrib` --------------------------------------------------------------


def _demo(tmp_path: Path, web_search: str | None) -> Path:
    ws = tmp_path / "demo"
    shutil.copytree(DEMO_SOURCE, ws, ignore=shutil.ignore_patterns(".toolcrib", "__pycache__", "*.sqlite"))
    config = ws / "toolcrib.toml"
    text = config.read_text(encoding="utf-8")
    for old in ('builtin = ["vector_search", "sql_query"', '"vector_search", "sql_query"]\napprove'):
        text = text.replace(old, old.replace('"sql_query"', '"sql_query", "web_search"'))
    text = text.replace("search_when_nothing_found = true", "search_when_nothing_found = false")
    if web_search:
        text += f"\n[web_search]\n{web_search}\n"
    config.write_text(text, encoding="utf-8")
    return ws


def _script(tmp_path: Path, replies: list[Any]) -> str:
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(replies, allow_unicode=True), encoding="utf-8")
    return f"scripted:{path}"


def _ask(ws: Path, question: str, model: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["ask", question, "--model", model, "--workspace", str(ws), "--json"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    answer: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def test_toolcrib_ask_on_the_demo_returns_cited_results_from_a_local_searxng(
        tmp_path: Path, server: SearchServer) -> None:
    ws = _demo(tmp_path, f'provider = "searxng"\nendpoint = "{server.url}/searxng"\ntimeout_s = 3')
    tools = CliRunner().invoke(main, ["tools", "--workspace", str(ws)]).output
    assert "web_search" in tools.split("Not offered here:")[0]
    first = web_citation_id(HITS[0]["url"])
    model = _script(tmp_path, [{"tool_calls": [{"name": "web_search", "arguments": {"query": "Berlin weather"}}]},
                               f"Berlin is sunny today, 21 °C [{first}]."])
    answer = _ask(ws, "What is the weather in Berlin today?", model)
    assert answer["outcome"] == "answered" and "21 °C" in answer["text"]
    assert [(c["id"], c["kind"], c["source"]) for c in answer["citations"]] == [(first, "web", HITS[0]["url"])]
    shown = CliRunner().invoke(main, ["ask", "What is the weather in Berlin today?", "--model", model,
                                      "--workspace", str(ws)]).output
    assert f"[{first}] {HITS[0]['url']}: {HITS[0]['title']}" in shown


def test_without_a_provider_web_search_is_not_offered_and_says_why(tmp_path: Path, monkeypatch: Any) -> None:
    ws = _demo(tmp_path, None)
    tools = CliRunner().invoke(main, ["tools", "--workspace", str(ws)])
    assert tools.exit_code == 0, tools.output
    offered, _, missing = tools.output.partition("Not offered here:")
    assert "web_search" not in offered and "no search provider is configured" in missing
    model = _script(tmp_path, ["It is sunny in Berlin.", "It is sunny in Berlin."])
    answer = _ask(ws, "What is the weather in Berlin today?", model)
    assert answer["abstained"] and answer["text"].startswith("I can't reach current data from here")
    assert "sunny" not in answer["text"]
    ws2 = _demo(tmp_path / "keyed", 'provider = "brave"\nkey_env = "TOOLCRIB_TEST_BRAVE_KEY"')
    monkeypatch.delenv("TOOLCRIB_TEST_BRAVE_KEY", raising=False)
    missing = CliRunner().invoke(main, ["tools", "--workspace", str(ws2)]).output.partition("Not offered here:")[2]
    assert "TOOLCRIB_TEST_BRAVE_KEY" in missing
    monkeypatch.setenv("TOOLCRIB_TEST_BRAVE_KEY", "secret-value")
    offered = CliRunner().invoke(main, ["tools", "--workspace", str(ws2)]).output.partition("Not offered here:")[0]
    assert "web_search" in offered and "secret-value" not in offered


def test_a_searxng_provider_needs_its_endpoint(tmp_path: Path) -> None:
    ws = _demo(tmp_path, 'provider = "searxng"')
    result = CliRunner().invoke(main, ["tools", "--workspace", str(ws)])
    assert result.exit_code == 2 and "web_search" in result.output and "endpoint" in result.output

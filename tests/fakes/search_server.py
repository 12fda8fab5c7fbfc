"""A loopback HTTP server that speaks three search APIs' documented JSON: Brave Search
(``GET /brave/res/v1/web/search``), Tavily (``POST /tavily/search``) and SearXNG
(``GET /searxng/search?format=json``). A query holding ``boom`` answers HTTP 500, ``denied`` 401,
``garbage`` a body that is not JSON, ``slow`` answers after ``SLOW_S`` seconds, ``nothing`` no hits."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from .serving import in_thread

SLOW_S = 2.0

HITS = [
    {"title": "Berlin weather today", "url": "https://weather.example/berlin",
     "text": "Berlin today: sunny, 21 °C, light wind from the west."},
    {"title": "Berlin forecast", "url": "https://forecast.example/berlin/week",
     "text": "The week ahead in Berlin: showers on Thursday, 17 to 22 °C."},
]


def _brave(hits: list[dict[str, str]]) -> dict[str, Any]:
    return {"type": "search", "query": {"original": "q"},
            "web": {"type": "search", "results": [
                {"type": "search_result", "title": h["title"], "url": h["url"], "description": h["text"],
                 "page_age": "2026-06-01T08:00:00", "age": "2 hours ago", "language": "en"} for h in hits]}}


def _tavily(query: str, hits: list[dict[str, str]]) -> dict[str, Any]:
    return {"query": query, "answer": None, "images": [], "follow_up_questions": None, "response_time": 0.42,
            "results": [{"title": h["title"], "url": h["url"], "content": h["text"], "score": 0.9 - i / 10,
                         "raw_content": None, "published_date": "2026-06-01"} for i, h in enumerate(hits)]}


def _searxng(query: str, hits: list[dict[str, str]]) -> dict[str, Any]:
    return {"query": query, "number_of_results": len(hits), "answers": [], "corrections": [], "infoboxes": [],
            "suggestions": [], "unresponsive_engines": [],
            "results": [{"url": h["url"], "title": h["title"], "content": h["text"], "engine": "duckduckgo",
                         "engines": ["duckduckgo"], "parsed_url": ["https", h["url"].split("/")[2], "", "", "", ""],
                         "template": "default.html", "positions": [i + 1], "score": 1.0, "category": "general",
                         "publishedDate": None} for i, h in enumerate(hits)]}


class SearchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: SearchServer

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def _answer(self) -> None:
        parsed = urlparse(self.path)
        params = {k: v[0] for k, v in parse_qs(parsed.query).items()}
        body: dict[str, Any] = {}
        if self.command == "POST":
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
        query = str(params.get("q") or body.get("query") or "")
        self.server.requests.append({"method": self.command, "path": parsed.path, "params": params, "body": body,
                                     "headers": dict(self.headers)})
        if "slow" in query:
            time.sleep(SLOW_S)
        if "boom" in query:
            return self._send(500, b'{"error": "internal"}')
        if "denied" in query:
            return self._send(401, b'{"detail": "invalid api key"}')
        if "garbage" in query:
            return self._send(200, b"<html>not json</html>", "text/html")
        hits = [] if "nothing" in query else HITS
        if parsed.path == "/brave/res/v1/web/search":
            payload = _brave(hits)
        elif parsed.path == "/tavily/search" and self.command == "POST":
            payload = _tavily(query, hits)
        elif parsed.path == "/searxng/search" and params.get("format") == "json":
            payload = _searxng(query, hits)
        else:
            return self._send(404, b'{"error": "not found"}')
        self._send(200, json.dumps(payload).encode())

    def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            pass


@contextmanager
def search_server() -> Iterator[SearchServer]:
    with in_thread(SearchServer()) as server:
        yield server

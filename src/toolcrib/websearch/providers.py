"""Search providers: the ``SearchProvider`` seam and adapters for Brave Search, Tavily and SearXNG.

Each adapter speaks its API's documented JSON and returns ``SearchHit``s; every failure (HTTP error,
timeout, unreachable host, a body that is not the documented JSON) becomes a ``ToolFailed`` (or
``ToolTimeout``) whose message names the provider and the status, never the key, the endpoint's
host or a stack trace. Keys are read from the environment variable the workspace names, when the
workspace opens, and held in memory only.

- Brave Search API: ``GET {endpoint}?q=&count=`` with ``X-Subscription-Token``; hits in
  ``web.results[]`` (``title``, ``url``, ``description``, ``page_age``/``age``).
- Tavily: ``POST {endpoint}`` with ``Authorization: Bearer tvly-...`` and ``{"query", "max_results",
  "search_depth": "basic"}``; hits in ``results[]`` (``title``, ``url``, ``content``, ``published_date``).
- SearXNG (self-hosted): ``GET {endpoint}/search?q=&format=json`` (the instance must enable the json
  format in ``search.formats``); hits in ``results[]`` (``title``, ``url``, ``content``, ``publishedDate``).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

import httpx

from toolcrib.errors import ToolFailed, ToolTimeout, ToolUnavailable
from toolcrib.websearch.results import SearchHit

log = logging.getLogger(__name__)

_SNIPPET_CHARS = 600


class SearchProvider(ABC):
    """A web search API. ``search`` is the one method to implement; ``aclose`` releases connections."""

    name: str = "search"

    @abstractmethod
    async def search(self, query: str, count: int) -> list[SearchHit]:
        """Up to ``count`` hits for ``query``. Raises ``ToolFailed``/``ToolTimeout`` on any failure."""

    async def aclose(self) -> None:
        """Release what the provider holds."""


class HTTPSearchProvider(SearchProvider):
    """A provider reached over HTTP with a per-call timeout; subclasses say how to ask and how to read."""

    default_endpoint: str = ""

    def __init__(self, endpoint: str | None = None, *, api_key: str | None = None, timeout_s: float = 8.0,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.endpoint = (endpoint or self.default_endpoint).rstrip("/")
        if not self.endpoint:
            raise ValueError(f"{self.name} needs an endpoint")
        self._key = api_key
        self.timeout_s = timeout_s
        self._transport = transport

    @abstractmethod
    def request(self, query: str, count: int) -> httpx.Request:
        """The HTTP request for one search."""

    @abstractmethod
    def hits(self, body: Any) -> list[SearchHit]:
        """The hits in a decoded JSON body; raises ``KeyError``/``TypeError``/``ValueError`` if it is not
        the documented shape."""

    async def search(self, query: str, count: int) -> list[SearchHit]:
        request = self.request(query, count)
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, transport=self._transport,
                                         follow_redirects=False) as client:
                response = await client.send(request)
        except httpx.TimeoutException:
            raise ToolTimeout(f"{self.name} did not answer within {self.timeout_s:g}s") from None
        except httpx.HTTPError as exc:
            log.warning("%s search failed: %s: %s", self.name, type(exc).__name__, exc)
            raise ToolUnavailable(f"{self.name} cannot be reached right now",
                                  internal=f"{type(exc).__name__}: {exc}") from None
        if response.status_code >= 400:
            raise _status_error(self.name, response)
        try:
            found = self.hits(response.json())
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ToolFailed(f"{self.name} answered with something that is not a search result",
                             code="bad_response", internal=f"{type(exc).__name__}: {exc}") from None
        return found[:count]


def _status_error(name: str, response: httpx.Response) -> ToolFailed:
    status = response.status_code
    if status in (401, 403):
        return ToolFailed(f"{name} refused the request (HTTP {status}): check the API key the workspace names",
                          code="provider_refused")
    if status == 429:
        wait = response.headers.get("retry-after")
        return ToolUnavailable(f"{name} is rate-limiting this workspace (HTTP 429)"
                               + (f"; retry after {wait}s" if wait else ""))
    return ToolUnavailable(f"{name} answered HTTP {status}")


def _text(value: Any) -> str:
    return " ".join(str(value or "").split())[:_SNIPPET_CHARS]


def _need(value: Any, kind: type) -> Any:
    if not isinstance(value, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


class BraveSearch(HTTPSearchProvider):
    """Brave Search API (web search endpoint)."""

    name = "brave"
    default_endpoint = "https://api.search.brave.com/res/v1/web/search"

    def request(self, query: str, count: int) -> httpx.Request:
        return httpx.Request("GET", self.endpoint, params={"q": query, "count": min(count, 20)},
                             headers={"Accept": "application/json", "X-Subscription-Token": self._key or ""})

    def hits(self, body: Any) -> list[SearchHit]:
        web = _need(body, dict).get("web") or {}
        return [SearchHit(_text(r.get("title")), str(r["url"]), _text(r.get("description")),
                          str(r.get("page_age") or r.get("age") or ""))
                for r in _need(_need(web, dict).get("results") or [], list) if isinstance(r, dict) and r.get("url")]


class TavilySearch(HTTPSearchProvider):
    """Tavily search API."""

    name = "tavily"
    default_endpoint = "https://api.tavily.com/search"

    def request(self, query: str, count: int) -> httpx.Request:
        return httpx.Request("POST", self.endpoint, json={"query": query, "max_results": min(count, 20),
                                                          "search_depth": "basic"},
                             headers={"Authorization": f"Bearer {self._key or ''}", "Accept": "application/json"})

    def hits(self, body: Any) -> list[SearchHit]:
        return [SearchHit(_text(r.get("title")), str(r["url"]), _text(r.get("content")),
                          str(r.get("published_date") or ""))
                for r in _need(_need(body, dict)["results"], list) if isinstance(r, dict) and r.get("url")]


class SearXNG(HTTPSearchProvider):
    """A SearXNG instance's JSON API (self-hosted; a key is optional, sent as a bearer token)."""

    name = "searxng"

    def request(self, query: str, count: int) -> httpx.Request:
        headers = {"Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return httpx.Request("GET", f"{self.endpoint}/search", params={"q": query, "format": "json"},
                             headers=headers)

    def hits(self, body: Any) -> list[SearchHit]:
        return [SearchHit(_text(r.get("title")), str(r["url"]), _text(r.get("content")),
                          str(r.get("publishedDate") or ""))
                for r in _need(_need(body, dict)["results"], list) if isinstance(r, dict) and r.get("url")]


PROVIDERS: dict[str, type[HTTPSearchProvider]] = {"brave": BraveSearch, "tavily": TavilySearch, "searxng": SearXNG}
DEFAULT_KEY_ENV = {"brave": "BRAVE_SEARCH_API_KEY", "tavily": "TAVILY_API_KEY", "searxng": None}

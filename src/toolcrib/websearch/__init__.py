"""Web search: the ``SearchProvider`` seam, adapters (Brave Search, Tavily, SearXNG), the typed result
(``WebResults``, each hit citable) and the ``web_search`` tool. The providers (and httpx) load on first use,
so reading a result back (the evidence ledger) costs no HTTP client."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from toolcrib.websearch.results import SearchHit, WebResults, needs_current_data

if TYPE_CHECKING:
    from toolcrib.websearch.providers import (
        PROVIDERS,
        BraveSearch,
        HTTPSearchProvider,
        SearchProvider,
        SearXNG,
        TavilySearch,
    )
    from toolcrib.websearch.tool import make_web_search_tool

_LAZY = {"PROVIDERS": "providers", "BraveSearch": "providers", "HTTPSearchProvider": "providers",
         "SearchProvider": "providers", "SearXNG": "providers", "TavilySearch": "providers",
         "make_web_search_tool": "tool"}

__all__ = ["PROVIDERS", "BraveSearch", "HTTPSearchProvider", "SearXNG", "SearchHit", "SearchProvider",
           "TavilySearch", "WebResults", "make_web_search_tool", "needs_current_data"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f"toolcrib.websearch.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'toolcrib.websearch' has no attribute {name!r}")

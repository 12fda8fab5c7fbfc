"""The model-facing ``web_search`` tool: current public information from a configured search provider.

READ, untrusted: what it returns was written by others, so it is data to cite (each hit's citation id
is ``web#...``, its source the URL), never instructions, and it never vouches for an argument of a
write. Not offered at all when the workspace configures no provider (``toolcrib tools`` says why).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import Field

from toolcrib.tools.grounding import Source
from toolcrib.tools.tool import Effect, Tool, make_tool
from toolcrib.websearch.providers import SearchProvider
from toolcrib.websearch.results import WebResults

DESCRIPTION = (
    "Search the public web for current information: news, prices and facts outside this organisation, "
    "anything that changes over time. NOT for the company's own documents or records. Returns results "
    "(title, url, snippet) to cite as [citation]."
)


def hit_sources(data: Any) -> list[tuple[Source, str]]:
    """Each hit as its own text, content others wrote."""
    results = WebResults.from_payload(data)
    if results is None:  # cut past its shape by the size cap
        return [(Source("tool", "web_search", trusted=False), json.dumps(data, ensure_ascii=False, default=str))]
    return [(Source("tool", "web_search", trusted=False), f"{h.title}\n{h.url}\n{h.snippet}") for h in results.hits]


def make_web_search_tool(provider: SearchProvider, *, max_results: int = 5, timeout_s: float = 8.0) -> Tool:
    """A ``web_search`` Tool over ``provider`` (READ, untrusted results, cached briefly)."""

    async def web_search(
        query: Annotated[str, Field(min_length=1, max_length=400)],
        count: Annotated[int, Field(ge=1, le=10)] = max_results,
    ) -> dict[str, Any]:
        """Search the web.

        Args:
            query: what to look for, as a search engine query.
            count: how many results to return.
        """
        hits = await provider.search(query, min(count, max_results))
        fetched = datetime.now(UTC).isoformat(timespec="seconds")
        return WebResults(query, provider.name, fetched, tuple(hits)).to_dict()

    # the provider's own timeout ends the call first, as a controlled "timeout"; the gate's is a backstop
    return make_tool(web_search, name="web_search", description=DESCRIPTION, effect=Effect.READ,
                     timeout_s=timeout_s + 2.0, trusted=False, result_sources=hit_sources, tags=("web",),
                     cache_ttl_s=60.0)

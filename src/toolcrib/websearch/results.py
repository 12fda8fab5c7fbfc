"""What a web search found, typed both ways, and which questions need current public data.

The ``web_search`` tool writes ``WebResults.to_dict()`` to the model; the runner's evidence ledger reads
it back with ``WebResults.from_payload`` and makes each hit citable by its id (``web#<hash of its URL>``),
with its URL as the citation's source. Hits are content others wrote: untrusted data, never instructions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from toolcrib.models.base import web_citation_id

KIND = "web_results"  # the marker that tells a web search's result from any other tool's


@dataclass(frozen=True)
class SearchHit:
    """One result of a web search, as the provider returned it."""

    title: str
    url: str
    snippet: str = ""
    published: str = ""  # as the provider gives it (a date, or "2 days ago"); "" when it does not

    @property
    def citation(self) -> str:
        return web_citation_id(self.url)

    def to_dict(self) -> dict[str, str]:
        out = {"citation": self.citation, "title": self.title, "url": self.url, "snippet": self.snippet}
        if self.published:
            out["published"] = self.published
        return out


@dataclass(frozen=True)
class WebResults:
    """The hits one search returned, from which provider, and when they were fetched (UTC, ISO 8601)."""

    query: str
    provider: str
    fetched_at: str
    hits: tuple[SearchHit, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"kind": KIND, "query": self.query, "provider": self.provider, "fetched_at": self.fetched_at,
                "found": bool(self.hits), "results": [h.to_dict() for h in self.hits]}

    @classmethod
    def from_payload(cls, data: Any) -> WebResults | None:
        """Read a tool result's ``data`` back; None when it is not a web search's result. A result cut
        by the size cap still reads (fewer or shorter hits)."""
        if not isinstance(data, Mapping) or data.get("kind") != KIND or not isinstance(data.get("results"), list):
            return None
        hits = tuple(SearchHit(str(r.get("title") or ""), str(r["url"]), str(r.get("snippet") or ""),
                               str(r.get("published") or ""))
                     for r in data["results"] if isinstance(r, Mapping) and isinstance(r.get("url"), str))
        return cls(str(data.get("query") or ""), str(data.get("provider") or ""), str(data.get("fetched_at") or ""),
                   hits)


# Questions about the world as it is now, which no workspace document or database answers: news,
# weather, markets, results, releases, or an explicit ask to look on the web. Deliberately narrow:
# "today" or "current" alone also ask about the workspace's own records ("current stock of G7").
_CURRENT_PUBLIC = re.compile(
    r"\b(news|headlines?|weather|forecast|exchange rates?|share price|stock market|stock exchange|"
    r"bitcoin|crypto(?:currency)?|election|who won|final score|scores? of|live score|traffic|"
    r"latest (?:version|release)|released (?:today|this week|yesterday)|"
    r"(?:on|from|search) the (?:web|internet)|online|google|trending|current events)\b", re.I)


def needs_current_data(question: str) -> bool:
    """Whether ``question`` asks for current public information (news, weather, markets, the web)."""
    return bool(_CURRENT_PUBLIC.search(question))

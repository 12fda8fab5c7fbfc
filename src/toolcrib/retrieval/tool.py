"""The model-facing ``vector_search`` tool: hybrid retrieval over the documents this user may read."""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

from pydantic import Field

from toolcrib.errors import ToolFailed
from toolcrib.retrieval.evidence import Evidence
from toolcrib.tools.grounding import Source
from toolcrib.tools.tool import Effect, Tool, ToolContext, make_tool

log = logging.getLogger(__name__)

RETRIEVER_RESOURCE = "retriever"
"""The key of the ``HybridRetriever`` in ``ToolContext.resources``."""


def _vector_search(
    query: str,
    top_k: Annotated[int, Field(ge=1, le=20)] = 5,
    *,
    ctx: ToolContext,
) -> dict[str, Any]:
    """Search the company documents (policies, contracts and their clauses, guides, manuals, FAQs, handbooks).

    Use it for any question about what a document says: a policy, a rule, a procedure, a clause, a
    penalty, a limit, a time window, a fee or a version. NOT for counts or totals over records.
    Returns passages to cite as [citation].

    Args:
        query: what to look for, in the user's words; include identifiers and clause numbers exactly as written.
        top_k: how many passages to return (at least the workspace's retrieval.top_k).
    """
    retriever = ctx.resources.get(RETRIEVER_RESOURCE)
    if retriever is None:
        raise ToolFailed("document search is not configured in this workspace")
    try:
        evidence = retriever.retrieve(query, ctx.principal.groups, max(top_k, getattr(retriever, "top_k", 1)))
    except Exception as exc:  # an index or embedder failure: the operator gets the reason in the log,
        # the model and the user get no internals (paths, SQL, hosts)
        log.error("vector_search failed (trace %s): %s: %s", ctx.trace_id, type(exc).__name__, exc)
        raise ToolFailed("document search is unavailable right now") from None
    result: dict[str, Any] = evidence.to_dict()
    return result


def passage_sources(data: Any) -> list[tuple[Source, str]]:
    """Each passage of a search result as its own text, from its document (with the document's trust)."""
    evidence = Evidence.from_payload(data)
    if evidence is None:  # cut past its shape by the size cap: which documents it holds is unknown
        return [(Source("tool", "vector_search", trusted=False), json.dumps(data, ensure_ascii=False, default=str))]
    return [(Source("document", p.doc_id, p.trusted), f"{p.title}\n{p.section}\n{p.text}") for p in evidence.passages]


def make_vector_search_tool() -> Tool:
    """A fresh ``vector_search`` Tool (READ: runs without approval, may run in parallel, cacheable)."""
    return make_tool(_vector_search, name="vector_search", effect=Effect.READ, timeout_s=15.0,
                     tags=("retrieval",), result_sources=passage_sources)


vector_search = make_vector_search_tool()

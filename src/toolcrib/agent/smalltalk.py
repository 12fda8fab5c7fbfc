"""Small talk: a greeting, thanks or goodbye carries no question to look up, so code answers it at
once instead of sending it through a tool call and an abstention. What the assistant can help with is
said from the workspace's own tools, never from a fixed list."""

from __future__ import annotations

from collections.abc import Sequence

from toolcrib.agent.request import Request
from toolcrib.tools.tool import Tool

_REPLIES = {
    "greeting": "Hello! I'm the assistant of {name}. Ask me about its documents and data{topics}: I answer "
                "from them and cite what I used.",
    "thanks": "You're welcome. Ask me anything else about {name}'s documents and data.",
    "goodbye": "Goodbye.",
}
_TOPICS = 4


def small_talk_reply(request: Request, name: str, tools: Sequence[Tool] = ()) -> str | None:
    """Code's reply to a request that is only a greeting, thanks or goodbye, naming what the offered
    ``tools`` read (their summaries); None for anything else (a greeting followed by a question is a
    question)."""
    if request.small_talk is None:
        return None
    topics = [t.summary.rstrip(".") for t in tools if t.summary][:_TOPICS]
    said = f" (for example: {'; '.join(t[:1].lower() + t[1:] for t in topics)})" if topics else ""
    return _REPLIES[request.small_talk].format(name=name, topics=said)

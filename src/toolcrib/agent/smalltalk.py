"""Small talk: a greeting, thanks or goodbye carries no question to look up, so code answers it at
once instead of sending it through a tool call and a 20-second abstention."""

from __future__ import annotations

import re

_SMALL_TALK = re.compile(
    r"^\s*(?:(?P<greeting>hi|hello|hey|hiya|howdy|greetings|good\s+(?:morning|afternoon|evening|day))"
    r"|(?P<thanks>thanks?|thank\s+you|thx|cheers|much\s+appreciated|great,?\s+thanks?)"
    r"|(?P<goodbye>bye|goodbye|see\s+you(?:\s+later)?|have\s+a\s+(?:good|nice)\s+(?:day|one)))"
    r"(?:\s+(?:there|again|all|everyone|so\s+much|very\s+much|a\s+lot))?"
    r"(?:[\s,!.]*how\s+are\s+you(?:\s+doing)?(?:\s+today)?)?"
    r"[\s!.,:;)?]*$", re.IGNORECASE)

_REPLIES = {
    "greeting": "Hello! I'm the assistant of {name}. Ask me about its documents and data (orders, parts, "
                "stock, policies, contracts...): I answer from them and cite what I used.",
    "thanks": "You're welcome. Ask me anything else about {name}'s documents and data.",
    "goodbye": "Goodbye.",
}


def small_talk_reply(message: str, name: str) -> str | None:
    """Code's reply to a message that is only a greeting, thanks or goodbye; None for anything else
    (a greeting followed by a question is a question)."""
    match = _SMALL_TALK.match(message)
    if match is None or match.lastgroup is None:
        return None
    return _REPLIES[match.lastgroup].format(name=name)

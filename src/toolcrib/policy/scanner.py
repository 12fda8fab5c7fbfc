"""Flags instruction-like text in untrusted content (documents, tool results) aimed at the model.

This is a tripwire, not a wall. ``PatternScanner`` matches a handful of documented phrasings of
prompt injection; paraphrases, other languages, encodings and images get past it, and ordinary
text that quotes such phrases is flagged. A flag lowers the passage's trust and is logged and
traced; it never decides anything on its own. What protects the user is structural: nothing a
passage says can grant a permission, choose the principal, or run a WRITE/ACTUATE call without a
policy decision and a person's approval bound to the exact call.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Flag:
    """One suspicious span: what kind of pattern it matched and the text around it."""

    kind: str
    excerpt: str


@runtime_checkable
class Scanner(Protocol):
    """Anything that flags untrusted text (a pattern list, a classifier model)."""

    def scan(self, text: str) -> list[Flag]: ...


_I = re.IGNORECASE | re.MULTILINE
DEFAULT_PATTERNS: tuple[tuple[str, str], ...] = (
    # "ignore all previous instructions", "disregard the above rules", "forget your instructions"
    ("override", r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|my|these|those)\s+)*"
                 r"(?:(?:previous|prior|above|earlier|preceding|system|original)\s+)?"
                 r"(?:instructions?|rules|prompts?|guidelines|directions|directives)\b"
                 r"|\b(?:ignore|disregard)\s+(?:everything|all)\s+(?:(?:written|said)\s+)?(?:above|before)\b"),
    ("role_change", r"\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b|\bact\s+as\s+(?:an?\s+)?"
                    r"(?:admin|administrator|root|developer|system)\b|\bdeveloper\s+mode\b"),
    ("system_prompt", r"\b(?:system|hidden|original)\s+prompt\b|\bnew\s+instructions?\s*:"),
    ("tool_request", r"\b(?:call|invoke|run|use|execute)\s+(?:the\s+)?(?:\w+\s+)?"
                     r"(?:tool|function)\b|\bcall\s+\w+\s*\("),
    ("tool_syntax", r"</?tool_call>|</?function_call>|<\|(?:tool|python_tag|plugin)[^|]*\|>"
                    r"|\{\s*\"(?:name|tool|function)\"\s*:\s*\"\w+\"\s*,\s*\"(?:arguments|parameters|args)\""),
    ("exfiltration", r"\b(?:send|email|post|forward|upload|reveal|print|share)\b[^.\n]{0,60}?"
                     r"\b(?:passwords?|credentials?|api[\s_-]?keys?|secrets?|tokens?|ssh\s+keys?)\b"),
    ("role_marker", r"^\s*(?:system|assistant|developer)\s*:|^\s*#{2,}\s*(?:system|instructions?)\b"
                    r"|<\|im_start\|>|<\|(?:system|assistant|user)\|>|\[/?INST\]|<</?SYS>>"),
    ("hidden_text", "[\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]|[\U000e0000-\U000e007f]"),
)


class PatternScanner:
    """Regex tripwire over ``DEFAULT_PATTERNS`` (kind, regex) plus any ``extra`` you pass."""

    def __init__(self, extra: Iterable[tuple[str, str]] = (), *, context: int = 30,
                 max_flags: int = 20) -> None:
        self.patterns = [(kind, re.compile(rx, _I)) for kind, rx in (*DEFAULT_PATTERNS, *extra)]
        self.context = context
        self.max_flags = max_flags

    def scan(self, text: str) -> list[Flag]:
        flags: list[Flag] = []
        for kind, pattern in self.patterns:
            for m in pattern.finditer(text):
                start, end = max(0, m.start() - self.context), min(len(text), m.end() + self.context)
                excerpt = text[start:end]
                if kind == "hidden_text":  # make the invisible visible in logs
                    excerpt = excerpt.encode("unicode_escape").decode("ascii")
                flags.append(Flag(kind, " ".join(excerpt.split())))
                if len(flags) >= self.max_flags:
                    return flags
                if kind == "hidden_text":
                    break  # one flag says enough; a long run of invisibles would flood the log
        return flags

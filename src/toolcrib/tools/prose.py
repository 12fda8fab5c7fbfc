"""A result's record and its prose: which texts of a tool's result a system wrote and which someone did.

Ids, names, amounts, dates and short labels are a system's record; a message body, a review, a file's
text or a web page (four words or more) was written by someone, whoever that was. A tool that did not
declare its trust is trusted for its record only (``Tool.sources``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

# Built once: json.dumps with options builds a new encoder on every call.
TEXT = json.JSONEncoder(ensure_ascii=False, default=str)
"""A value as JSON text, as results are shown (non-ASCII kept, anything else as ``str``)."""


def is_prose(text: str) -> bool:
    """Whether ``text`` reads as prose: four words or more. Ids, names, amounts, dates and short labels
    are a system's record; a message body, a review, a file's text or a web page is written by someone.
    (A split that stops at the fourth word: it runs on every READ result of an undeclared tool.)"""
    return len(text.split(None, 3)) > 3


def holds_prose(value: Any) -> bool:
    """Whether a string in ``value`` reads as prose (``is_prose``, inlined in the loop). The exact
    types a JSON result is made of are told apart first: an ``isinstance`` against ``Mapping`` goes
    through the ABC machinery, which cost more than the rest of the test on a small result."""
    kind = type(value)
    if kind is str:
        return is_prose(value)
    if kind is dict:
        items: Any = value.values()
    elif kind is list or kind is tuple or isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, Mapping):
        items = value.values()
    else:
        return False
    for item in items:
        kind = type(item)
        if kind is str:
            if len(item.split(None, 3)) > 3:
                return True
        elif kind in _SCALAR_KINDS:
            continue
        elif isinstance(item, (Mapping, list, tuple)) and holds_prose(item):
            return True
    return False


_SCALAR_KINDS = frozenset({int, float, bool, type(None)})


def split_prose(data: Any) -> tuple[list[str], list[str]]:
    """The scalar values of a result: (the record, the strings that read as prose)."""
    record: list[str] = []
    prose: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, Mapping):
            for item in value.values():
                walk(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            (prose if is_prose(value) else record).append(value)
        elif value is not None:
            record.append(TEXT.encode(value))

    walk(data)
    return record, prose


def split_fields(data: Any, fields: frozenset[str]) -> tuple[list[str], list[str]]:
    """The scalar values of a structured result: (those outside ``fields``, those inside them)."""
    record: list[str] = []
    others: list[str] = []

    def walk(value: Any, theirs: bool) -> None:
        if isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, theirs or key in fields)
        elif isinstance(value, (list, tuple)):
            for item in value:
                walk(item, theirs)
        elif value is not None:
            (others if theirs else record).append(value if isinstance(value, str) else TEXT.encode(value))

    walk(data, False)
    return record, others

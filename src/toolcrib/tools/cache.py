"""A TTL cache for READ results, keyed by tool, principal and canonical arguments."""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from typing import Any

from toolcrib.policy.principal import Principal

# built once: json.dumps with options builds an encoder on every call (a READ call's key is made every call)
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str)


def cache_key(tool: str, principal: Principal, arguments: dict[str, Any]) -> str:
    # the principal is part of the key: two users may be allowed to see different rows
    args = _CANONICAL.encode(arguments)
    return f"{tool}\x1f{principal.tenant}\x1f{principal.user_id}\x1f{args}"


class ResultCache:
    """Bounded, thread-safe, monotonic-clock TTL cache."""

    def __init__(self, max_entries: int = 1024) -> None:
        self.max_entries = max_entries
        self._items: OrderedDict[str, tuple[float, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Any | None:
        with self._lock:
            item = self._items.get(key)
            if item is None:
                return None
            expires, value = item
            if expires < time.monotonic():
                del self._items[key]
                return None
            self._items.move_to_end(key)
            return value

    def put(self, key: str, value: Any, ttl_s: float) -> None:
        if ttl_s <= 0:
            return
        with self._lock:
            self._items[key] = (time.monotonic() + ttl_s, value)
            self._items.move_to_end(key)
            while len(self._items) > self.max_entries:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

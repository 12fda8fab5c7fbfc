"""Pinned MCP tool definitions: a foreign tool is used as it was first seen, or as an operator trusted it.

On first use each tool's definition (name, description, input schema) is hashed and stored under the
workspace state folder. A definition that later differs (a "rug pull": the same name now describes
or accepts something else) disables that tool until an operator runs ``toolcrib mcp trust NAME``,
which shows the difference and stores the new pins. A description the scanner flags is never pinned
on first use: only an operator can trust it.
"""

from __future__ import annotations

import contextlib
import difflib
import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from toolcrib.policy.canonical import canonical_json, sha256_hex

PinnedBy = Literal["first use", "operator"]


def definition_of(name: str, description: str, input_schema: Mapping[str, Any]) -> dict[str, Any]:
    """What a pin covers: the tool as its server describes it to a model."""
    return {"name": name, "description": description, "input_schema": dict(input_schema)}


def definition_hash(definition: Mapping[str, Any]) -> str:
    return sha256_hex(canonical_json(dict(definition)))


@dataclass(frozen=True)
class Pin:
    hash: str
    definition: dict[str, Any]
    pinned_at: float
    by: PinnedBy

    def to_dict(self) -> dict[str, Any]:
        return {"hash": self.hash, "definition": self.definition, "pinned_at": self.pinned_at, "by": self.by}

    @classmethod
    def of(cls, definition: Mapping[str, Any], by: PinnedBy) -> Pin:
        return cls(definition_hash(definition), dict(definition), time.time(), by)


class PinStore:
    """Pins per server and tool, in one JSON file (written whole, atomically, under a file lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> dict[str, dict[str, dict[str, Any]]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        return data if isinstance(data, dict) else {}

    def pins(self, server: str) -> dict[str, Pin]:
        out: dict[str, Pin] = {}
        for tool, raw in self._read().get(server, {}).items():
            with contextlib.suppress(KeyError, TypeError):
                out[tool] = Pin(str(raw["hash"]), dict(raw["definition"]), float(raw["pinned_at"]),
                                "operator" if raw.get("by") == "operator" else "first use")
        return out

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, dict[str, Any]]]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.with_suffix(".lock").open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                data = self._read()
                yield data
                tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
                tmp.replace(self.path)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def add(self, server: str, pins: Mapping[str, Pin]) -> None:
        """Pin tools seen for the first time; an existing pin is never replaced here."""
        if not pins:
            return
        with self._locked() as data:
            held = data.setdefault(server, {})
            for tool, pin in pins.items():
                held.setdefault(tool, pin.to_dict())

    def replace(self, server: str, pins: Mapping[str, Pin]) -> None:
        """An operator's decision: the server's pins become exactly ``pins``."""
        with self._locked() as data:
            data[server] = {tool: pin.to_dict() for tool, pin in pins.items()}


def difference(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None) -> str:
    """A unified diff of two definitions, as an operator reads it before trusting the new one."""
    def lines(d: Mapping[str, Any] | None) -> list[str]:
        return json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False).splitlines() if d is not None else []

    return "\n".join(difflib.unified_diff(lines(old), lines(new), "pinned", "now", lineterm=""))

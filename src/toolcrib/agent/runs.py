"""Paused runs, stored so a run held for approval can be resumed later, in another process."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolcrib.errors import ConfigError
from toolcrib.models.base import Message, ToolCall
from toolcrib.tools.grounding import Source


@dataclass
class PausedRun:
    run_id: str
    user_id: str
    question: str
    mode: str
    messages: list[Message]
    pending: list[tuple[ToolCall, str]]
    grounding: list[tuple[Source, str]]  # every text the run had seen, with its source


def _call_to_json(call: ToolCall) -> dict[str, Any]:
    return {"id": call.id, "name": call.name, "arguments": call.arguments}


def _call_from_json(data: dict[str, Any]) -> ToolCall:
    return ToolCall(id=data["id"], name=data["name"], arguments=data["arguments"])


class RunStore:
    """One JSON file per paused run, written atomically."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def save(self, run: PausedRun) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        data = {
            "run_id": run.run_id, "user_id": run.user_id, "question": run.question, "mode": run.mode,
            "messages": [{"role": m.role, "content": m.content, "tool_calls": [_call_to_json(c) for c in m.tool_calls],
                          "tool_call_id": m.tool_call_id, "name": m.name} for m in run.messages],
            "pending": [{"call": _call_to_json(c), "proposal_id": pid} for c, pid in run.pending],
            "grounding": [{"source": s.to_dict(), "text": t} for s, t in run.grounding],
        }
        tmp = self.directory / f".{run.run_id}.tmp"
        tmp.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, self.directory / f"{run.run_id}.json")

    def load(self, run_id: str) -> PausedRun:
        path = self.directory / f"{run_id}.json"
        if not run_id.isalnum() or not path.exists():
            raise ConfigError(f"no paused run with id '{run_id}'", file=str(self.directory))
        data = json.loads(path.read_text(encoding="utf-8"))
        messages = [Message(m["role"], m["content"], tuple(_call_from_json(c) for c in m["tool_calls"]),
                            m["tool_call_id"], m["name"]) for m in data["messages"]]
        return PausedRun(data["run_id"], data["user_id"], data["question"], data["mode"], messages,
                         [(_call_from_json(p["call"]), p["proposal_id"]) for p in data["pending"]],
                         [(Source.from_dict(g["source"]), g["text"]) for g in data["grounding"]])

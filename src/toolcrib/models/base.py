"""The model seam: messages in, a completion (text and/or tool-call proposals) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, runtime_checkable

if TYPE_CHECKING:
    from toolcrib.models.weights import ProgressCallback

Role = Literal["system", "user", "assistant", "tool"]
ToolChoice = Literal["auto", "none", "required"]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model proposes. A proposal, not an authorization.

    ``arguments`` is the parsed JSON object; when the model's arguments were not a JSON object,
    ``arguments`` is empty and ``parse_error`` says why (the gate turns that into a controlled error).
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    parse_error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "arguments": self.arguments}
        if self.parse_error:
            out["parse_error"] = self.parse_error
        return out


@dataclass(frozen=True)
class Message:
    """One chat message. ``tool`` messages carry ``tool_call_id``; assistant messages may carry calls."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """What the model is shown about one tool: name, description and a strict JSON Schema."""

    name: str
    description: str
    parameters: dict[str, Any]
    strict: bool = True


@dataclass(frozen=True)
class Completion:
    """A model's reply: text, zero or more tool-call proposals, token counts and latency."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    ms: float = 0.0
    model: str = ""


class Model(ABC):
    """A language model backend. Capabilities are declared on the class, never sniffed by callers."""

    supports_tools: bool = True
    supports_parallel_calls: bool = False
    supports_strict: bool = False
    name: str = "model"

    @abstractmethod
    def complete(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        *,
        tool_choice: ToolChoice = "auto",
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """Return the model's next reply to ``messages``, offering ``tools`` when given."""

    def close(self) -> None:
        """Release resources (connections, loaded weights). Default: nothing to release."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@runtime_checkable
class Loadable(Protocol):
    """The capability of a backend whose weights take long enough to load that a caller loads them up
    front, showing ``progress(stage, done, total)``, instead of on the first ``complete`` (the embedded
    local model has it; a remote API does not). Checked with ``isinstance(model, Loadable)``."""

    progress: ProgressCallback | None

    def load(self) -> float:
        """Load now; return the milliseconds it took (0 when already loaded)."""
        ...

"""The model seam: messages in, a completion (text and/or tool-call proposals) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
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
class HostedSource:
    """Something a provider-hosted tool returned that an answer may cite, exactly as the provider gave it:
    a file passage (``ref``: the provider's file id, ``title``: its filename, ``text``: the quoted text)
    or a web page (``ref``: its URL, ``title``: the page title, ``text``: what the provider attributed
    to it). Never made up by toolcrib: no source, no citation."""

    kind: Literal["file", "web"]
    ref: str
    title: str = ""
    text: str = ""

    @property
    def citation(self) -> str:
        """``file#<file id>``, or ``web#<hash of the URL>`` as the ``web_search`` builtin cites a page."""
        if self.kind == "file":
            return f"file#{self.ref}"
        from toolcrib.websearch.results import citation_id  # one definition of a web page's id

        return citation_id(self.ref)


@dataclass(frozen=True)
class HostedCall:
    """A tool the provider ran itself (``file_search``, ``web_search``, ``code_interpreter``), decided
    and executed on its side: toolcrib's gate never saw it, so it is recorded, not authorized.

    ``arguments`` is what it was asked (queries, code); ``sources`` what it found that may be cited;
    ``output`` other output it reported (the code interpreter's logs)."""

    id: str
    tool: str
    status: str
    arguments: dict[str, Any] = field(default_factory=dict)
    sources: tuple[HostedSource, ...] = ()
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "completed"


@dataclass(frozen=True)
class Completion:
    """A model's reply: text, zero or more tool-call proposals, token counts and latency.

    A backend whose provider runs tools itself also reports those calls (``hosted``) and the sources
    its reply's annotations name (``cited``); the text then carries their ``[id]`` markers."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int = 0
    tokens_out: int = 0
    ms: float = 0.0
    model: str = ""
    hosted: tuple[HostedCall, ...] = ()
    cited: tuple[HostedSource, ...] = ()


class Model(ABC):
    """A language model backend. Capabilities are declared on the class, never sniffed by callers."""

    supports_tools: bool = True
    supports_parallel_calls: bool = False
    supports_strict: bool = False
    hosted_tools: tuple[str, ...] = ()  # tools the provider runs itself, by workspace configuration
    # a small model: the runner aids it (planned lookups, answers code writes from records and passages,
    # the final answer asked from an evidence brief, answer caps): agent.strategy.AidedAnswer. Any other
    # gets the native conversation, its tool results as tool messages, and writes its own answer.
    small_model: bool = False
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


@runtime_checkable
class Prefillable(Protocol):
    """The capability of a backend that keeps evaluated prompt starts (the local model's prompt cache):
    ``prefill`` evaluates now the start that ``complete`` on these messages and tools would evaluate, so
    that a later question with the same offer begins from it. Checked with ``isinstance``."""

    def prefill(self, messages: list[Message], tools: list[ToolSpec]) -> float:
        """Evaluate and keep that start now; return the milliseconds it took (0 when it was kept before)."""
        ...


@runtime_checkable
class Decides(Protocol):
    """The capability of a backend that can be asked for a decision alone: calls, or a reply with no text
    that calls nothing more. The runner asks so where code writes the answer from the evidence anyway (the
    aided strategy in loop mode): a small model on a CPU writes ~15 tokens a second, so an answer nobody
    reads costs seconds. Checked with ``isinstance``."""

    def decide(self, messages: list[Message], tools: list[ToolSpec]) -> Completion:
        """Calls to make, or a ``Completion`` with no calls and no text; ``complete`` with ``tools`` otherwise."""
        ...


@runtime_checkable
class ReaderScoped(Protocol):
    """The capability of a backend whose provider reads documents itself (the Responses API's hosted
    ``file_search``): it must read only what the principal a reply is for may read. The runner asks
    every reply of such a backend through ``for_reader(groups)``, with the principal's groups from the
    session. Checked with ``isinstance(model, ReaderScoped)``."""

    def for_reader(self, groups: Sequence[str]) -> Model:
        """This backend, limited to the documents readers in ``groups`` may read."""
        ...

"""The model seam: messages in, a completion (text and/or tool-call proposals) out.

``Model.complete(messages, tools, settings)`` is async, for every backend: a remote one awaits its
provider's async client; one whose call blocks (llama.cpp) or is cheap (the fakes) is a ``SyncModel``.
"""

from __future__ import annotations

import asyncio
import hashlib
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, Self, runtime_checkable

from toolcrib.models.profile import ModelProfile
from toolcrib.models.settings import ModelSettings, ToolChoice

if TYPE_CHECKING:
    from toolcrib.models.weights import ProgressCallback

__all__ = ["Completion", "HostedCall", "HostedSource", "Loadable", "Message", "Model", "ModelProfile",
           "ModelSettings", "Prefillable", "ReaderScoped", "SyncModel", "ToolCall", "ToolChoice", "ToolSpec",
           "web_citation_id"]

Role = Literal["system", "user", "assistant", "tool"]


def web_citation_id(url: str) -> str:
    """A web page's stable citation id (``web#<hash of the URL>``): the same page found twice, by the
    ``web_search`` builtin or by a provider's hosted search, is one source."""
    return "web#" + hashlib.sha256(url.encode()).hexdigest()[:10]


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
    # per string parameter, the pattern a model decoding under a grammar writes it in (``Tool.grammar``)
    grammar: tuple[tuple[str, str], ...] = ()


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
        return f"file#{self.ref}" if self.kind == "file" else web_citation_id(self.ref)


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
    """A language model backend. What it is and can do is its ``profile``, never sniffed by callers;
    ``settings`` are its own defaults, under the workspace's, the run's and the call's."""

    profile: ModelProfile = ModelProfile()
    settings: ModelSettings = ModelSettings()
    name: str = "model"

    @abstractmethod
    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                       settings: ModelSettings | None = None) -> Completion:
        """The model's next reply to ``messages``, offering ``tools`` when given, under ``settings``
        resolved over the model's own (``self.settings.resolve(settings)``)."""

    def close(self) -> None:
        """Release resources (connections, loaded weights). Default: nothing to release."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SyncModel(Model):
    """A backend whose call is plain blocking code (``complete_sync``), awaited once here for all of them.

    ``blocking``: the call holds the thread for long (llama.cpp: seconds of CPU per reply), so it runs in a
    worker thread and the event loop keeps serving other runs; otherwise (the fakes: microseconds) it runs
    inline, where a thread hop would cost more than the call (measured on 2 shared cores: a reply through
    ``asyncio.to_thread`` 175-230 us, inline 3-6 us; the embedded model's reply is seconds)."""

    blocking: ClassVar[bool] = False

    async def complete(self, messages: list[Message], tools: list[ToolSpec] | None = None,
                       settings: ModelSettings | None = None) -> Completion:
        resolved = self.settings.resolve(settings)
        if self.blocking:
            return await asyncio.to_thread(self.complete_sync, messages, tools, resolved)
        return self.complete_sync(messages, tools, resolved)

    @abstractmethod
    def complete_sync(self, messages: list[Message], tools: list[ToolSpec] | None,
                      settings: ModelSettings) -> Completion:
        """The reply, computed on the calling thread; ``settings`` already resolved."""


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
class ReaderScoped(Protocol):
    """The capability of a backend whose provider reads documents itself (the Responses API's hosted
    ``file_search``): it must read only what the principal a reply is for may read. The runner asks
    every reply of such a backend through ``for_reader(groups)``, with the principal's groups from the
    session. Checked with ``isinstance(model, ReaderScoped)``."""

    def for_reader(self, groups: Sequence[str]) -> Model:
        """This backend, limited to the documents readers in ``groups`` may read."""
        ...

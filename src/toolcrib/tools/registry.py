"""The allowlist: every tool an application has. What one user is offered is decided per request."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field

from toolcrib.errors import ConfigError
from toolcrib.models.base import ToolSpec
from toolcrib.policy.policy import Policy
from toolcrib.policy.principal import Principal
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.tool import Tool


class Registry:
    """Named tools; a name can be registered once."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, tool: Tool) -> Tool:
        if tool.name in self._tools and self._tools[tool.name] is not tool:
            raise ConfigError(f"two tools are named '{tool.name}'; tool names must be unique", key="tools")
        self._tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        return list(self._tools)

    def identifier_names(self) -> list[str]:
        """What the workspace's tools name things by, as words ("ticket number", "account id"): each lookup's
        key (``Tool.lookup_key``), then the other identifier parameters (``Tool.identifiers``), in
        registration order, each once. What a user may be asked to give."""
        keys = [k[0] for t in self._tools.values() if (k := t.lookup_key()) is not None]
        others = [name for t in self._tools.values() for name in t.identifiers]
        return list(dict.fromkeys(name.replace("_", " ").strip() for name in [*keys, *others]))

    def offer(self, principal: Principal, policy: Policy, grounding: Grounding | None = None) -> Offer:
        """What ``principal`` may be offered: the tools ``policy`` offers them, less (given the run's
        ``grounding``) those whose required identifier the run has not seen, which could only be
        called with an invented one. The runner shows the model this offer and the gate refuses
        anything outside it, so both decide from this one computation. In registration order, tools
        taking an identifier last: the offers one principal gets then share their longest start, so a
        model's cached prompt prefix serves them all."""
        tools = sorted((t for t in self._tools.values() if policy.offers(principal, t)),
                       key=lambda t: bool(t.identifiers))
        if grounding is None:
            return Offer(tuple(tools))
        withheld = {t.name: f"it needs {' or '.join(t.identifiers)}, which the request and tool results do not name"
                    for t in tools if not t.reachable(grounding)}
        return Offer(tuple(t for t in tools if t.name not in withheld), withheld)

    def usual_offers(self, principal: Principal, policy: Policy) -> list[tuple[Tool, ...]]:
        """The offers ``principal`` usually gets, to prepare a model's prompt cache with before any question:
        the offer for a request naming no identifier, then, for each identifier the offered tools require,
        the offer for a request naming just that one. Other offers share their longest start with these."""
        tools = self.offer(principal, policy).tools
        required = {t.name: {n for n in t.identifiers if n in t.parameters.get("required", ())} for t in tools}
        named: list[set[str]] = [set(), *({n} for n in dict.fromkeys(n for t in tools for n in required[t.name]))]
        offers = {tuple(t.name for t in o): o for o in (tuple(t for t in tools if required[t.name] <= names)
                                                       for names in named)}
        return list(offers.values())  # distinct, in order


@dataclass(frozen=True)
class Offer:
    """The tools one principal is offered at one point of a run, and those withheld, with why."""

    tools: tuple[Tool, ...]
    withheld: Mapping[str, str] = field(default_factory=dict)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_names", frozenset(t.name for t in self.tools))  # the gate asks every call

    def __contains__(self, name: object) -> bool:
        return name in self._names

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tools]


def tool_specs(tools: Iterable[Tool]) -> list[ToolSpec]:
    """What the model is shown about ``tools``."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters, grammar=t.grammar)
            for t in tools]

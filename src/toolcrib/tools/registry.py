"""The allowlist: every tool an application has. What one user is offered is decided per request."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from toolcrib.errors import ConfigError
from toolcrib.models.base import ToolSpec
from toolcrib.policy.policy import Policy
from toolcrib.policy.principal import Principal
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

    def offered(self, principal: Principal, policy: Policy) -> list[Tool]:
        """The tools ``policy`` offers ``principal``, in registration order."""
        return [t for t in self._tools.values() if policy.offers(principal, t)]


def tool_specs(tools: Iterable[Tool]) -> list[ToolSpec]:
    """What the model is shown about ``tools``."""
    return [ToolSpec(name=t.name, description=t.description, parameters=t.parameters) for t in tools]

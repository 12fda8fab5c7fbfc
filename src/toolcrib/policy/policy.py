"""Who may be offered which tool, and whether one call may run. Decided per principal, per call."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from toolcrib.policy.principal import Principal


class ToolFacts(Protocol):
    """What a policy may look at about a tool (``toolcrib.tools.Tool`` satisfies it)."""

    @property
    def name(self) -> str: ...


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""

    @classmethod
    def allow(cls, reason: str = "") -> Decision:
        return cls(True, reason)

    @classmethod
    def deny(cls, reason: str) -> Decision:
        return cls(False, reason)


class Policy(ABC):
    """Tool-level offering plus call-level (object-level) authorization."""

    version: str = "1"

    def offers(self, principal: Principal, tool: ToolFacts) -> bool:
        """Whether ``tool`` is shown to ``principal`` at all. Default: every tool."""
        return True

    @abstractmethod
    def authorize(self, principal: Principal, tool: ToolFacts, arguments: Mapping[str, Any]) -> Decision:
        """Whether this exact call may run for this principal."""

    def may_approve(self, approver: Principal, tool: ToolFacts) -> bool:
        """Whether ``approver`` may approve calls of ``tool``. Default: nobody."""
        return False


class AllowAll(Policy):
    """Offers and allows everything: for tests and single-user scripts only."""

    def authorize(self, principal: Principal, tool: ToolFacts, arguments: Mapping[str, Any]) -> Decision:
        return Decision.allow("allow-all policy")

    def may_approve(self, approver: Principal, tool: ToolFacts) -> bool:
        return True


Rule = Callable[[Principal, ToolFacts, Mapping[str, Any]], "Decision | bool | None"]


class GroupPolicy(Policy):
    """Tools granted per group (``"*"`` = all), approval rights per group, and optional Python rules.

    A rule returns a Decision (or False) to deny a specific call, e.g. an object from another tenant;
    None or True means "no objection". Every rule must agree for a call to run.
    """

    def __init__(
        self,
        grants: Mapping[str, Iterable[str]],
        approvers: Mapping[str, Iterable[str]] | None = None,
        rules: Iterable[Rule] = (),
        *,
        version: str = "1",
        separation_of_duties: bool = True,
    ) -> None:
        self.grants = {g: frozenset(tools) for g, tools in grants.items()}
        self._offered: dict[tuple[frozenset[str], str], bool] = {}
        self._granted_to: dict[str, Decision] = {}  # per user: a Decision is immutable, and asked for every call
        self.approvers = {g: frozenset(tools) for g, tools in (approvers or {}).items()}
        self.rules = list(rules)
        self.version = version
        self.separation_of_duties = separation_of_duties

    @staticmethod
    def _granted(table: Mapping[str, frozenset[str]], principal: Principal, name: str) -> bool:
        return any(name in tools or "*" in tools for g, tools in table.items() if g in principal.groups)

    def offers(self, principal: Principal, tool: ToolFacts) -> bool:
        key = (principal.groups, tool.name)  # asked on every call: the grants never change
        found = self._offered.get(key)
        if found is None:
            if len(self._offered) > 4096:
                self._offered.clear()
            found = self._offered[key] = self._granted(self.grants, principal, tool.name)
        return found

    def authorize(self, principal: Principal, tool: ToolFacts, arguments: Mapping[str, Any]) -> Decision:
        if not self.offers(principal, tool):
            return Decision.deny(f"{tool.name} is not available to user {principal.user_id}")
        for rule in self.rules:
            verdict = rule(principal, tool, arguments)
            if verdict is False:
                return Decision.deny(f"{tool.name} is not permitted for these arguments")
            if isinstance(verdict, Decision) and not verdict.allowed:
                return verdict
        found = self._granted_to.get(principal.user_id)
        if found is None:
            if len(self._granted_to) > 4096:
                self._granted_to.clear()
            found = self._granted_to[principal.user_id] = Decision.allow(
                f"granted to {principal.user_id} through group membership")
        return found

    def may_approve(self, approver: Principal, tool: ToolFacts) -> bool:
        return self._granted(self.approvers, approver, tool.name)

"""Who is asking. Created by the application from its own authentication, never from model output."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Principal:
    """The signed-in user a run acts for: id, tenant and groups (roles)."""

    user_id: str
    tenant: str = "default"
    groups: frozenset[str] = field(default_factory=frozenset)
    display_name: str = ""

    def in_group(self, *groups: str) -> bool:
        return bool(self.groups.intersection(groups))

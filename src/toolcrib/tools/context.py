"""What the gate is told: a run's facts for each call (``CallContext``) and the workspace's ``[gate]``
settings (``GateSettings``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any, Literal

from toolcrib.policy.principal import Principal
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.registry import Offer
from toolcrib.tools.regrounding import Domains
from toolcrib.tools.tool import ToolContext
from toolcrib.trace.tracer import Tracer


@dataclass
class CallContext:
    """Per-run facts the Gate needs. The principal comes from the caller's session, never the model."""

    principal: Principal
    tracer: Tracer
    grounding: Grounding = field(default_factory=Grounding)
    resources: Mapping[str, Any] = field(default_factory=dict)
    run_id: str = ""
    offer: Offer | None = None  # what the model was last offered; None: whatever the policy offers
    question: str = ""  # the user's request, shown to an approver next to the call
    flags: list[str] = field(default_factory=list)  # what the scanner flagged in this run's results
    today: date | None = None  # what the request's dates are resolved against (None: the machine's today)
    domains: Domains | None = None  # the closed sets of stored values an argument must name (None: none checked)
    stated: tuple[tuple[str, str, str], ...] = ()  # the values the request names: (table, column, stored value)

    def tool_context(self) -> ToolContext:
        return ToolContext(principal=self.principal, resources=self.resources, trace_id=self.tracer.trace_id,
                           grounded=self.grounding.contains, stated=self.stated)


@dataclass
class GateSettings:
    """How the gate runs calls and what it lets through (a workspace's ``[gate]`` settings)."""

    max_result_chars: int = 4000
    read_retries: int = 2
    retry_backoff_s: float = 0.05
    approval_ttl_s: float = 900.0
    # a tool's sensitive argument found only in content others wrote, or nowhere: refuse the call
    # before anyone is asked, or hold it with a warning
    untrusted_sensitive: Literal["refuse", "warn"] = "refuse"
    # where an egress READ may go without the user naming it: exact values or prefixes ("https://x/")
    egress_allowlist: tuple[str, ...] = ()
    # a WRITE/ACTUATE the request did not ask for (``provenance.requested_in``) once the run has read
    # content others wrote: allowed ("off"), held with a warning, or refused
    unrequested_writes: Literal["off", "warn", "refuse"] = "warn"
    # a date in an argument that neither the request states nor a text the run has seen holds: re-grounded
    # to the request's date it stands for, or refused; a READ's optional filter no text holds: left out
    # (``regrounding``); False lets any such value through
    ground_values: bool = True
    # how long a proposal of this tool waits for a decision before it expires (default: the store's)
    proposal_ttl_s: Mapping[str, float] = field(default_factory=dict)

"""toolcrib: a runtime for tool-using, retrieval-grounded language-model applications.

The model proposes; the application decides.
"""

from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from toolcrib import retrieval as _retrieval  # its names load on first use
from toolcrib.agent.answer import Answer, Citation
from toolcrib.agent.runner import Limits, Runner, RunnerSettings
from toolcrib.errors import (
    ConfigError,
    ModelFacingError,
    OperatorError,
    ToolcribError,
)
from toolcrib.models.base import Completion, HostedCall, HostedSource, Message, Model, SyncModel, ToolCall, ToolSpec
from toolcrib.models.profile import ModelProfile
from toolcrib.models.registry import get_model, register_model
from toolcrib.models.scripted import FunctionModel, ScriptedModel
from toolcrib.models.settings import ModelSettings, RetrySettings
from toolcrib.policy.approvals import ApprovalStore
from toolcrib.policy.audit import AuditStore
from toolcrib.policy.policy import AllowAll, Decision, GroupPolicy, Policy
from toolcrib.policy.principal import Principal
from toolcrib.policy.scanner import Scanner
from toolcrib.tools.context import CallContext, GateSettings
from toolcrib.tools.gate import Gate
from toolcrib.tools.json_schema import json_schema_tool
from toolcrib.tools.registry import Registry
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect, Identifier, Tool, ToolContext, tool
from toolcrib.trace.events import Event, EventKind
from toolcrib.trace.tracer import JsonlExporter, Step, TraceExporter, Tracer
from toolcrib.workspace import Workspace

if _TYPE_CHECKING:
    from toolcrib.retrieval.embedders import Embedder
    from toolcrib.retrieval.index import Index

__version__ = "0.1.0"

# Seams whose modules pull in heavy libraries: toolcrib.retrieval loads them on first use (PEP 562),
# so `import toolcrib` stays fast.
_LAZY = frozenset({"Embedder", "Index"})


def __getattr__(name: str) -> _Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'toolcrib' has no attribute {name!r}")
    return getattr(_retrieval, name)


__all__ = [
    "AllowAll",
    "Answer",
    "ApprovalStore",
    "AuditStore",
    "CallContext",
    "CallOutcome",
    "Citation",
    "Completion",
    "ConfigError",
    "Decision",
    "Effect",
    "Embedder",
    "Event",
    "EventKind",
    "FunctionModel",
    "Gate",
    "GateSettings",
    "GroupPolicy",
    "HostedCall",
    "HostedSource",
    "Identifier",
    "Index",
    "JsonlExporter",
    "Limits",
    "Message",
    "Model",
    "ModelFacingError",
    "ModelProfile",
    "ModelSettings",
    "OperatorError",
    "Policy",
    "Principal",
    "Registry",
    "RetrySettings",
    "Runner",
    "RunnerSettings",
    "Scanner",
    "ScriptedModel",
    "Step",
    "SyncModel",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolSpec",
    "ToolcribError",
    "TraceExporter",
    "Tracer",
    "Workspace",
    "__version__",
    "get_model",
    "json_schema_tool",
    "register_model",
    "tool",
]

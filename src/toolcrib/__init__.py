"""toolcrib: a runtime for tool-using, retrieval-grounded language-model applications.

The model proposes; the application decides.
"""

from toolcrib.agent.answer import Answer, Citation
from toolcrib.agent.runner import Limits, Runner, RunnerSettings
from toolcrib.errors import (
    ConfigError,
    ModelFacingError,
    OperatorError,
    ToolcribError,
)
from toolcrib.models.base import Completion, Message, Model, ToolCall, ToolSpec
from toolcrib.models.registry import get_model, register_model
from toolcrib.models.scripted import FunctionModel, ScriptedModel
from toolcrib.policy.policy import AllowAll, Decision, GroupPolicy, Policy
from toolcrib.policy.principal import Principal
from toolcrib.tools.gate import CallContext, Gate, GateSettings
from toolcrib.tools.json_schema import json_schema_tool
from toolcrib.tools.registry import Registry
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect, Identifier, Tool, ToolContext, tool
from toolcrib.trace.tracer import JsonlExporter, Step, TraceExporter, Tracer
from toolcrib.workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "AllowAll",
    "Answer",
    "CallContext",
    "CallOutcome",
    "Citation",
    "Completion",
    "ConfigError",
    "Decision",
    "Effect",
    "FunctionModel",
    "Gate",
    "GateSettings",
    "GroupPolicy",
    "Identifier",
    "JsonlExporter",
    "Limits",
    "Message",
    "Model",
    "ModelFacingError",
    "OperatorError",
    "Policy",
    "Principal",
    "Registry",
    "Runner",
    "RunnerSettings",
    "ScriptedModel",
    "Step",
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

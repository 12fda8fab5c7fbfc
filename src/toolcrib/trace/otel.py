"""OpenTelemetry exporter (extra ``otel``): one span per event under one ``invoke_agent`` span per run,
named and attributed after the GenAI semantic conventions. It reads the events' typed fields only."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from toolcrib.errors import MissingDependency
from toolcrib.trace.events import Event, EventKind
from toolcrib.trace.tracer import TraceExporter

# Events that are one execution of a tool, as the GenAI conventions' ``execute_tool`` operation.
_TOOL_EXECUTIONS = frozenset({EventKind.CALL_EXECUTED, EventKind.CALL_FAILED, EventKind.CACHE_HIT})


def _operation(event: Event) -> str:
    if event.kind is EventKind.MODEL_DECISION:
        return "chat"
    if event.kind in _TOOL_EXECUTIONS:
        return "execute_tool"
    return f"toolcrib.{event.kind.value}"


class OpenTelemetryExporter(TraceExporter):
    """Emits each recorded event as a span under one root span per run (keyed by trace id)."""

    def __init__(self, tracer_provider: Any = None, *, model_name: str = "", system: str = "toolcrib") -> None:
        try:
            from opentelemetry import trace
        except ImportError:
            raise MissingDependency("the OpenTelemetry exporter", "otel") from None
        self._trace = trace
        provider = tracer_provider or trace.get_tracer_provider()
        self._tracer = provider.get_tracer("toolcrib")
        self.model_name = model_name
        self.system = system
        self._roots: dict[str, Any] = {}

    def _root(self, event: Event) -> Any:
        root = self._roots.get(event.trace_id)
        if root is None:
            root = self._tracer.start_span("invoke_agent toolcrib", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.system": self.system, "gen_ai.agent.name": "toolcrib",
                "toolcrib.trace_id": event.trace_id, "toolcrib.run_id": event.run_id})
            self._roots[event.trace_id] = root
        return root

    def _attributes(self, event: Event, operation: str) -> dict[str, Any]:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation, "toolcrib.kind": event.kind.value,
            "toolcrib.decided_by": event.decided_by, "toolcrib.step": event.step, "toolcrib.trace_id": event.trace_id,
            "toolcrib.schema_version": event.schema_version}
        optional = {"toolcrib.run_id": event.run_id, "toolcrib.status": event.status,
                    "toolcrib.effect": event.effect, "toolcrib.proposal_id": event.proposal_id,
                    "error.type": event.error_code, "toolcrib.citations": event.citations,
                    "toolcrib.rule": event.rule}
        attributes.update({k: v for k, v in optional.items() if v})
        if event.detail is not None:
            attributes["toolcrib.detail"] = json.dumps(event.detail, default=str, ensure_ascii=False)[:4000]
        if operation == "chat":
            attributes["gen_ai.usage.input_tokens"] = event.tokens_in
            attributes["gen_ai.usage.output_tokens"] = event.tokens_out
            if self.model_name:
                attributes["gen_ai.request.model"] = self.model_name
        if event.tool:
            attributes["gen_ai.tool.name"] = event.tool
            attributes["gen_ai.tool.type"] = "function"
        if event.call_id:
            attributes["gen_ai.tool.call.id"] = event.call_id
        return attributes

    def export(self, event: Event) -> None:
        root = self._root(event)
        operation = _operation(event)
        end_ns = int(datetime.fromisoformat(event.at).timestamp() * 1e9)
        name = {"chat": f"chat {self.model_name}".strip(), "execute_tool": f"execute_tool {event.tool}"}.get(
            operation, operation)
        context = self._trace.set_span_in_context(root)
        span = self._tracer.start_span(name, context=context, attributes=self._attributes(event, operation),
                                       start_time=end_ns - int(event.ms * 1e6))
        if event.error_code and operation == "execute_tool":
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, event.error_code))
        span.end(end_time=end_ns)
        if event.kind is EventKind.RUN_FINISHED:
            root.set_attribute("toolcrib.outcome", event.status or "")
            self._roots.pop(event.trace_id).end()

    def close(self) -> None:
        for root in self._roots.values():
            root.end()
        self._roots.clear()

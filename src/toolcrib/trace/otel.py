"""OpenTelemetry exporter (extra ``otel``): one span per step, named and attributed after the GenAI
semantic conventions (``gen_ai.operation.name``, ``gen_ai.usage.*``, ``gen_ai.tool.name``)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from toolcrib.errors import MissingDependency
from toolcrib.trace.tracer import Step, TraceExporter


def _operation(step: Step) -> str:
    if step.kind == "model":
        return "chat"
    if step.kind == "tool":
        return "execute_tool"
    return "toolcrib.step"


class OpenTelemetryExporter(TraceExporter):
    """Emits each recorded step as a span under one root span per run (keyed by trace id)."""

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

    def _root(self, trace_id: str) -> Any:
        root = self._roots.get(trace_id)
        if root is None:
            root = self._tracer.start_span("invoke_agent toolcrib", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.system": self.system,
                "toolcrib.trace_id": trace_id})
            self._roots[trace_id] = root
        return root

    def export(self, step: Step) -> None:
        root = self._root(step.trace_id)
        operation = _operation(step)
        start_ns = int(datetime.fromisoformat(step.at).timestamp() * 1e9)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": operation, "toolcrib.kind": step.kind, "toolcrib.decided_by": step.decided_by,
            "toolcrib.step": step.step, "toolcrib.trace_id": step.trace_id,
            "toolcrib.detail": step.detail if isinstance(step.detail, str) else json.dumps(step.detail, default=str)[:4000],
        }
        if operation == "chat":
            attributes["gen_ai.usage.input_tokens"] = step.tokens_in
            attributes["gen_ai.usage.output_tokens"] = step.tokens_out
            if self.model_name:
                attributes["gen_ai.request.model"] = self.model_name
        name = operation
        if operation == "execute_tool":
            attributes["gen_ai.tool.name"] = tool = step.title.removeprefix("Run tool: ")
            name = f"execute_tool {tool}"
        context = self._trace.set_span_in_context(root)
        span = self._tracer.start_span(name, context=context, attributes=attributes,
                                       start_time=start_ns - int(step.ms * 1e6))
        span.end(end_time=start_ns)
        if step.title.startswith("Final answer"):
            self._roots.pop(step.trace_id).end()

    def close(self) -> None:
        for root in self._roots.values():
            root.end()
        self._roots.clear()

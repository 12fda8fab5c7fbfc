"""Traces: JSONL per run with secrets redacted, and an OpenTelemetry exporter with GenAI attributes."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolcrib import JsonlExporter, Tracer
from toolcrib.trace.tracer import load_trace


def test_jsonl_trace_records_steps_in_order_and_redacts_secrets(tmp_path: Path) -> None:
    tracer = Tracer([JsonlExporter(tmp_path)])
    tracer.record(kind="model", decided_by="model", title="Model decides", detail={"api_key": "abc", "q": "hi"},
                  tokens_in=10, tokens_out=2, ms=5.0)
    tracer.record(kind="code", decided_by="code", title="Header", detail="Authorization: Bearer sk-abcdefghijklmnop")
    steps = load_trace(tmp_path / f"{tracer.trace_id}.jsonl")
    assert [s["step"] for s in steps] == [1, 2]
    assert steps[0]["detail"] == {"api_key": "[redacted]", "q": "hi"}
    assert "sk-abcdefghijklmnop" not in steps[1]["detail"]
    assert steps[0]["decided_by"] == "model" and steps[0]["tokens_in"] == 10


def test_opentelemetry_spans_follow_the_genai_conventions() -> None:
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolcrib.trace.otel import OpenTelemetryExporter

    memory = InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = Tracer([OpenTelemetryExporter(provider, model_name="local:qwen")])
    tracer.record(kind="model", decided_by="model", title="Model decides: lookup_part", tokens_in=100, tokens_out=9, ms=20)
    tracer.record(kind="tool", decided_by="code", title="Run tool: lookup_part", detail={"arguments": {"part_number": "X"}})
    tracer.record(kind="code", decided_by="code", title="Final answer (answered)")
    spans = {s.name: s for s in memory.get_finished_spans()}
    assert spans["chat"].attributes["gen_ai.usage.input_tokens"] == 100
    assert spans["chat"].attributes["gen_ai.request.model"] == "local:qwen"
    assert spans["execute_tool lookup_part"].attributes["gen_ai.tool.name"] == "lookup_part"
    root = spans["invoke_agent toolcrib"]
    assert spans["chat"].parent.span_id == root.context.span_id
    assert spans["chat"].attributes["toolcrib.decided_by"] == "model"

import toolcrib

PUBLIC = {
    "AllowAll", "Answer", "CallContext", "CallOutcome", "Citation", "Completion", "ConfigError", "Decision",
    "Effect", "FunctionModel", "Gate", "GateSettings", "GroupPolicy", "Identifier", "JsonlExporter", "Limits",
    "Message", "Model", "ModelFacingError", "OperatorError", "Policy", "Principal", "Registry", "Runner",
    "RunnerSettings", "ScriptedModel", "Step", "Tool", "ToolCall", "ToolContext", "ToolSpec", "ToolcribError",
    "TraceExporter", "Tracer", "Workspace", "__version__", "get_model", "json_schema_tool", "register_model", "tool",
}


def test_all_lists_exactly_the_public_names() -> None:
    assert set(toolcrib.__all__) == PUBLIC
    assert len(toolcrib.__all__) == len(set(toolcrib.__all__))
    for name in toolcrib.__all__:
        assert hasattr(toolcrib, name), name

"""An Anthropic Messages API server on loopback for tests, answering with the ``anthropic`` SDK's types.

Replies are ``anthropic.types.Message`` objects serialized with ``model_dump_json``. Requests are
checked like the real API checks them: ``max_tokens`` required, the system prompt as a parameter
(not a role), every ``tool_use`` answered by a ``tool_result`` at the start of the next user turn.
"""

from __future__ import annotations

import uuid
from typing import Any

from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

from fakes.openai_server import FakeAPIServer, Reply


def message_reply(
    text: str | None = None,
    calls: list[tuple[str, dict[str, Any]]] | None = None,
    *,
    stop_reason: str | None = None,
    model: str = "claude-test",
    input_tokens: int = 30,
    output_tokens: int = 8,
    cache_read_input_tokens: int = 0,
) -> Reply:
    """A 200 reply: an optional text block, then one ``tool_use`` block per (name, input)."""
    content: list[Any] = []
    if text is not None:
        content.append(TextBlock(type="text", text=text))
    for name, arguments in calls or []:
        content.append(ToolUseBlock(type="tool_use", id=f"toolu_{uuid.uuid4().hex[:16]}", name=name, input=arguments))
    message = Message(
        id=f"msg_{uuid.uuid4().hex[:16]}", type="message", role="assistant", model=model, content=content,
        stop_reason=stop_reason or ("tool_use" if calls else "end_turn"),  # type: ignore[arg-type]
        usage=Usage(input_tokens=input_tokens, output_tokens=output_tokens,
                    cache_read_input_tokens=cache_read_input_tokens),
    )
    return Reply(200, message.model_dump_json())


def anthropic_error(status: int, message: str, *, kind: str = "invalid_request_error",
                    headers: dict[str, str] | None = None) -> Reply:
    """An error answer in Anthropic's error-body shape."""
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}}, headers or {})


class FakeAnthropicServer(FakeAPIServer):
    """``POST /v1/messages``; clients use the bare origin as their base URL."""

    def __init__(self) -> None:
        super().__init__("/v1/messages", request_problem, anthropic_error)


def request_problem(body: Any) -> str | None:
    """What is wrong with a Messages request body, per the documented shape; None if fine."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        return "max_tokens: Field required"
    if "system" in body and not isinstance(body["system"], (str, list)):
        return "system: Input should be a valid string or list of text blocks"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    if messages[0].get("role") != "user":
        return "messages: the first message must use the user role"
    open_calls: list[str] = []
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            return f"messages.{i}.content: must be a string or a non-empty list of blocks"
        if role == "user" and open_calls:
            answered = [b.get("tool_use_id") for b in blocks[:len(open_calls)] if b.get("type") == "tool_result"]
            if sorted(answered) != sorted(open_calls):
                return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                        + ", ".join(sorted(set(open_calls) - set(answered))))
        open_calls = []
        for block in blocks:
            kind = block.get("type")
            if kind == "tool_use":
                if role != "assistant" or not isinstance(block.get("input"), dict):
                    return f"messages.{i}: tool_use blocks belong to the assistant and need an input object"
                open_calls.append(block["id"])
            elif kind == "tool_result" and role != "user":
                return f"messages.{i}: tool_result blocks belong to the user"
            elif kind not in ("text", "tool_use", "tool_result"):
                return f"messages.{i}: unsupported block type {kind!r}"
    if open_calls:
        return None  # a conversation may end on the assistant's calls only as a prefill; not used here
    for j, tool in enumerate(body.get("tools") or []):
        schema = tool.get("input_schema")
        if not isinstance(tool.get("name"), str) or not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{j}: a tool needs a name and an input_schema of type object"
    choice = body.get("tool_choice")
    if choice is not None:
        if not body.get("tools"):
            return "tool_choice may only be specified while providing tools"
        if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "none", "tool"):
            return "tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'"
    return None

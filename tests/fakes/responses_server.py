"""A Responses API server on loopback for tests, answering with the ``openai`` SDK's own types.

Replies are ``openai.types.responses.Response`` objects serialized with ``model_dump_json``, so a
change in the SDK's shape fails here, not in production. Requests are checked like the real API
checks them: strict function schemas, ``function_call_output`` items that answer a known call
(in the input or in a stored response named by ``previous_response_id``), hosted tools and ``include``
values validated against the SDK's own ``ToolParam`` and ``ResponseIncludable`` types.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseIncludable,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseUsage,
    ToolParam,
)
from openai.types.responses.response_output_text import Annotation
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails
from pydantic import TypeAdapter, ValidationError

from fakes.openai_server import FakeAPIServer, Reply, error_reply


def response_reply(
    text: str | None = None,
    calls: list[tuple[str, str]] | None = None,
    *,
    model: str = "test-model",
    input_tokens: int = 40,
    output_tokens: int = 9,
    status: str = "completed",
    incomplete_reason: str | None = None,
    hosted: list[ResponseOutputItem] | None = None,
    annotations: list[Annotation] | None = None,
) -> Reply:
    """A 200 reply: hosted tool calls' output items (``hosted``: the SDK's ``ResponseFileSearchToolCall``
    and the like), an optional assistant message with its ``annotations``, then one ``function_call``
    per (name, arguments-as-sent)."""
    output: list[Any] = list(hosted or [])
    if text is not None:
        output.append(ResponseOutputMessage(
            id=f"msg_{uuid.uuid4().hex[:12]}", type="message", role="assistant", status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=list(annotations or []))]))
    for name, arguments in calls or []:
        output.append(ResponseFunctionToolCall(
            id=f"fc_{uuid.uuid4().hex[:12]}", type="function_call", call_id=f"call_{uuid.uuid4().hex[:12]}",
            name=name, arguments=arguments, status="completed"))
    response = Response(
        id=f"resp_{uuid.uuid4().hex[:16]}", object="response", created_at=time.time(), model=model,
        output=output, parallel_tool_calls=True, tool_choice="auto", tools=[], status=status,  # type: ignore[arg-type]
        incomplete_details={"reason": incomplete_reason} if incomplete_reason else None,  # type: ignore[arg-type]
        usage=ResponseUsage(
            input_tokens=input_tokens, output_tokens=output_tokens, total_tokens=input_tokens + output_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=0, cache_write_tokens=0),
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0)),
    )
    return Reply(200, response.model_dump_json())


_TOOL: TypeAdapter[Any] = TypeAdapter(ToolParam)
_INCLUDE: TypeAdapter[Any] = TypeAdapter(list[ResponseIncludable])


class FakeResponsesServer(FakeAPIServer):
    """``POST {route}`` (``/v1/responses``; Azure: ``/openai/responses?api-version=...``)."""

    def __init__(self, route: str = "/v1/responses", url_path: str = "/v1") -> None:
        super().__init__(route, self.request_problem, error_reply, url_path=url_path)
        self.stored: dict[str, set[str]] = {}  # response id -> the call ids it proposed

    def queue(self, *replies: Reply) -> None:
        for reply in replies:
            if reply.status == 200 and isinstance(reply.body, str):
                data = json.loads(reply.body)
                self.stored[data["id"]] = {item["call_id"] for item in data["output"]
                                           if item["type"] == "function_call"}
        super().queue(*replies)

    def request_problem(self, body: Any) -> str | None:
        """What is wrong with a Responses request body, per the documented shape; None if fine."""
        if not isinstance(body, dict):
            return "the body must be a JSON object"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "'model' is required"
        items = body.get("input")
        if not isinstance(items, list) or not items:
            return "'input' must be a non-empty array"
        previous = body.get("previous_response_id")
        if previous is not None and (previous not in self.stored or body.get("store") is False):
            return f"Previous response with id '{previous}' not found."
        calls: set[str] = set(self.stored.get(previous, set())) if previous else set()
        for i, item in enumerate(items):
            kind = item.get("type", "message") if isinstance(item, dict) else None
            if kind == "message":
                if item.get("role") not in ("user", "assistant", "system", "developer"):
                    return f"input[{i}].role is invalid"
                if not isinstance(item.get("content"), (str, list)):
                    return f"input[{i}].content must be a string or a list of parts"
            elif kind == "function_call":
                if not all(isinstance(item.get(k), str) for k in ("call_id", "name", "arguments")):
                    return f"input[{i}]: a function_call needs call_id, name and arguments as strings"
                calls.add(item["call_id"])
            elif kind == "function_call_output":
                if item.get("call_id") not in calls:
                    return f"No tool call found for function call output with call_id {item.get('call_id')}."
                if not isinstance(item.get("output"), (str, list)):
                    return f"input[{i}].output must be a string"
            else:
                return f"input[{i}].type {kind!r} is not supported here"
        try:
            _INCLUDE.validate_python(body.get("include") or [])
        except ValidationError:
            return f"'include' has an unknown value: {body.get('include')}"
        for j, tool in enumerate(body.get("tools") or []):
            if tool.get("type") != "function":
                try:
                    _TOOL.validate_python(tool)
                except ValidationError:
                    return f"tools[{j}] is not a valid {tool.get('type')!r} tool"
                continue
            if not isinstance(tool.get("name"), str):
                return f"tools[{j}] must be a function tool with a name"
            parameters = tool.get("parameters")
            if not isinstance(parameters, dict):
                return f"tools[{j}].parameters must be an object"
            if tool.get("strict"):
                if parameters.get("additionalProperties") is not False:
                    return f"Invalid schema for function '{tool['name']}': additionalProperties must be false"
                if set(parameters.get("required") or []) != set(parameters.get("properties") or {}):
                    return f"Invalid schema for function '{tool['name']}': every property must be required"
        choice = body.get("tool_choice")
        if choice is not None and choice not in ("auto", "none", "required") and not isinstance(choice, dict):
            return "'tool_choice' is invalid"
        return None

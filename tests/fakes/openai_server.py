"""A Chat Completions server on loopback for tests (and the one-route server the other API fakes use).

It checks each request against the documented request shape the way a real server does (a
violation is answered with HTTP 400 and an OpenAI-style error body), so a backend that sends a
malformed body fails its test the way it would fail in production.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import urlsplit

import httpx


@dataclass
class Reply:
    """One scripted answer: status, JSON (or raw text) body, headers, and a delay before answering."""

    status: int = 200
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Recorded:
    """One request as the server received it."""

    method: str
    path: str
    headers: httpx.Headers  # case-insensitive, as HTTP headers are
    body: Any


def chat_reply(
    content: str | None = None,
    tool_calls: list[tuple[str, str]] | None = None,
    *,
    model: str = "test-model",
    prompt_tokens: int = 42,
    completion_tokens: int = 7,
) -> Reply:
    """A 200 reply shaped like OpenAI's: ``tool_calls`` is (name, arguments-as-sent) pairs."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = [
            {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function",
             "function": {"name": name, "arguments": arguments}}
            for name, arguments in tool_calls
        ]
    body = {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": "tool_calls" if tool_calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }
    from openai.types.chat import ChatCompletion  # here, so the Anthropic fake needs no openai SDK

    ChatCompletion.model_validate(body)  # the openai SDK's own type: the shape cannot drift from it
    return Reply(200, body)


def error_reply(status: int, message: str, *, code: str | None = None,
                headers: dict[str, str] | None = None) -> Reply:
    """An error answer in OpenAI's error-body shape."""
    body = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": code}}
    return Reply(status, body, headers or {})


class FakeAPIServer:
    """One POST route on 127.0.0.1 in a background thread: scripted replies, recorded requests, and
    each request checked by ``check`` (a problem is answered 400 in the API's own error shape)."""

    def __init__(self, route: str, check: Callable[[Any], str | None],
                 error: Callable[[int, str], Reply], *, url_path: str = "") -> None:
        self.replies: deque[Reply] = deque()
        self.requests: list[Recorded] = []
        self.route = route
        self.url_path = url_path
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are separate writes: avoid 40 ms stalls

            def log_message(self, format: str, *args: Any) -> None:  # quiet test output
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body: Any = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                with server._lock:
                    server.requests.append(Recorded("POST", self.path, httpx.Headers(list(self.headers.items())), body))
                    reply = server.replies.popleft() if server.replies else None
                if urlsplit(self.path).path != server.route:
                    reply = error(404, f"no route {self.path}")
                else:
                    problem = check(body)
                    if problem:
                        reply = error(400, problem)
                if reply is None:
                    reply = error(500, "the test scripted no reply for this request")
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (reply.body if isinstance(reply.body, str)
                           else json.dumps(reply.body if reply.body is not None else {})).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    @property
    def url(self) -> str:
        """The base URL a client is configured with."""
        port = self._httpd.server_address[1]
        return f"http://127.0.0.1:{port}{self.url_path}"

    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class FakeChatServer(FakeAPIServer):
    """``/v1/chat/completions``."""

    def __init__(self) -> None:
        super().__init__("/v1/chat/completions", request_problem, error_reply, url_path="/v1")


def request_problem(body: Any) -> str | None:
    """What is wrong with a Chat Completions request body, per the documented shape; None if fine."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "'model' is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array"
    call_ids: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}].role is invalid"
        if role == "assistant" and "tool_calls" in message:
            for call in message["tool_calls"]:
                if call.get("type") != "function" or not isinstance(call.get("id"), str):
                    return f"messages[{i}].tool_calls need an id and type 'function'"
                function = call.get("function") or {}
                if not isinstance(function.get("name"), str) or not isinstance(function.get("arguments"), str):
                    return f"messages[{i}].tool_calls[].function needs a name and arguments as a string"
                call_ids.add(call["id"])
        elif role == "tool":
            if message.get("tool_call_id") not in call_ids:
                return f"messages[{i}] with role 'tool' must answer a preceding tool call's id"
            if not isinstance(message.get("content"), str):
                return f"messages[{i}].content must be a string"
        elif not isinstance(message.get("content"), str):
            return f"messages[{i}].content must be a string"
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            return "'tools' must be an array"
        for j, tool in enumerate(tools):
            function = tool.get("function") if isinstance(tool, dict) else None
            if tool.get("type") != "function" or not isinstance(function, dict):
                return f"tools[{j}] must be {{'type': 'function', 'function': {{...}}}}"
            if not isinstance(function.get("name"), str) or not isinstance(function.get("parameters"), dict):
                return f"tools[{j}].function needs a name and a parameters object"
        if body.get("tool_choice") not in (None, "auto", "none", "required") and not isinstance(
                body.get("tool_choice"), dict):
            return "'tool_choice' is invalid"
    elif "tool_choice" in body:
        return "'tool_choice' is only allowed when 'tools' are specified"
    return None

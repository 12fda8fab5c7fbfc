"""toolcrib as an MCP server: a workspace's tools offered to an MCP client, every call through the gate.

The principal comes from the session, never from the client's messages: over stdio, the user the
operator started ``toolcrib mcp serve --user U`` with; over streamable HTTP, the bearer credential of
each request (the service's API keys or ``[service.jwt]`` tokens; anything else is answered 401).

What toolcrib cannot see here is the person's request: an MCP client sends calls, not questions.
So a call's own arguments are added to the grounding as the "MCP caller"'s (the identifier check
then only holds them to themselves, and says so), next to what this session's earlier results
returned; every proposal carries the warning ``UNGROUNDED`` for its approver. A WRITE/ACTUATE is
held for approval like any proposal; calling the tool again with the same arguments plus
``"_proposal_id": ID`` once a person approved it runs it exactly once (the gate checks the hash).
"""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from toolcrib.models.base import ToolCall
from toolcrib.policy.canonical import canonical_json
from toolcrib.policy.principal import Principal
from toolcrib.policy.proposals import Review
from toolcrib.tools.context import CallContext
from toolcrib.tools.gate import Gate
from toolcrib.tools.grounding import Grounding, Source
from toolcrib.tools.result import CallOutcome
from toolcrib.tools.tool import Effect, Tool
from toolcrib.trace.events import EventKind

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp_types import CallToolRequestParams, CallToolResult, ListToolsResult, PaginatedRequestParams
    from mcp_types import Tool as MCPTool

    from toolcrib.auth.credentials import Authenticator
    from toolcrib.workspace import Workspace

PROPOSAL_ARGUMENT = "_proposal_id"
UNGROUNDED = ("ungrounded: MCP caller. This call came from an MCP client: toolcrib did not see the person's request, "
              "so its arguments were not checked against one; they count as the caller's own")
_SESSION_TEXTS = 400  # what a session's grounding keeps: its latest texts
_SESSION_FLAGS = 50


class _CallerSource(Source):
    """The MCP caller's own arguments: vouched for as the session's (like a user request), and
    labelled so an approver never mistakes them for words a person typed into toolcrib."""

    @property
    def label(self) -> str:
        return "MCP caller (no request seen)"


MCP_CALLER = _CallerSource("user", "mcp-caller")


class MCPGate(Gate):
    """The workspace's gate, whose proposals tell the approver the request came from an MCP client."""

    def review(self, tool: Tool, values: Any, cctx: CallContext) -> Review:
        review = super().review(tool, values, cctx)
        return dataclasses.replace(review, warnings=[UNGROUNDED, *review.warnings])


@dataclass
class _Session:
    """What one principal's MCP session has seen: its calls' arguments and results, and scanner flags."""

    grounding: Grounding = field(default_factory=Grounding)
    flags: list[str] = field(default_factory=list)

    def trim(self) -> None:
        sources = self.grounding.sources
        if len(sources) > _SESSION_TEXTS:
            self.grounding = Grounding()
            for source, text in sources[-_SESSION_TEXTS:]:
                self.grounding.add(text, source)
        del self.flags[:-_SESSION_FLAGS]


def annotations_for(tool: Tool) -> dict[str, Any]:
    """MCP tool annotations from the effect class: READ is read-only; WRITE/ACTUATE destructive."""
    if tool.effect is Effect.READ:
        return {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": tool.idempotent}
    return {"read_only_hint": False, "destructive_hint": True, "idempotent_hint": False}


def input_schema_for(tool: Tool) -> dict[str, Any]:
    """The tool's strict JSON Schema; a WRITE/ACTUATE also takes the id of its approved proposal."""
    schema = copy.deepcopy(tool.parameters)
    if tool.effect is not Effect.READ:
        schema.setdefault("properties", {})[PROPOSAL_ARGUMENT] = {
            "type": "string",
            "description": "Only after a person approved this exact call: the proposal id it was held as. "
                           "Send the same arguments again with it; the call then runs once."}
    return schema


class ToolcribMCP:
    """The handlers of ``toolcrib mcp serve`` over one workspace."""

    def __init__(self, ws: Workspace, *, user: str | None = None, auth: Authenticator | None = None) -> None:
        if user is not None and auth is not None:
            raise ValueError("a fixed user (stdio) or an authenticator (HTTP), not both")
        self.ws = ws
        self.fixed = ws.principal(user) if auth is None else None
        self.auth = auth
        self.gate = ws.gate(cls=MCPGate)
        self.tracers = ws.tracer_factory()
        self._sessions: dict[tuple[str, str], _Session] = {}
        self._ids = itertools.count(1)

    # -- who is asking --------------------------------------------------------------------------

    def principal(self, request: Any) -> Principal:
        """The session's user (stdio) or the bearer credential's (HTTP); Unauthenticated otherwise."""
        if self.fixed is not None:
            return self.fixed
        assert self.auth is not None
        headers = getattr(request, "headers", None)
        return self.auth.principal(headers.get("authorization") if headers is not None else None)

    def _session(self, principal: Principal) -> _Session:
        return self._sessions.setdefault((principal.tenant, principal.user_id), _Session())

    # -- tools/list -------------------------------------------------------------------------------

    def listing(self, principal: Principal) -> list[MCPTool]:
        from mcp_types import Tool as MCPTool
        from mcp_types import ToolAnnotations

        return [MCPTool(name=t.name, description=t.description, input_schema=input_schema_for(t),
                        annotations=ToolAnnotations(title=t.name, **annotations_for(t)))
                for t in self.gate.offer(principal).tools]

    async def list_tools(self, ctx: Any, params: PaginatedRequestParams | None) -> ListToolsResult:
        from mcp_types import ListToolsResult

        return ListToolsResult(tools=self.listing(self.principal(ctx.request)))

    # -- tools/call -------------------------------------------------------------------------------

    async def call(self, principal: Principal, name: str, arguments: dict[str, Any]) -> CallOutcome:
        """One call through the gate, recorded as its own trace (``mode: mcp``)."""
        arguments = dict(arguments)
        proposal_id = arguments.pop(PROPOSAL_ARGUMENT, None)
        session = self._session(principal)
        session.trim()
        if arguments:
            session.grounding.add(canonical_json(arguments), MCP_CALLER)
        tracer = self.tracers()
        run_id = "mcp-" + uuid.uuid4().hex[:12]
        tracer.run_id = run_id
        question = (f"MCP client call {name}({canonical_json(arguments)}) for {principal.user_id}; "
                    "toolcrib did not see the person's request")
        tracer.record(EventKind.RUN_STARTED, f"MCP call: {name}", detail={
            "question": question, "user": principal.user_id, "mode": "mcp",
            **({"proposal_id": proposal_id} if proposal_id is not None else {})})
        # no run id on the CallContext: a proposal from MCP has no toolcrib run to resume; the caller
        # sends the call again with the proposal id
        cctx = CallContext(principal, tracer, session.grounding, self.ws.resources, "",
                           offer=self.gate.offer(principal), question=question, flags=session.flags)
        call = ToolCall(f"mcp_{next(self._ids)}", name, arguments)
        outcome = await self.gate.run(call, cctx, proposal_id=str(proposal_id) if proposal_id is not None else None)
        tracer.record(EventKind.RUN_FINISHED, f"MCP call finished: {outcome.status}",
                      status="paused" if outcome.status == "approval_required" else "answered",
                      detail={"call_status": outcome.status})
        tracer.close()
        return outcome

    async def call_tool(self, ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        outcome = await self.call(self.principal(ctx.request), params.name, dict(params.arguments or {}))
        return result_for(outcome)

    def lowlevel(self) -> Server[Any]:
        from mcp.server.lowlevel import Server

        return Server("toolcrib", version="0.1.0", title=self.ws.config.workspace.name,
                      instructions="Tools of a toolcrib workspace. Every call passes toolcrib's gate; a call that "
                                   "changes something is held until a person approves it.",
                      on_list_tools=self.list_tools, on_call_tool=self.call_tool)


def result_for(outcome: CallOutcome) -> CallToolResult:
    """The gate's outcome as an MCP result: the payload as structured content, and as text wrapped as
    data. Approval required is not an error: it says where to approve and how to run the call then."""
    from mcp_types import CallToolResult, TextContent

    payload = dict(outcome.payload)
    text = outcome.for_model()
    pid = outcome.proposal_id
    if outcome.status == "approval_required" and pid:
        name = outcome.call.name
        then = (f"call {name} again with the same arguments and \"{PROPOSAL_ARGUMENT}\": \"{pid}\"; it then runs "
                "once")
        payload["approval"] = {
            "proposal_id": pid,
            "where": ["the approvals page at / of `toolcrib serve`", f"toolcrib approve {pid} --user APPROVER"],
            "then": then}
        text = (f"Approval required: {name} was not run. It is held as proposal {pid}. A person who may approve it "
                f"decides on the approvals page (/ of `toolcrib serve`) or with `toolcrib approve {pid} --user "
                f"APPROVER`; then {then}.\n{text}")
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload,
                          is_error=outcome.status not in ("ok", "approval_required"))


class BearerGate:
    """ASGI: every HTTP request needs a bearer credential the authenticator accepts (401 otherwise)."""

    def __init__(self, app: Callable[..., Awaitable[None]], auth: Authenticator) -> None:
        self.app = app
        self.auth = auth

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        from toolcrib.auth.credentials import Unauthenticated

        if scope["type"] == "http":
            header = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), None)
            try:
                self.auth.principal(header)
            except Unauthenticated as exc:
                body = json.dumps({"error": {"code": exc.code, "message": exc.message}}).encode()
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b'Bearer realm="toolcrib"')]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve_stdio(mcp: ToolcribMCP) -> None:
    from mcp.server.stdio import stdio_server

    server = mcp.lowlevel()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def http_app(mcp: ToolcribMCP, host: str) -> Any:
    """The streamable-HTTP app (stateless, JSON responses) at ``/mcp``, behind the bearer check."""
    assert mcp.auth is not None
    app = mcp.lowlevel().streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                             host=host)
    return BearerGate(app, mcp.auth)

"""toolcrib as an MCP client: the tools of each ``[mcp.servers.NAME]`` registered as ``NAME.tool``.

A foreign tool goes through the same registry and gate as any other: strict validation against its
JSON Schema (``json_schema_tool``), the policy, approval for anything that is not READ, audit and
trace. Its effect class comes from the workspace (default WRITE: its effects are unknown); the
server's annotations may only make it stricter. Its definition is pinned (``toolcrib.mcp.pins``);
a changed or flagged one is disabled: registered, never offered, and refused with the reason.
Its results are content others wrote (``trusted=False``).

One connection per listing or call: the 2026-07-28 protocol is stateless, so nothing is kept open
between runs (each ``toolcrib ask`` is its own event loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from toolcrib.errors import ConfigError, MissingDependency, ToolcribError, ToolFailed, ToolUnavailable
from toolcrib.mcp.pins import Pin, PinStore, definition_hash, definition_of
from toolcrib.policy.policy import Policy
from toolcrib.policy.principal import Principal
from toolcrib.policy.scanner import PatternScanner, Scanner
from toolcrib.tools.grounding import Grounding
from toolcrib.tools.json_schema import json_schema_tool
from toolcrib.tools.registry import Offer, Registry
from toolcrib.tools.tool import Effect, Tool

if TYPE_CHECKING:
    from mcp import Client

    from toolcrib.config import MCPSection, MCPServerSection

T = TypeVar("T")
PinState = Literal["pinned", "new", "changed", "flagged"]
_TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}")  # toolcrib's (and MCP's) tool-name rule


def _sdk() -> Any:
    try:
        import mcp
    except ImportError:
        raise MissingDependency("MCP servers ([mcp.servers])", "mcp") from None
    return mcp


@dataclass(frozen=True)
class RemoteTool:
    """One tool as an MCP server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None

    @property
    def definition(self) -> dict[str, Any]:
        return definition_of(self.name, self.description, self.input_schema)


class MCPConnection:
    """How to reach one configured server: a stdio command started in the workspace folder (its
    stderr goes to ``<state>/mcp/NAME.log``), or a streamable-HTTP URL with a bearer token read from
    the environment variable ``token_env`` names."""

    def __init__(self, name: str, settings: MCPServerSection, root: Path, log_dir: Path) -> None:
        self.name = name
        self.settings = settings
        self.root = root
        self.log_dir = log_dir

    @property
    def where(self) -> str:
        s = self.settings
        return s.url if s.url else " ".join([s.command or "", *s.args])

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[Client]:
        mcp = _sdk()
        s = self.settings
        async with contextlib.AsyncExitStack() as stack:
            if s.command is not None:
                from mcp.client.stdio import stdio_client

                self.log_dir.mkdir(parents=True, exist_ok=True)
                errlog = stack.enter_context((self.log_dir / f"{self.name}.log").open("a", encoding="utf-8"))
                params = mcp.StdioServerParameters(command=s.command, args=list(s.args), env=dict(s.env) or None,
                                                   cwd=str(self.root))
                transport: Any = stdio_client(params, errlog=errlog)
            else:
                from mcp.client.streamable_http import streamable_http_client
                from mcp.shared._httpx_utils import create_mcp_http_client

                headers: dict[str, str] = {}
                if s.token_env:
                    token = os.environ.get(s.token_env)
                    if not token:
                        raise ConfigError(f"environment variable {s.token_env} (the bearer token for MCP server "
                                          f"'{self.name}') is not set", key=f"mcp.servers.{self.name}.token_env")
                    headers["Authorization"] = f"Bearer {token}"
                http = await stack.enter_async_context(create_mcp_http_client(headers=headers))
                transport = streamable_http_client(str(s.url), http_client=http)
            client = await stack.enter_async_context(mcp.Client(transport, cache=None))
            yield client

    async def list_tools(self) -> list[RemoteTool]:
        out: list[RemoteTool] = []
        async with self.client() as client:
            cursor: str | None = None
            for _ in range(100):  # a server that pages forever cannot hang the listing
                page = await client.list_tools(cursor=cursor)
                for t in page.tools:
                    ann = t.annotations
                    out.append(RemoteTool(t.name, t.description or "", dict(t.input_schema or {}),
                                          ann.read_only_hint if ann else None, ann.destructive_hint if ann else None))
                cursor = page.next_cursor
                if cursor is None:
                    break
        return out

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        """The tool's result as data: its structured content, else its text. A server that cannot be
        reached or answers something that is not a result is ``ToolUnavailable``; a result the server
        marks as an error is ``ToolFailed`` (its text goes to the trace only: it is untrusted)."""
        full = f"{self.name}.{tool}"
        try:
            async with self.client() as client:
                result = await client.call_tool(tool, dict(arguments))
        except ToolcribError:
            raise
        except Exception as exc:  # down, refused, broken pipe, malformed reply: one controlled error
            raise ToolUnavailable(f"{full} is unavailable: its MCP server '{self.name}' could not be reached or "
                                  "did not answer with a result; try again later or use another tool",
                                  internal=_describe(exc)) from None
        texts = [getattr(c, "text", f"[{getattr(c, 'type', 'content')}]") for c in result.content]
        if result.is_error:
            raise ToolFailed(f"{full} reported an error", internal="\n".join(texts)[:1000])
        if result.structured_content is not None:
            return result.structured_content
        return "\n".join(texts)


def _describe(exc: BaseException) -> str:
    """The first real cause inside task-group wrappers, short, for an operator's warning or the trace."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {str(exc)[:200]}"


def run_bounded(make: Callable[[], Coroutine[Any, Any, T]], timeout_s: float) -> T:
    """Run a coroutine to completion on its own event loop in a helper thread, within ``timeout_s``;
    callable from synchronous code whether or not an event loop is already running."""
    box: dict[str, Any] = {}

    async def bounded() -> T:
        async with asyncio.timeout(timeout_s):
            return await make()

    def work() -> None:
        try:
            box["value"] = asyncio.run(bounded())
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=work, name="toolcrib-mcp", daemon=True)
    thread.start()
    thread.join(timeout_s + 5.0)
    if thread.is_alive():
        raise TimeoutError(f"no answer within {timeout_s:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


@dataclass
class ToolState:
    """One listed tool: its pin state, effect class and, when usable or disabled, its Tool."""

    server: str
    remote: RemoteTool
    name: str  # NAME.tool
    effect: Effect
    state: PinState
    reason: str = ""  # why it is disabled
    pin: Pin | None = None
    tool: Tool | None = None

    @property
    def disabled(self) -> bool:
        return bool(self.reason)


@dataclass
class ServerState:
    name: str
    where: str
    tools: list[ToolState] = field(default_factory=list)
    error: str = ""  # why its tools are absent (down, slow, garbage)


@dataclass
class MCPTools:
    """What the configured servers contribute to a workspace."""

    servers: list[ServerState] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def tools(self) -> list[Tool]:
        return [s.tool for server in self.servers for s in server.tools if s.tool is not None]

    @property
    def disabled(self) -> dict[str, str]:
        return {s.name: s.reason for server in self.servers for s in server.tools if s.disabled}


def effect_for(configured: str | None, remote: RemoteTool) -> Effect:
    """The workspace's effect class (default WRITE); annotations only make it stricter: a server that
    says read-only does not make a tool READ, one that says destructive (or not read-only) makes a
    configured READ a WRITE."""
    effect = Effect(configured or "write")
    if effect is Effect.READ and (remote.destructive_hint is True or remote.read_only_hint is False):
        return Effect.WRITE
    return effect


def _judge(server: str, remote: RemoteTool, pins: Mapping[str, Pin], scanner: Scanner) -> tuple[PinState, str]:
    trust = f"review it with `toolcrib mcp trust {server}`"
    pin = pins.get(remote.name)
    if pin is not None and pin.hash != definition_hash(remote.definition):
        return "changed", (f"its definition changed since it was pinned (a tool that changes what it says or "
                           f"accepts is not used unseen); {trust}")
    flags = scanner.scan(remote.description)
    if flags and (pin is None or pin.by != "operator"):
        kinds = ", ".join(sorted({f.kind for f in flags}))
        return "flagged", f"its description was flagged as instruction-like ({kinds}); {trust}"
    return ("pinned", "") if pin is not None else ("new", "")


def _disabled_fn(name: str, reason: str) -> Callable[..., Any]:
    async def refuse(**_: Any) -> Any:
        raise ToolUnavailable(f"{name} is disabled: {reason}")
    return refuse


def _caller(connection: MCPConnection, tool: str) -> Callable[..., Any]:
    async def call(**arguments: Any) -> Any:
        return await connection.call(tool, arguments)
    return call


def connections(config: MCPSection, root: Path, state_dir: Path) -> dict[str, MCPConnection]:
    return {name: MCPConnection(name, s, root, state_dir / "mcp") for name, s in config.servers.items()}


def pin_store(state_dir: Path) -> PinStore:
    return PinStore(state_dir / "mcp" / "pins.json")


def assess(server: str, connection: MCPConnection, listed: list[RemoteTool], store: PinStore,
           scanner: Scanner, *, pin_new: bool = True) -> ServerState:
    """Each listed tool's pin state and Tool; tools seen for the first time (unflagged) are pinned."""
    state = ServerState(server, connection.where)
    pins = store.pins(server)
    new_pins: dict[str, Pin] = {}
    for remote in listed:
        name = f"{server}.{remote.name}"
        effect = effect_for(connection.settings.effects.get(remote.name), remote)
        if not _TOOL_NAME.fullmatch(name):
            state.tools.append(ToolState(server, remote, name, effect, "flagged",
                                         "its name is not a valid tool name (letters, digits, '_', '.', '-')"))
            continue
        verdict, reason = _judge(server, remote, pins, scanner)
        tool_state = ToolState(server, remote, name, effect, verdict, reason, pins.get(remote.name))
        if verdict == "new" and pin_new:
            new_pins[remote.name] = tool_state.pin = Pin.of(remote.definition, "first use")
        fn = _disabled_fn(name, reason) if reason else _caller(connection, remote.name)
        try:
            tool_state.tool = json_schema_tool(
                name, f"{remote.description} (MCP server {server})".strip(), remote.input_schema, fn,
                effect=effect, timeout_s=connection.settings.timeout_s, trusted=False)
        except ConfigError as exc:
            tool_state.reason = tool_state.reason or f"its input schema cannot be checked: {exc.message}"
        state.tools.append(tool_state)
    store.add(server, new_pins)
    return state


async def _list_all(conns: Mapping[str, MCPConnection], timeout_s: float) -> dict[str, list[RemoteTool] | str]:
    async def one(conn: MCPConnection) -> list[RemoteTool] | str:
        try:
            async with asyncio.timeout(timeout_s):
                return await conn.list_tools()
        except TimeoutError:
            return f"did not list its tools within {timeout_s:g}s (mcp.list_timeout_s)"
        except ToolcribError as exc:
            return str(exc)
        except Exception as exc:  # down or garbage: its tools are absent, the workspace still opens
            return f"could not list its tools ({_describe(exc)})"

    results = await asyncio.gather(*(one(c) for c in conns.values()))
    return dict(zip(conns, results, strict=True))


def list_servers(config: MCPSection, root: Path, state_dir: Path) -> dict[str, list[RemoteTool] | str]:
    """Every configured server's tools (or why not), listed in parallel within ``list_timeout_s``."""
    conns = connections(config, root, state_dir)
    if not conns:
        return {}
    _sdk()
    timeout = config.list_timeout_s
    try:
        # each server has its own bound; the SDK then gives a stdio server up to 2 s to exit before it
        # is terminated (and 2 s more before it is killed)
        return run_bounded(lambda: _list_all(conns, timeout), timeout + 5.0)
    except TimeoutError:
        late: dict[str, list[RemoteTool] | str] = dict.fromkeys(conns, f"did not list its tools within {timeout:g}s")
        return late


def load_mcp_tools(config: MCPSection, root: Path, state_dir: Path, scanner: Scanner | None = None,
                   *, pin_new: bool = True) -> MCPTools:
    """List, pin and build the tools of every configured server. Never hangs and never raises for a
    server that is down: its tools are absent, with a warning."""
    scanner = scanner or PatternScanner()
    conns = connections(config, root, state_dir)
    store = pin_store(state_dir)
    out = MCPTools()
    for name, listed in list_servers(config, root, state_dir).items():
        if isinstance(listed, str):
            out.servers.append(ServerState(name, conns[name].where, error=listed))
            out.warnings.append(f"MCP server '{name}' {listed}; its tools are not available")
            continue
        server = assess(name, conns[name], listed, store, scanner, pin_new=pin_new)
        out.servers.append(server)
        listed_names = {t.remote.name for t in server.tools}
        unknown = sorted(set(conns[name].settings.effects) - listed_names)
        if unknown:
            out.warnings.append(f"MCP server '{name}' lists no tool named {', '.join(unknown)} "
                                f"(mcp.servers.{name}.effects)")
        out.warnings += [f"MCP tool {t.name} is disabled: {t.reason}" for t in server.tools if t.disabled]
    return out


def warn(messages: list[str]) -> None:
    for message in messages:
        print(f"toolcrib: warning: {message}", file=sys.stderr)


class PinnedRegistry(Registry):
    """A registry that holds disabled MCP tools: never offered (withheld, with the reason), so the gate
    refuses a call to one as ``not_offered`` naming why."""

    def __init__(self, tools: Any = (), disabled: Mapping[str, str] | None = None) -> None:
        super().__init__(tools)
        self.disabled = dict(disabled or {})

    def offer(self, principal: Principal, policy: Policy, grounding: Grounding | None = None) -> Offer:
        offer = super().offer(principal, policy, grounding)
        held = {t.name: f"it is disabled: {self.disabled[t.name]}" for t in offer.tools if t.name in self.disabled}
        if not held:
            return offer
        return Offer(tuple(t for t in offer.tools if t.name not in held), {**offer.withheld, **held})

"""McpHub: every configured MCP server started together, their tools offered as io-tui tools.

The io-tui code makes its hubs in one place, ``core.run.mcp_hubs`` (``build_hub``, and
``McpHubs``: the hubs a process's runs share, which the operator's asks use too).

    async with McpHub(settings.mcp.servers) as hub:
        registry = harness_registry()
        hub.register_into(registry)
        ...  # runs call mcp__<server>__<tool> like any tool

A server that fails to start is a warning in ``hub.problems``; the others still work. Leaving the
hub closes every client and ends every server process.

``McpHub(servers, background=True)`` does not wait for its servers: a run gets their tools as
each becomes ready (``LateTools``: ``arrivals``, ``starting``, ``settle``), so one that hangs at
start costs a run at most ``ready_wait_s``, never its ``startup_timeout_s``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from io_tui.core.mcp.config import HttpServer, StdioServer
from io_tui.core.mcp.connection import (
    Connection,
    InProcessServer,
    ServerSource,
    StartError,
    State,
)
from io_tui.core.mcp.offered import PromptRow, ResourceRow
from io_tui.core.mcp.resources import (
    ListResources,
    ReadResource,
    ServerTool,
    contents_text,
    resource_target,
)
from io_tui.core.mcp.tools import McpTool, exposed_name, render_embedded
from io_tui.core.tools.base import ToolError
from io_tui.core.tools.late import Arrival
from io_tui.core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from mcp_types import ReadResourceResult


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as ``io-tui mcp list`` shows it."""

    name: str
    transport: str
    state: str
    error: str | None
    tools: tuple[McpTool | ServerTool, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "transport": self.transport,
            "state": self.state,
            "error": self.error,
            "tools": [tool_summary(tool) for tool in self.tools],
        }


class McpHub:
    """The MCP servers of one session (a CLI run, or the TUI's lifetime)."""

    def __init__(
        self,
        servers: Mapping[str, ServerSource],
        *,
        background: bool = False,
        ready_wait_s: float = 0.0,
        roots: Sequence[Path] = (),
    ) -> None:
        """``background``: entering the hub does not wait for the servers; each one's tools
        arrive (``arrivals``) as it becomes ready, and a run waits for them at most
        ``ready_wait_s`` from when they were started (``settle``). ``roots``: the workspace
        directories servers are told they may work in (``add_root`` adds one later)."""
        self._roots: list[Path] = list(roots)
        self._connections = {
            name: Connection(name, source, roots=self.roots)
            for name, source in servers.items()
            if source.enabled
        }
        self._disabled = [name for name, source in servers.items() if not source.enabled]
        self._background = background
        self._ready_wait_s = ready_wait_s
        self._tools: list[McpTool | ServerTool] = []
        self._problems: list[str] = []
        self._arrivals: list[Arrival] = []
        self._starting: dict[str, asyncio.Task[None]] = {}
        self._watchers: list[Callable[[Arrival], None]] = []
        self._started_at: float | None = None
        self._relisting: set[asyncio.Task[None]] = set()  # tool lists being fetched again

    async def __aenter__(self) -> McpHub:
        try:
            await self.start()
        except BaseException:
            await asyncio.shield(self.aclose())
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Start every enabled server concurrently; failures become ``problems``. Waits for all
        of them unless the hub is ``background``. Idempotent."""
        if self._started_at is not None:
            return
        self._started_at = time.monotonic()
        loop = asyncio.get_running_loop()
        for name, connection in self._connections.items():
            self._starting[name] = loop.create_task(
                self._start_one(connection), name=f"mcp-start:{name}"
            )
        if not self._background:
            await self.wait_all()

    async def wait_all(self) -> None:
        """Until every server is ready or has failed."""
        if self._starting:
            await asyncio.wait(set(self._starting.values()))

    async def wait_for(self, name: str) -> None:
        """Until server ``name`` is ready or has failed."""
        task = self._starting.get(name)
        if task is not None:
            await asyncio.wait({task})

    async def settle(self) -> None:
        """Wait for the servers still starting, until ``ready_wait_s`` after they were started."""
        if not self._starting or self._started_at is None:
            return
        left = self._started_at + self._ready_wait_s - time.monotonic()
        if left > 0:
            await asyncio.wait(set(self._starting.values()), timeout=left)

    async def _start_one(self, connection: Connection) -> None:
        source = _source(connection.name)
        try:
            await connection.start()
        except StartError as exc:
            arrival = Arrival(source, problem=str(exc))
        except Exception as exc:
            arrival = Arrival(source, problem=f"{source} failed to start: {exc}")
        else:
            tools = self._tools_of(connection)
            self._tools.extend(tools)
            arrival = Arrival(source, tuple(tools))
            connection.on_tools_changed = partial(self._tools_changed, connection)
        finally:
            self._starting.pop(connection.name, None)
        if arrival.problem is not None:
            self._problems.append(arrival.problem)
        self._announce(arrival)

    def _announce(self, arrival: Arrival) -> None:
        self._arrivals.append(arrival)
        for watcher in self._watchers:
            watcher(arrival)

    def roots(self) -> list[Path]:
        return list(self._roots)

    async def add_root(self, path: Path) -> None:
        """Offer ``path`` as a root too (a run in a new workspace); the servers are told."""
        if path in self._roots:
            return
        self._roots.append(path)
        await asyncio.gather(*(c.roots_changed() for c in self._connections.values()))

    async def prompts(self) -> list[PromptRow]:
        """Every ready server's prompts (a server that fails to list them is skipped)."""
        rows: list[PromptRow] = []
        for name, connection in self._connections.items():
            if connection.state is not State.READY:
                continue
            try:
                found = await connection.prompts()
            except ToolError:
                continue
            for prompt in found:
                arguments = tuple(
                    (a.name, bool(a.required), a.description or "") for a in prompt.arguments or ()
                )
                rows.append(PromptRow(name, prompt.name, prompt.description or "", arguments))
        return rows

    async def prompt_text(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """Prompt ``name`` of ``server`` filled with ``arguments``, its messages' text joined
        (a user message as it is; others under their role); ToolError if it fails."""
        connection = self._connections.get(server)
        if connection is None:
            raise ToolError(f"no MCP server named {server!r}")
        result = await connection.prompt(name, arguments)
        parts = []
        for message in result.messages:
            content = message.content
            text = getattr(content, "text", None)
            if text is None:
                resource = getattr(content, "resource", None)
                text = render_embedded(resource) if resource is not None else f"[{content.type}]"
            parts.append(text if message.role == "user" else f"({message.role}) {text}")
        return "\n\n".join(parts)

    def watch(self, callback: Callable[[Arrival], None]) -> None:
        """Call ``callback`` with each later arrival (a server ready, or failed to start)."""
        self._watchers.append(callback)

    async def aclose(self) -> None:
        """Stop the starts still going, close every client and end every server process
        (concurrently); never raises."""
        tasks = [*self._starting.values(), *self._relisting]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(
            *(connection.stop() for connection in self._connections.values()),
            return_exceptions=True,
        )

    def _tools_of(self, connection: Connection) -> list[McpTool | ServerTool]:
        """The server's tools, and its resource tools when it offers resources."""
        taken = {tool.name for tool in self._tools}
        tools: list[McpTool | ServerTool] = []
        for remote in connection.tools:
            name = exposed_name(connection.name, remote.name, taken)
            taken.add(name)
            tools.append(
                McpTool.make(
                    connection, remote.name, remote.description, remote.input_schema, name,
                    read_only=bool(remote.annotations and remote.annotations.read_only_hint),
                )
            )  # fmt: skip
        if any(connection.listed):  # it lists resources or templates: offer the tools
            for kind in (ListResources, ReadResource):
                name = exposed_name(connection.name, kind.remote_name, taken)
                taken.add(name)
                tools.append(kind.make(connection, name))
            connection.on_update = partial(self._resource_updated, connection.name)
        return tools

    def _tools_changed(self, connection: Connection) -> None:
        """The server says its tool list changed: list it again (not inside the handler of
        its notification) and announce the whole new list in place of the old."""
        task = asyncio.get_running_loop().create_task(self._relist(connection))
        self._relisting.add(task)
        task.add_done_callback(self._relisting.discard)

    async def _relist(self, connection: Connection) -> None:
        try:
            await connection.list_tools()
        except ToolError:
            return  # the server is in trouble: its calls will say so
        self._tools = [tool for tool in self._tools if tool.server.name != connection.name]
        tools = self._tools_of(connection)
        self._tools.extend(tools)
        self._announce(Arrival(_source(connection.name), tuple(tools), replaces=True))

    async def relisted(self) -> None:
        if self._relisting:
            await asyncio.wait(set(self._relisting))

    def _resource_updated(self, server: str, uri: str) -> None:
        arrival = Arrival(_source(server), updated=resource_target(server, uri))
        if not self._arrivals or self._arrivals[-1] != arrival:  # a server may repeat itself
            self._announce(arrival)

    # -- LateTools, for the runs that started before every server was ready --

    def arrivals(self) -> Sequence[Arrival]:
        return tuple(self._arrivals)

    def starting(self) -> tuple[str, ...]:
        return tuple(_source(name) for name in self._starting)

    @property
    def tools(self) -> tuple[McpTool | ServerTool, ...]:
        """The ready servers' tools, in the order the servers are configured."""
        order = {name: index for index, name in enumerate(self._connections)}
        return tuple(sorted(self._tools, key=lambda tool: order[tool.server.name]))

    @property
    def problems(self) -> tuple[str, ...]:
        """One line per server that failed to start (warnings: the other servers still work)."""
        return tuple(self._problems)

    @property
    def disabled(self) -> tuple[str, ...]:
        return tuple(self._disabled)

    def register_into(self, registry: ToolRegistry) -> None:
        """Add every MCP tool to ``registry`` (after the built-ins, so they are listed last)."""
        for tool in self.tools:
            registry.register(tool)

    async def resources(self) -> list[ResourceRow]:
        """Every ready server's resources, then its templates, as the resource browser lists
        them; a server that fails to list is one row saying why."""
        rows: list[ResourceRow] = []
        for name, connection in self._connections.items():
            if connection.state is not State.READY or not connection.offers("resources"):
                continue
            try:
                found, templates = await connection.resources()
            except ToolError as exc:
                rows.append(ResourceRow(name, "error", "", str(exc)))
                continue
            rows += [
                ResourceRow(name, "resource", str(r.uri), r.name, r.mime_type, r.description)
                for r in found
            ]
            rows += [
                ResourceRow(name, "template", t.uri_template, t.name, t.mime_type, t.description)
                for t in templates
            ]
        return rows

    async def read(self, server: str, uri: str) -> ReadResourceResult:
        """Resource ``uri`` of ``server`` (the operator's read: no policy); ToolError."""
        connection = self._connections.get(server)
        if connection is None:
            raise ToolError(f"no MCP server named {server!r}")
        return await connection.read(uri)

    async def read_resource(self, server: str, uri: str) -> str:
        """Resource ``uri`` of ``server`` as text (the operator's read: no policy); ToolError."""
        return contents_text(await self.read(server, uri)) or f"(resource {uri} is empty)"

    def statuses(self) -> list[ServerStatus]:
        by_server: dict[str, list[McpTool | ServerTool]] = {name: [] for name in self._connections}
        for tool in self._tools:
            by_server[tool.server.name].append(tool)
        return [
            ServerStatus(
                name,
                _transport(connection.source),
                connection.state.value,
                connection.error,
                tuple(by_server[name]),
            )
            for name, connection in self._connections.items()
        ]


def tool_summary(tool: McpTool | ServerTool) -> dict[str, Any]:
    """Name, description's first line, and arguments as ``name: type`` (``*`` = required)."""
    schema = tool.schema if isinstance(tool, McpTool) else tool.spec().parameters
    properties: dict[str, Any] = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    arguments = [
        f"{key}{'*' if key in required else ''}: {_type_name(spec)}"
        for key, spec in properties.items()
    ]
    return {
        "name": tool.name,
        "remote_name": tool.remote_name,
        "description": tool.description.splitlines()[0] if tool.description else "",
        "arguments": arguments,
        "schema": schema,
    }


def _type_name(spec: Any) -> str:
    if not isinstance(spec, dict):
        return "any"
    kind = spec.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array" and isinstance(spec.get("items"), dict):
        return f"array[{_type_name(spec['items'])}]"
    if "enum" in spec:
        return "|".join(repr(v) for v in spec["enum"][:6])
    return str(kind or ("object" if "properties" in spec else "any"))


def _source(name: str) -> str:
    return f"MCP server '{name}'"


def _transport(source: ServerSource) -> str:
    if isinstance(source, StdioServer):
        return "stdio"
    if isinstance(source, HttpServer):
        return "http"
    assert isinstance(source, InProcessServer)
    return "in-process"

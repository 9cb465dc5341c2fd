"""McpHub: every configured MCP server started together, their tools offered as io-tui tools.

    async with McpHub(settings.mcp.servers) as hub:
        registry = harness_registry()
        hub.register_into(registry)
        ...  # runs call mcp__<server>__<tool> like any tool

A server that fails to start is a warning in ``hub.problems``; the others still work. Leaving the
hub closes every client and ends every server process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from io_tui.core.mcp.config import HttpServer, StdioServer
from io_tui.core.mcp.connection import Connection, InProcessServer, ServerSource, StartError, State
from io_tui.core.mcp.tools import McpTool, exposed_name
from io_tui.core.tools.registry import ToolRegistry


@dataclass(frozen=True, slots=True)
class ServerStatus:
    """One server as ``io-tui mcp list`` shows it."""

    name: str
    transport: str
    state: str
    error: str | None
    tools: tuple[McpTool, ...]

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

    def __init__(self, servers: Mapping[str, ServerSource]) -> None:
        self._connections = {
            name: Connection(name, source) for name, source in servers.items() if source.enabled
        }
        self._disabled = [name for name, source in servers.items() if not source.enabled]
        self._tools: list[McpTool] = []
        self._problems: list[str] = []
        self._started = False

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
        """Start every enabled server concurrently; failures become ``problems``. Idempotent."""
        if self._started:
            return
        self._started = True
        connections = list(self._connections.values())
        results = await asyncio.gather(
            *(connection.start() for connection in connections), return_exceptions=True
        )
        for connection, result in zip(connections, results, strict=True):
            if isinstance(result, StartError):
                self._problems.append(str(result))
            elif isinstance(result, BaseException):
                self._problems.append(f"MCP server '{connection.name}' failed to start: {result}")
        self._tools = self._build_tools()

    async def aclose(self) -> None:
        """Close every client and end every server process (concurrently); never raises."""
        await asyncio.gather(
            *(connection.stop() for connection in self._connections.values()),
            return_exceptions=True,
        )

    def _build_tools(self) -> list[McpTool]:
        tools: list[McpTool] = []
        taken: set[str] = set()
        for connection in self._connections.values():
            if connection.state is not State.READY:
                continue
            for remote in connection.tools:
                name = exposed_name(connection.name, remote.name, taken)
                taken.add(name)
                tools.append(
                    McpTool.make(
                        connection, remote.name, remote.description, remote.input_schema, name
                    )
                )
        return tools

    @property
    def tools(self) -> tuple[McpTool, ...]:
        return tuple(self._tools)

    @property
    def problems(self) -> tuple[str, ...]:
        """One line per server that failed to start (warnings: the other servers still work)."""
        return tuple(self._problems)

    @property
    def disabled(self) -> tuple[str, ...]:
        return tuple(self._disabled)

    def register_into(self, registry: ToolRegistry) -> None:
        """Add every MCP tool to ``registry`` (after the built-ins, so they are listed last)."""
        for tool in self._tools:
            registry.register(tool)

    def statuses(self) -> list[ServerStatus]:
        by_server: dict[str, list[McpTool]] = {name: [] for name in self._connections}
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


async def open_hub(servers: Mapping[str, ServerSource]) -> McpHub:
    """A started hub. Close it with ``await hub.aclose()`` (or use it as ``async with``)."""
    hub = McpHub(servers)
    return await hub.__aenter__()


def tool_summary(tool: McpTool) -> dict[str, Any]:
    """Name, description's first line, and arguments as ``name: type`` (``*`` = required)."""
    properties: dict[str, Any] = tool.schema.get("properties") or {}
    required = set(tool.schema.get("required") or [])
    arguments = [
        f"{key}{'*' if key in required else ''}: {_type_name(spec)}"
        for key, spec in properties.items()
    ]
    return {
        "name": tool.name,
        "remote_name": tool.remote_name,
        "description": tool.description.splitlines()[0] if tool.description else "",
        "arguments": arguments,
        "schema": tool.schema,
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


def _transport(source: ServerSource) -> str:
    if isinstance(source, StdioServer):
        return "stdio"
    if isinstance(source, HttpServer):
        return "http"
    assert isinstance(source, InProcessServer)
    return "in-process"

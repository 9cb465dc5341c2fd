"""One MCP server's connection: start it, call its tools, notice a crash or a hang, restart it.

The SDK's ``Client`` holds anyio task groups, which must be entered and left by one task. So each
connection has an owner task that opens the client, hands it over, and closes it when told to (or
when the transport dies under it); calls are made from any task through the handed-over client.

A crash (the connection closed under a call) fails that call with a ``ServerError`` naming the
server and quoting its last stderr lines (the model reads them framed as data, as it reads every
error text of the server's own); the next call restarts the server once (a failed restart is retried by
later calls, at most MAX_RESTARTS times in a row). A call that outlives
``call_timeout_s`` is cancelled and reported; the server stays up, unless it timed out twice in a
row, in which case it is restarted before the next call.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import tempfile
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

from io_tui.core.errors import ServerError
from io_tui.core.mcp.config import HttpServer, McpConfigError, StdioServer
from io_tui.core.tools.base import ToolError

if TYPE_CHECKING:
    from mcp import Client
    from mcp_types import (
        CallToolResult,
        ReadResourceResult,
        Resource,
        ResourceTemplate,
        ServerCapabilities,
        Tool as RemoteTool,
    )

    from io_tui.core.mcp.tools import Progress, Sampler

T = TypeVar("T")

MAX_RESTARTS = 3
STOP_TIMEOUT_S = 10.0
STDERR_TAIL_CHARS = 600
# what the SDK itself says, with CONNECTION_CLOSED, when the transport is lost
# (mcp.shared.jsonrpc_dispatcher, mcp.client.streamable_http)
TRANSPORT_LOST = frozenset(
    {
        "Connection closed",
        "SSE stream ended without a response",
        "SSE stream ended and reconnection attempts were exhausted",
    }
)
LIST_PAGES_CAP = 100
HTTP_CONNECT_TIMEOUT_S = 30.0
# a server's sampling or form request mid-call: the operator's wait ends this long (at most a
# tenth of call_timeout_s) before the call's, so the answer reaches the server and is recorded
ANSWER_MARGIN_S = 1.0


class State(StrEnum):
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    CRASHED = "crashed"
    FAILED = "failed"


class StartError(Exception):
    """The server could not be started; the message is one line for the operator."""


@dataclass(frozen=True)
class InProcessServer:
    """A ``mcp.server.mcpserver.MCPServer`` (or low-level ``Server``) served in this process.

    For tests and for embedding harness-owned tools; not loadable from TOML.
    """

    server: Any
    enabled: bool = True
    startup_timeout_s: float = 30.0
    call_timeout_s: float = 120.0


ServerSource = StdioServer | HttpServer | InProcessServer


@dataclass
class Connection:
    """The live link to one server. ``name`` is the config name (unsanitized)."""

    name: str
    source: ServerSource
    state: State = State.STOPPED
    error: str | None = None
    restarts: int = 0
    tools: list[RemoteTool] = field(default_factory=list)
    capabilities: ServerCapabilities | None = None  # what the ready server offers
    listed: tuple[list[Resource], list[ResourceTemplate]] = ([], [])  # its resources at start
    subscribed: set[str] = field(default_factory=set)  # resources whose updates it sends
    on_update: Callable[[str], None] | None = None  # told of each resource update heard
    on_tools_changed: Callable[[], None] | None = None  # told when it says its tools changed
    roots: Callable[[], list[Path]] | None = None  # the directories offered as roots
    _client: Client | None = None
    _owner: asyncio.Task[None] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _stderr: TextIO | None = None  # the server's stderr, never the terminal the TUI draws on
    _opened: bool = False  # the owner task has handed over a connected client
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _timeouts_in_a_row: int = 0
    # the calls in flight that can answer a sampling request, each with the loop time its
    # call_timeout_s ends (one: it answers; more: whose it is cannot be told, so it is refused
    # rather than put to the wrong run's operator)
    _samplers: list[tuple[Sampler, float]] = field(default_factory=list)

    # -- lifecycle --

    async def start(self) -> None:
        """Open the server and list its tools within ``startup_timeout_s``; StartError if not."""
        await self._close_owner()
        self.state, self.error = State.STARTING, None
        self._stop = asyncio.Event()
        if isinstance(self.source, StdioServer):
            # Closed by _close_owner, after the server has exited.
            self._stderr = tempfile.TemporaryFile(  # noqa: SIM115
                "w+", encoding="utf-8", errors="replace"
            )
        ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self._opened = False
        self._owner = asyncio.create_task(self._own(ready), name=f"mcp:{self.name}")
        timeout = self.source.startup_timeout_s
        try:
            async with asyncio.timeout(timeout):
                client = await ready
                tools = await _list_tools(client)
                listed = await _list_resources(client)
        except TimeoutError:
            await self._fail(f"did not start within {timeout:g}s (startup_timeout_s)")
        except McpConfigError as exc:
            await self._fail(str(exc))
        except Exception as exc:
            await self._fail(_describe(exc, self._stderr_tail(), command=self._command()))
        except asyncio.CancelledError:
            await asyncio.shield(self._close_owner())  # never leave a half-started process
            self.state = State.STOPPED
            raise
        else:
            self._client, self.tools, self.listed = client, tools, listed
            self.capabilities = client.server_capabilities
            self.subscribed = set()  # a restarted server has forgotten them
            self.state = State.READY
            self._timeouts_in_a_row = 0

    async def stop(self) -> None:
        """Close the client and end the server process; never raises."""
        await self._close_owner()
        if self.state is not State.FAILED:
            self.state = State.STOPPED

    async def _fail(self, reason: str) -> None:
        await self._close_owner()
        self.state, self.error = State.FAILED, reason
        raise StartError(f"MCP server '{self.name}' failed to start: {reason}")

    async def _own(self, ready: asyncio.Future[Client]) -> None:
        """The owner task: open the client, hand it over, keep it open until told to stop."""
        try:
            async with AsyncExitStack() as stack:
                client = await self._open(stack)
                if ready.done():
                    return  # start() gave up waiting
                ready.set_result(client)
                self._opened = True
                await self._stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else StartError("cancelled"))
            elif not self._stop.is_set():
                # The transport died under a ready client (an HTTP server went away).
                self.state = State.CRASHED
                self.error = _describe(exc, self._stderr_tail())
            if not isinstance(exc, Exception):
                raise

    async def _open(self, stack: AsyncExitStack) -> Client:
        from mcp import Client, StdioServerParameters
        from mcp.client.stdio import stdio_client
        from mcp.client.streamable_http import streamable_http_client

        source = self.source
        hooks: dict[str, Any] = {
            "message_handler": self._on_message,
            "sampling_callback": self._sample,
            "elicitation_callback": self._elicit,
        }
        if self.roots is not None:
            hooks["list_roots_callback"] = self._list_roots
        if isinstance(source, InProcessServer):
            client = Client(source.server, **hooks)
        elif isinstance(source, StdioServer):
            params = StdioServerParameters(
                command=source.command,
                args=list(source.args),
                env=source.resolved_env() or None,
                cwd=source.cwd,
            )
            errlog = self._stderr if self._stderr is not None else sys.stderr
            client = Client(stdio_client(params, errlog=errlog), **hooks)
        else:
            import httpx2

            http = httpx2.AsyncClient(
                headers=source.resolved_headers(),
                # read: the SDK's default for an idle server-to-client SSE stream, or longer
                timeout=httpx2.Timeout(
                    HTTP_CONNECT_TIMEOUT_S, read=max(300.0, source.call_timeout_s + 30)
                ),
            )
            await stack.enter_async_context(http)
            client = Client(streamable_http_client(source.url, http_client=http), **hooks)
        return await stack.enter_async_context(client)

    async def _list_roots(self, context: Any) -> Any:
        """``roots/list``: the workspaces (``file://`` URIs) the hub says, at the time asked."""
        from mcp_types import ListRootsResult, Root

        paths = self.roots() if self.roots is not None else []
        roots = [Root.model_validate({"uri": p.resolve().as_uri(), "name": p.name}) for p in paths]
        return ListRootsResult(roots=roots)

    async def roots_changed(self) -> None:
        """Tell a ready server the roots changed (it asks ``roots/list`` again); never raises."""
        client = self._client
        if self.state is State.READY and client is not None:
            with contextlib.suppress(Exception), warnings.catch_warnings():
                # servers of the protocol versions that have roots take it (the SDK warns that
                # later versions dropped it)
                warnings.filterwarnings("ignore", "The roots capability is deprecated")
                await client.send_roots_list_changed()

    async def prompts(self) -> list[Any]:
        """The server's prompts (none when it offers none)."""
        if not self.offers("prompts"):
            return []
        return await self._request(
            "prompts/list",
            lambda client: _pages(lambda cursor: client.list_prompts(cursor=cursor), "prompts"),
        )

    async def prompt(self, name: str, arguments: dict[str, str]) -> Any:
        return await self._request(
            f"prompt {name}", lambda client: client.get_prompt(name, arguments or None)
        )

    async def _on_message(self, message: Any) -> None:
        """The server's notifications: a subscribed resource's update, a changed tool list."""
        from mcp_types import ResourceUpdatedNotification, ToolListChangedNotification

        if isinstance(message, ResourceUpdatedNotification) and self.on_update is not None:
            self.on_update(str(message.params.uri))
        elif isinstance(message, ToolListChangedNotification) and self.on_tools_changed:
            self.on_tools_changed()

    async def list_tools(self) -> list[RemoteTool]:
        """The server's tools listed again (after it said they changed); ToolError if not."""
        self.tools = await self._request("tools/list", _list_tools)
        return self.tools

    async def _close_owner(self) -> None:
        owner, self._owner, self._client = self._owner, None, None
        if owner is not None:
            self._stop.set()
            if not self._opened:
                owner.cancel()  # still connecting: nothing to close politely
            done, _ = await asyncio.wait({owner}, timeout=STOP_TIMEOUT_S)
            if not done:
                owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # -- calls --

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        sampler: Sampler | None = None,
    ) -> CallToolResult:
        """Call ``tool``; every failure is a ToolError the model can read. ``progress`` hears
        the server's progress notifications on the call (asking for them gives it a token);
        ``sampler`` answers its sampling requests while the call lasts."""
        deadline = asyncio.get_running_loop().time() + self.source.call_timeout_s
        entries = [] if sampler is None else [(sampler, deadline)]
        self._samplers += entries
        try:
            return await self._request(
                tool, lambda client: client.call_tool(tool, arguments, progress_callback=progress)
            )
        finally:
            for entry in entries:
                self._samplers.remove(entry)

    def _asker(self, what: str) -> tuple[Sampler, float] | str:
        """The one run's call in flight that answers a ``what`` request and how long its
        operator may take (what is left of the call's ``call_timeout_s``, less the time the
        answer needs to reach the server and be recorded), or why no call answers."""
        if not self._samplers:
            return f"io-tui answers {what} only during a call"
        if len(self._samplers) > 1:
            return f"io-tui cannot tell which of its calls in flight asks: {what} refused"
        sampler, deadline = self._samplers[0]
        margin = min(ANSWER_MARGIN_S, self.source.call_timeout_s / 10)
        return sampler, max(0.0, deadline - asyncio.get_running_loop().time() - margin)

    async def _sample(self, context: Any, params: Any) -> Any:
        """``sampling/createMessage``: put to the run whose call is in flight (its policy, its
        operator, its provider); refused when no run's call is."""
        from mcp_types import CreateMessageResult, ErrorData, TextContent

        from io_tui.core.mcp.sampling import SAMPLING, SamplingAsk
        from io_tui.core.mcp.tools import exposed_name

        asker = self._asker("sampling")
        if isinstance(asker, str):
            return ErrorData(code=-32600, message=asker)
        sampler, wait_s = asker
        messages = tuple(
            (m.role, getattr(m.content, "text", None) or f"[{m.content.type} content]")
            for m in params.messages
        )
        ask = SamplingAsk(
            self.name, exposed_name(self.name, SAMPLING), messages, params.system_prompt,
            params.max_tokens, wait_s,
        )  # fmt: skip
        try:
            text = await sampler(ask)
        except Exception as exc:  # the server hears why; the call goes on
            return ErrorData(code=-1, message=f"io-tui refused the sampling request: {exc}")
        return CreateMessageResult(
            role="assistant",
            content=TextContent(type="text", text=text),
            model="io-tui",
            stop_reason="endTurn",
        )

    async def _elicit(self, context: Any, params: Any) -> Any:
        """``elicitation/create``: a form put to the operator of the run whose call is in flight
        (``core.mcp.elicitation``); a URL-mode request is declined (io-tui opens no browser)."""
        from mcp_types import ElicitResult, ErrorData

        from io_tui.core.mcp.elicitation import ELICITATION, ElicitAsk
        from io_tui.core.mcp.tools import exposed_name

        asker = self._asker("elicitation")
        if isinstance(asker, str):
            return ErrorData(code=-32600, message=asker)
        sampler, wait_s = asker
        if getattr(params, "mode", "form") != "form":
            return ElicitResult(action="decline")
        schema = params.requested_schema if isinstance(params.requested_schema, dict) else {}
        target = exposed_name(self.name, ELICITATION)
        ask = ElicitAsk(self.name, target, params.message, schema, wait_s)
        try:
            answer = await sampler(ask)
        except Exception:  # the operator could not be asked: the server hears a cancel
            return ElicitResult(action="cancel")
        return ElicitResult(action=answer.action, content=answer.content)

    async def resources(self) -> tuple[list[Resource], list[ResourceTemplate]]:
        """The server's resources and resource templates now (none when it offers none)."""
        if not self.offers("resources"):
            return [], []
        return await self._request("resources/list", _list_resources)

    async def read(self, uri: str) -> ReadResourceResult:
        """Read resource ``uri``; subscribe to its updates when the server offers them."""
        result = await self._request(f"read {uri}", lambda client: client.read_resource(uri))
        if self.offers("subscribe") and uri not in self.subscribed:
            self.subscribed.add(uri)
            with contextlib.suppress(ToolError), warnings.catch_warnings():
                # the read stands; updates are a bonus. Servers of the protocol versions that
                # offer subscribe take it (the SDK warns that later versions dropped it)
                warnings.filterwarnings("ignore", "resources/subscribe is removed")
                await self._request(f"subscribe {uri}", lambda c: c.subscribe_resource(uri))
        return result

    def offers(self, what: str) -> bool:
        """Whether the ready server offers ``resources``, ``subscribe`` or ``prompts``."""
        caps = self.capabilities
        if caps is None:
            return False
        if what == "subscribe":
            return bool(caps.resources and caps.resources.subscribe)
        return getattr(caps, what, None) is not None

    async def _request(self, what: str, op: Callable[[Client], Awaitable[T]]) -> T:
        """``op`` on the ready client within ``call_timeout_s``; every failure a ToolError."""
        client = await self._ready_client()
        timeout = self.source.call_timeout_s
        stderr_mark = self._stderr_size()
        try:
            async with asyncio.timeout(timeout):
                result = await op(client)
        except TimeoutError:
            self._timeouts_in_a_row += 1
            again = self._timeouts_in_a_row >= 2
            if again:
                self.state, self.error = State.CRASHED, "timed out twice in a row"
            raise ToolError(
                f"MCP server '{self.name}' timed out: {what} did not answer within {timeout:g}s "
                "(call_timeout_s); the call was cancelled. "
                + (
                    "It will be restarted before the next call."
                    if again
                    else "The server is still running."
                )
            ) from None
        except Exception as exc:
            raise self._call_failed(what, exc, stderr_mark) from None
        self._timeouts_in_a_row = 0
        self.restarts = 0
        return result

    def _call_failed(self, tool: str, exc: Exception, stderr_mark: int) -> ToolError:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        if isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT:
            return ServerError(
                f"MCP server '{self.name}' timed out on {tool}", exc.message, self.name
            )
        # the SDK's own error when the transport closes; a server's answer with the same code
        # (JSON-RPC's first "server error" code, which servers use for their own failures) says
        # something else and comes from a server that is up
        if isinstance(exc, MCPError) and not (
            exc.code == CONNECTION_CLOSED and exc.message in TRANSPORT_LOST
        ):
            return ServerError(f"MCP server '{self.name}' refused {tool}", exc.message, self.name)
        if isinstance(exc, ValidationError):
            return ToolError(f"MCP server '{self.name}' sent a malformed result for {tool}")
        self.state = State.CRASHED
        self.error = _describe(exc, self._stderr_tail(since=stderr_mark))
        return ServerError(
            f"MCP server '{self.name}' crashed during the {tool!r} call. The call may or may not "
            "have taken effect; the server will be restarted on the next call. What it reported",
            self.error,
            self.name,
        )

    async def _ready_client(self) -> Client:
        async with self._lock:
            if self.state is State.READY and self._owner is not None and self._owner.done():
                self.state = State.CRASHED  # the owner ended on its own: the transport died
                self.error = self.error or "the connection closed"
            if self.state is State.CRASHED:
                await self._restart()
            if self.state is State.FAILED:
                raise ServerError(
                    f"MCP server '{self.name}' is unavailable", self.error or "", self.name
                )
            if self.state is not State.READY or self._client is None:
                raise ToolError(f"MCP server '{self.name}' is not running ({self.state.value})")
            return self._client

    async def _restart(self) -> None:
        """One restart attempt after a crash. A failed attempt leaves the server crashed, so the
        next call tries again, up to MAX_RESTARTS attempts without a successful call between."""
        crash = self.error
        if self.restarts >= MAX_RESTARTS:
            await self._close_owner()
            self.state = State.FAILED
            self.error = f"{crash}; gave up after {MAX_RESTARTS} restarts"
            return
        self.restarts += 1
        try:
            await self.start()
        except StartError:
            reason = self.error
            self.state, self.error = State.CRASHED, crash
            raise ServerError(
                f"MCP server '{self.name}' crashed earlier and could not be restarted",
                f"the crash: {crash}; the restart: {reason}",
                self.name,
            ) from None

    # -- diagnostics --

    def _command(self) -> str | None:
        return self.source.command if isinstance(self.source, StdioServer) else None

    def _stderr_size(self) -> int:
        stream = self._stderr
        if stream is None or stream.closed:
            return 0
        try:
            return os.fstat(stream.fileno()).st_size
        except (OSError, ValueError):
            return 0

    def _stderr_tail(self, since: int = 0) -> str:
        """The server's last few stderr lines (written after byte ``since``), on one line."""
        stream = self._stderr
        if stream is None or stream.closed:
            return ""
        try:
            stream.seek(max(since, self._stderr_size() - STDERR_TAIL_CHARS * 4))
            text = stream.read()
        except (OSError, ValueError):
            return ""
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(lines[-3:])[-STDERR_TAIL_CHARS:]


async def _list_tools(client: Client) -> list[RemoteTool]:
    return await _pages(lambda cursor: client.list_tools(cursor=cursor), "tools")


async def _list_resources(client: Client) -> tuple[list[Resource], list[ResourceTemplate]]:
    """Resources and templates of a server that offers resources; none if listing them fails
    (the server's tools still work)."""
    if client.server_capabilities.resources is None:
        return [], []
    try:
        found = await _pages(lambda cursor: client.list_resources(cursor=cursor), "resources")
        templates = await _pages(
            lambda cursor: client.list_resource_templates(cursor=cursor), "resource_templates"
        )
    except Exception:
        return [], []
    return found, templates


async def _pages(fetch: Callable[[str | None], Awaitable[Any]], field: str) -> list[Any]:
    """Every item of a paginated list (at most LIST_PAGES_CAP pages)."""
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(LIST_PAGES_CAP):
        page = await fetch(cursor)
        items.extend(getattr(page, field))
        cursor = page.next_cursor
        if not cursor:
            break
    return items


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _describe(exc: BaseException, stderr: str, *, command: str | None = None) -> str:
    """One line: what went wrong, and the server's last stderr lines when there are any."""
    leaf = _leaf(exc)
    if isinstance(leaf, FileNotFoundError) and command is not None:
        text = f"command not found: {command!r} (is it installed and on PATH?)"
    elif isinstance(leaf, PermissionError) and command is not None:
        text = f"command not executable: {command!r}"
    else:
        message = str(leaf).strip().splitlines()
        text = message[0] if message else type(leaf).__name__
        if text in ("Connection closed", "") or isinstance(leaf, asyncio.CancelledError):
            text = "the server process exited or closed the connection"
        elif type(leaf).__name__ not in ("MCPError", "ToolError"):
            text = f"{type(leaf).__name__}: {text}"
    return f"{text}; stderr: {stderr}" if stderr else text

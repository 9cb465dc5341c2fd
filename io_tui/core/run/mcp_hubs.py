"""Where MCP hubs are made: ``build_hub`` (every hub, for every caller), ``registry_with`` (a
hub for as long as a block lasts), and ``McpHubs``: the hubs of one process's runs, which the
operator's asks (the TUI's prompts and resource browser) are answered from too.

A server is a process with state (a login, an index, a cache), so an app starts each one once,
in the process that drives its runs: the harness worker, or the app itself with ``[ui]
harness = "inline"``. The servers of a workspace are the ones a run there gets
(``configured_servers``: the settings', the user's ``mcp.json``, the workspace's
``.mcp.json``), for a run and for the operator alike.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, TypeVar

from io_tui.core.authority.policy import Act, Effect, Policy
from io_tui.core.mcp.config import McpConfigError
from io_tui.core.mcp.offered import ASK_TIMEOUT_S, Offered, PromptRow, ResourceRow
from io_tui.core.run.harness import harness_registry
from io_tui.core.run.origin import configured_servers, servers_to_resume, without_secrets
from io_tui.core.run.settings import RunSettings, policy_for
from io_tui.core.tools.base import ToolError
from io_tui.core.tools.registry import ToolRegistry

if TYPE_CHECKING:
    from io_tui.core.mcp.config import FoundServers
    from io_tui.core.mcp.connection import ServerSource
    from io_tui.core.mcp.hub import McpHub
    from io_tui.core.store import Store
    from io_tui.core.tools.late import Arrival

T = TypeVar("T")


async def admit_workspace_servers(
    store: Store | None, found: FoundServers, policy: Policy
) -> tuple[FoundServers, list[str]]:
    """``found`` with its workspace ``.mcp.json``'s servers only when the operator trusted that
    file's exact content (its digest, in ``store``, for this workspace) and ``policy`` does not
    deny starting each (an ``exec`` of its command line); the lines saying what was left out.

    Every host that starts a run or answers the operator's asks comes through here, so an
    untrusted file never starts anything, in the TUI, a queued run, ACP or the CLI."""
    if not found.from_workspace or found.workspace_file is None:
        return found, []
    workspace = str(found.workspace_file.parent.resolve())
    trusted = await store.trust.get(workspace, found.workspace_digest) if store else None
    names = ", ".join(found.from_workspace)
    if trusted is None:
        said = (
            f"{found.workspace_file} is not trusted (digest {found.workspace_digest[:12]}): its MCP"
            f" servers ({names}) were not started; review it, then trust it with `io-tui mcp trust"
            f" -w {workspace}` or from the TUI's palette"
        )
        return found.untrusted(), [said]
    servers = dict(found.servers)
    said_lines: list[str] = []
    for name, entry in found.from_workspace.items():
        line = server_command_line(entry)
        if not line:
            continue
        verdict = policy.explain(Act.EXEC, line)
        if verdict.effect is Effect.DENY:
            servers.pop(name, None)
            if name in found.without_workspace:
                servers[name] = found.without_workspace[name]
            said_lines.append(
                f"MCP server {name} from {found.workspace_file} not started: {verdict.explain()}"
            )
    kept = {n: e for n, e in found.from_workspace.items() if servers.get(n) is e}
    return dataclasses.replace(found, servers=servers, from_workspace=kept), said_lines


def server_command_line(entry: object) -> str:
    """What starting a stdio server runs, as the exec policy matches it; "" for other kinds."""
    command = getattr(entry, "command", None)
    if not command:
        return ""
    return shlex.join([PurePath(command).name or command, *getattr(entry, "args", [])])


def build_hub(
    servers: Mapping[str, ServerSource],
    *,
    ready_wait_s: float | None = None,
    roots: Sequence[Path] = (),
    watch: Callable[[Arrival], None] | None = None,
) -> McpHub:
    """A hub of ``servers``, to enter (``async with``). With ``ready_wait_s`` its servers start
    in the background and a run waits for them at most that long; without, entering it waits
    for every one. ``roots``: the workspaces the servers are told of. ``watch`` hears each
    server's arrival (ready, or failed to start) as it happens."""
    from io_tui.core.mcp.hub import McpHub  # the MCP SDK loads only when there are servers

    hub = McpHub(
        servers, background=ready_wait_s is not None, ready_wait_s=ready_wait_s or 0.0, roots=roots
    )
    if watch is not None:
        hub.watch(watch)
    return hub


@asynccontextmanager
async def registry_with(
    servers: Mapping[str, ServerSource], notice: Callable[[str], None]
) -> AsyncIterator[ToolRegistry]:
    """The built-in tools and, while the block lasts, the MCP tools of ``servers``, all started
    before it begins (a resumed call may need its tool at once). A start that fails, or a
    server's problem, is a ``notice``: the run goes on with the tools it has."""
    registry = harness_registry()
    if not servers:
        yield registry
        return
    async with AsyncExitStack() as stack:
        try:
            hub = await stack.enter_async_context(build_hub(servers))
        except Exception as exc:
            notice(f"MCP servers not started: {exc}")
        else:
            for problem in hub.problems:
                notice(problem)
            hub.register_into(registry)
        yield registry


class McpHubs:
    """The MCP servers of one process's runs (the app's harness worker, or the app itself).

    The settings' servers and the user's ``mcp.json`` are one shared hub, started by ``start``
    (or the first that needs it). A run whose servers differ (its workspace's ``.mcp.json`` adds
    some; a resumed run started elsewhere) gets a hub of its set, started with the first run or
    ask that needs it and kept for the next. Every hub lives until ``aclose``. Notices (a
    server that did not start, a workspace file's servers) go to ``notice``.

    The operator's asks (``prompts``, ``prompt_text``, ``resources``, ``read``) are about the
    servers a run in a workspace gets, from the same hubs; each answers within its
    ``timeout_s`` (default ``ask_timeout_s``) or fails with a ToolError saying so (a hung
    server never hangs the app).
    """

    def __init__(
        self,
        settings: RunSettings,
        notice: Callable[[str], None],
        store: Store | None = None,
    ) -> None:
        self.settings = settings
        self.notice = notice
        self.store = store  # where trusted workspace .mcp.json digests are kept
        self.ask_timeout_s = ASK_TIMEOUT_S  # an operator's ask answers within this, or fails
        self.servers: dict[str, ServerSource] = {}  # the shared hub's, once it started
        self._problems: list[str] = []  # the user's mcp.json, when it did not load
        self._shared: asyncio.Future[McpHub | None] | None = None
        self._hubs: dict[str, asyncio.Future[McpHub | None]] = {}  # by their set of servers
        self._exit = AsyncExitStack()
        self._closed = False

    # -- the runs' hubs --

    def start(self) -> None:
        """Start the shared hub's servers in the background now (the first run need not wait
        for them to be launched); idempotent."""
        if self._shared is None:
            self._shared = asyncio.ensure_future(self._open_shared())

    async def shared(self) -> McpHub | None:
        """The hub of the settings' servers and the user's ``mcp.json``; None without any."""
        self.start()
        assert self._shared is not None
        return await asyncio.shield(self._shared)

    async def for_run(
        self, found: FoundServers, workspace: Path, notices: Sequence[str] = ()
    ) -> McpHub | None:
        """The hub of a run in ``workspace`` with ``found``'s servers (``prepare_run``'s);
        ``workspace`` becomes one of its roots. ``notices`` (what ``prepare_run`` left out of a
        workspace ``.mcp.json``, and why) are said."""
        for line in notices:
            self.notice(line)
        hub = await self._hub_of(found.servers, workspace, found.announcement())
        if hub is not None:
            await hub.add_root(workspace)
        return hub

    def registry(self, hub: McpHub | None) -> ToolRegistry:
        """The built-in tools, and ``hub``'s (those ready by now; late ones join the run)."""
        registry = harness_registry()
        if hub is not None:
            hub.register_into(registry)
        return registry

    async def resume_registry(self, store: Store, run_id: int | None) -> ToolRegistry:
        """The tools for resuming ``run_id``: the MCP servers it started with (the shared ones
        unless it started elsewhere or under other settings), every one ready or failed, since a
        paused call may need its tool at once."""
        hub = await self.shared()
        row = await store.runs.get(run_id) if run_id is not None else None
        if row is not None:
            servers, notice = await servers_to_resume(store, row.id, self.servers)
            if notice:
                self.notice(notice)
            hub = await self._hub_of(servers, Path(row.workspace))
            if hub is not None:
                await hub.add_root(Path(row.workspace))
        if hub is not None:
            await hub.wait_all()
        return self.registry(hub)

    # -- the operator's asks: what a workspace's servers offer --

    async def prompts(
        self, workspace: Path | None, timeout_s: float | None = None
    ) -> Offered[PromptRow]:
        """Every prompt of the servers a run in ``workspace`` gets."""

        async def listed() -> Offered[PromptRow]:
            hub, problems = await self._for_operator(workspace)
            rows = await hub.prompts() if hub is not None else []
            return Offered(tuple(rows), _count(hub), problems)

        return await self._bounded(listed(), "listing the MCP servers' prompts", timeout_s)

    async def prompt_text(
        self,
        workspace: Path | None,
        server: str,
        name: str,
        arguments: dict[str, str],
        timeout_s: float | None = None,
    ) -> str:
        """Prompt ``server/name`` filled with ``arguments``, its messages' text; ToolError."""

        async def filled() -> str:
            hub, _ = await self._for_operator(workspace)
            if hub is None:
                raise ToolError("no MCP servers are configured")
            return await hub.prompt_text(server, name, arguments)

        return await self._bounded(filled(), f"getting the prompt {server}/{name}", timeout_s)

    async def resources(
        self, workspace: Path | None, timeout_s: float | None = None
    ) -> Offered[ResourceRow]:
        """Every resource and template of the servers a run in ``workspace`` gets."""

        async def listed() -> Offered[ResourceRow]:
            hub, problems = await self._for_operator(workspace)
            rows = await hub.resources() if hub is not None else []
            return Offered(tuple(rows), _count(hub), problems)

        return await self._bounded(listed(), "listing the MCP servers' resources", timeout_s)

    async def read(
        self, workspace: Path | None, server: str, uri: str, timeout_s: float | None = None
    ) -> str:
        """Resource ``uri`` of ``server`` as text (the operator's read: no policy); ToolError."""

        async def read() -> str:
            hub, _ = await self._for_operator(workspace)
            if hub is None:
                raise ToolError("no MCP servers are configured")
            return await hub.read_resource(server, uri)

        return await self._bounded(read(), f"reading {uri} of {server}", timeout_s)

    async def aclose(self) -> None:
        """Stop every hub's servers; later asks and runs get none."""
        self._closed = True
        await self._exit.aclose()

    # -- the hubs --

    async def _open_shared(self) -> McpHub | None:
        from io_tui.core.mcp.config import user_servers
        from io_tui.paths import config_dir

        servers, problems = user_servers(self.settings.mcp.servers, config_dir())
        for problem in problems:
            self.notice(problem)
        self._problems = problems
        self.servers = servers
        return await self._open(servers)

    async def _hub_of(
        self,
        servers: Mapping[str, ServerSource],
        workspace: Path | None,
        announcement: str | None = None,
    ) -> McpHub | None:
        """The hub of exactly ``servers``: the shared one when they are its, else one of their
        own (with ``announcement`` said when it starts)."""
        shared = await self.shared()
        if without_secrets(servers) == without_secrets(self.servers):
            return shared
        key = json.dumps({name: repr(server) for name, server in servers.items()}, sort_keys=True)
        if key not in self._hubs:
            if announcement is not None:
                self.notice(announcement)
            roots = (workspace,) if workspace is not None else ()
            self._hubs[key] = asyncio.ensure_future(self._open(dict(servers), roots))
        return await asyncio.shield(self._hubs[key])

    async def _open(
        self, servers: dict[str, ServerSource], roots: tuple[Path, ...] = ()
    ) -> McpHub | None:
        """A hub of ``servers`` starting in the background, open until ``aclose``; None when
        there are none, the hubs are closed, or it cannot start (a notice)."""
        if not servers or self._closed:
            return None
        hub = build_hub(
            servers, ready_wait_s=self.settings.mcp.ready_wait_s, roots=roots, watch=self._problem
        )
        try:
            return await self._exit.enter_async_context(hub)
        except Exception as exc:  # the runs go on with the built-in tools
            self.notice(f"MCP servers not started: {exc}")
            return None

    def _problem(self, arrival: Arrival) -> None:
        """A server that failed to start, told when it happens."""
        if arrival.problem is not None:
            self.notice(arrival.problem)

    async def _for_operator(self, workspace: Path | None) -> tuple[McpHub | None, tuple[str, ...]]:
        """The hub a run in ``workspace`` gets, every server in it ready or failed, and the
        problems to show: a file that does not load (then the shared hub answers), a server
        that did not start."""
        problems = list(self._problems)
        hub = await self.shared()
        if workspace is not None:
            try:
                found = configured_servers(self.settings, workspace)
            except McpConfigError as exc:
                problems.append(str(exc))
            else:
                found, untrusted = await self._admitted(found)
                problems += untrusted
                hub = await self._hub_of(found.servers, workspace, found.announcement())
        if hub is not None:
            await hub.wait_all()
            problems += hub.problems
        return hub, tuple(dict.fromkeys(problems))

    async def _admitted(self, found: FoundServers) -> tuple[FoundServers, list[str]]:
        """``admit_workspace_servers`` under the settings' policy; with a policy file that does
        not load, none of the workspace's servers (what they may start cannot be checked)."""
        try:
            policy = policy_for(self.settings)
        except ValueError as exc:
            return found.untrusted(), [f"{found.workspace_file}'s servers not started: {exc}"]
        return await admit_workspace_servers(self.store, found, policy)

    async def _bounded(self, work: Awaitable[T], what: str, timeout_s: float | None) -> T:
        """``work`` within ``timeout_s`` (default ``ask_timeout_s``); a ToolError saying what did
        not answer when it takes longer (a server that hangs, or is still starting)."""
        limit = self.ask_timeout_s if timeout_s is None else timeout_s
        try:
            async with asyncio.timeout(limit):
                return await work
        except TimeoutError:
            raise ToolError(
                f"{what}: no answer within {limit:g}s (an MCP server is hung or still starting)"
            ) from None


def _count(hub: McpHub | None) -> int:
    return len(hub.statuses()) if hub is not None else 0


__all__ = [
    "McpHubs",
    "admit_workspace_servers",
    "build_hub",
    "registry_with",
    "server_command_line",
]

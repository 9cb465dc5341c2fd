"""The MCP servers of a command that starts them (``run``, ``mcp``, ``decide``, ``resume``,
``acp``, ``worker``): which ones (``mcp_servers``, as every run in a workspace gets them:
``configured_servers``), the ``--mcp-config`` option, and a started hub.

Servers come from, lowest precedence first: the config file's ``[mcp.servers.NAME]`` (or
``[mcpServers.NAME]``) tables, the user's ``mcp.json`` in the config dir, the workspace's
``.mcp.json``, and ``--mcp-config FILE`` (JSON or TOML); a name given twice takes the later
entry.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.cli.common import UsageError, open_store
from io_tui.config import ConfigError, Settings, load_settings
from io_tui.core import McpConfigError, configured_servers

if TYPE_CHECKING:
    from io_tui.core import FoundServers, McpHub, Policy, ServerSource, Store, ToolRegistry


async def command_servers(args: Any) -> dict[str, ServerSource]:
    """The servers of an ``io-tui mcp`` command: the config's with ``args.workspace``'s
    ``.mcp.json`` (once trusted) and ``args.mcp_config``'s; UsageError for a config that does
    not load."""
    try:
        settings = load_settings()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    found = found_servers(settings, args.mcp_config, Path(args.workspace))
    if not found.from_workspace:
        return found.servers
    from io_tui.core import policy_for

    try:
        policy = policy_for(settings)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return await admitted(args, found, policy)


def found_servers(settings: Settings, path: Path | None, workspace: Path | None) -> FoundServers:
    """``configured_servers`` for ``workspace``, its ``.mcp.json`` marked; UsageError if a file
    does not load."""
    try:
        return configured_servers(settings, workspace, path)
    except McpConfigError as exc:
        raise UsageError(str(exc)) from None


async def admitted(args: Any, found: FoundServers, policy: Policy) -> dict[str, ServerSource]:
    """``found``'s servers, the workspace ``.mcp.json``'s only when the operator trusted its
    content (``io-tui mcp trust``; the digests are in the store, which this never creates) and
    the policy does not deny starting them; what is left out, and what it starts, on stderr."""
    if found.from_workspace:
        from io_tui.core import admit_workspace_servers

        store = await existing_store(args)
        try:
            found, said = await admit_workspace_servers(store, found, policy)
        finally:
            if store is not None:
                await store.close()
        for line in said:
            sys.stderr.write(f"io-tui: {line}\n")
    if (announcement := found.announcement()) is not None:
        sys.stderr.write(f"io-tui: {announcement}\n")
    return found.servers


async def existing_store(args: Any) -> Store | None:
    """The store, when there is one (None: nothing has been trusted yet)."""
    from io_tui.core import StoreError

    try:
        return await open_store(args)
    except (UsageError, StoreError):
        return None


def mcp_servers(
    settings: Settings, path: Path | None, workspace: Path | None = None
) -> dict[str, ServerSource]:
    """The servers to start, as every run gets them (``configured_servers``): the config
    file's, the user's ``mcp.json``, the workspace's ``.mcp.json`` (announced on stderr with
    what it starts, since it came with the workspace) and ``path``'s over them. UsageError if
    a file does not load."""
    try:
        found = configured_servers(settings, workspace, path)
    except McpConfigError as exc:
        raise UsageError(str(exc)) from None
    if (announcement := found.announcement()) is not None:
        sys.stderr.write(f"io-tui: {announcement}\n")
    return found.servers


@asynccontextmanager
async def opened_hub(
    servers: dict[str, ServerSource],
    *,
    ready_wait_s: float | None = None,
    roots: tuple[Path, ...] = (),
) -> AsyncIterator[McpHub | None]:
    """A started hub for a headless command, its problems warned on stderr; None if no servers.

    With ``ready_wait_s`` (``io-tui run``) the servers start in the background: a run waits for
    them at most that long, takes each one's tools when it is ready, and a failure is warned when
    it happens. Without (``decide``, ``resume``: a paused call needs its tool now) all are awaited.
    ``roots``: the workspace, offered to the servers as their root.
    """
    if not servers:
        yield None
        return
    from io_tui.core import build_hub

    async with build_hub(
        servers, ready_wait_s=ready_wait_s, roots=roots, watch=_warn_problem
    ) as hub:
        yield hub


def _warn_problem(arrival: Any) -> None:
    if arrival.problem is not None:
        sys.stderr.write(f"io-tui: warning: {arrival.problem}\n")


def tool_registry(hub: McpHub | None) -> ToolRegistry:
    """The built-in tools, plus the hub's MCP tools when there is a hub."""
    from io_tui.core import harness_registry  # the harness loads only for commands that run

    registry = harness_registry()
    if hub is not None:
        hub.register_into(registry)
    return registry

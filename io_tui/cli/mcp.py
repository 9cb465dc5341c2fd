"""``io-tui mcp list``: start the configured MCP servers, show their tools, report problems.

Servers come from, lowest precedence first: the config file's ``[mcp.servers.NAME]`` (or
``[mcpServers.NAME]``) tables, the user's ``mcp.json`` in the config dir, the workspace's
``.mcp.json``, and ``--mcp-config FILE`` (JSON or TOML); a name given twice takes the later
entry. ``io-tui run`` uses the same helpers.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_json
from io_tui.config import ConfigError, Settings, load_settings
from io_tui.core import McpConfigError, configured_servers

if TYPE_CHECKING:
    from io_tui.core import McpHub, ServerSource, ToolRegistry


def register(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="MCP servers: start them and list their tools")
    actions = mcp.add_subparsers(dest="mcp_action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list", help="start every configured server, list its tools (exit 1 if one failed)"
    )
    add_mcp_config_option(listing)
    listing.add_argument(
        "--workspace", "-w", default=".", help="whose .mcp.json to read (default: here)"
    )
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=list_command)


def add_mcp_config_option(parser: Any) -> None:
    parser.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help='servers to add: JSON {"mcpServers": …} or TOML [mcp.servers.NAME] tables',
    )


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
    from io_tui.core import McpHub

    background = ready_wait_s is not None
    hub = McpHub(servers, background=background, ready_wait_s=ready_wait_s or 0.0, roots=roots)
    hub.watch(_warn_problem)
    async with hub:
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


async def list_command(args: argparse.Namespace) -> int:
    try:
        settings = load_settings()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    servers = mcp_servers(settings, args.mcp_config, Path(args.workspace))
    if not servers:
        if args.json:
            print_json({"servers": [], "problems": [], "disabled": []})
        else:
            print(
                "no MCP servers configured: add [mcp.servers.NAME] tables, or an mcpServers"
                " .mcp.json (see docs/MCP.md)"
            )
        return EXIT_OK
    from io_tui.core import McpHub

    async with McpHub(servers) as hub:
        statuses = hub.statuses()
        problems, disabled = hub.problems, hub.disabled
    if args.json:
        print_json(
            {
                "servers": [status.to_json() for status in statuses],
                "problems": list(problems),
                "disabled": list(disabled),
            }
        )
    else:
        for status in statuses:
            data = status.to_json()
            if status.error:
                print(f"{status.name} ({status.transport}): {status.state}: {status.error}")
                continue
            print(f"{status.name} ({status.transport}): {status.state}, {len(status.tools)} tools")
            for tool in data["tools"]:
                print(f"  {tool['name']}({', '.join(tool['arguments'])})")
                if tool["description"]:
                    print(f"      {tool['description']}")
        for name in disabled:
            print(f"{name}: disabled")
        if problems:
            print(f"{len(problems)} of {len(statuses)} servers failed to start")
    return EXIT_FAILED if problems else EXIT_OK

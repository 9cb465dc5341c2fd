"""``io-tui mcp resources [SERVER]``, ``io-tui mcp read SERVER URI``, ``io-tui mcp prompts
[SERVER]``: what the configured MCP servers offer besides tools, for the operator (docs/MCP.md).

Each starts the servers ``io-tui run`` would (or only SERVER), asks, prints and stops them. The
operator's reads are not policy-checked (a run's are: ``read`` on ``mcp:SERVER:URI``). An unknown
server is a usage error (exit 2); a server that fails to start, a URI it does not have, or a
resource it cannot list is one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, UsageError, print_json
from io_tui.cli.mcp_setup import command_servers

if TYPE_CHECKING:
    from io_tui.core import McpHub

NONE_CONFIGURED = (
    "no MCP servers configured: add [mcp.servers.NAME] tables, or an mcpServers .mcp.json"
    " (see docs/MCP.md)"
)


@asynccontextmanager
async def _started(args: argparse.Namespace) -> AsyncIterator[McpHub | None]:
    """Every configured server started (or only ``args.server``), each that failed warned on
    stderr; None when none is configured. UsageError for a server not configured."""
    servers = await command_servers(args)
    if args.server is not None:
        if args.server not in servers:
            known = ", ".join(sorted(servers)) or "none"
            raise UsageError(f"no MCP server named {args.server!r} (configured: {known})")
        servers = {args.server: servers[args.server]}
    if not servers:
        yield None
        return
    from io_tui.core import build_hub

    async with build_hub(servers) as hub:
        for problem in hub.problems:
            sys.stderr.write(f"io-tui: {problem}\n")
        for name in hub.disabled:
            sys.stderr.write(f"io-tui: MCP server {name!r} is disabled\n")
        yield hub


def _failed(hub: McpHub | None) -> bool:
    return hub is not None and bool(hub.problems or hub.disabled)


async def resources_command(args: argparse.Namespace) -> int:
    async with _started(args) as hub:
        rows = await hub.resources() if hub is not None else []
        failed = _failed(hub)
    errors = [row for row in rows if row.kind == "error"]
    listed = [row for row in rows if row.kind != "error"]
    for row in errors:
        sys.stderr.write(f"io-tui: {row.server}: cannot list resources: {row.name}\n")
    if args.json:
        print_json({"resources": [dataclasses.asdict(row) for row in listed]})
    elif hub is None:
        print(NONE_CONFIGURED)
    elif not listed and not errors and not failed:
        print(f"{args.server or 'no server'} offers no resources")
    for server in dict.fromkeys(row.server for row in listed) if not args.json else ():
        mine = [row for row in listed if row.server == server]
        templates = sum(row.kind == "template" for row in mine)
        print(f"{server}: {len(mine) - templates} resources, {templates} templates")
        for row in mine:
            mime = f" ({row.mime_type})" if row.mime_type else ""
            kind = "  template" if row.kind == "template" else ""
            print(f"  {row.uri}  {row.name}{mime}{kind}")
            if row.description:
                print(f"      {row.description.strip().splitlines()[0]}")
    return EXIT_FAILED if failed or errors else EXIT_OK


async def read_command(args: argparse.Namespace) -> int:
    from io_tui.core import ToolError, contents_plain

    async with _started(args) as hub:
        if hub is None or _failed(hub):
            return EXIT_FAILED
        try:
            result = await hub.read(args.server, args.uri)
        except ToolError as exc:
            sys.stderr.write(f"io-tui: {exc}\n")  # names the server, the URI and why
            return EXIT_FAILED
    contents = contents_plain(result)
    if args.json:
        print_json({"server": args.server, "uri": args.uri, "contents": contents})
        return EXIT_OK
    if not contents:
        sys.stderr.write(f"io-tui: {args.server}: resource {args.uri} is empty\n")
    for content in contents:
        text = content.get("text", content.get("summary", ""))
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    return EXIT_OK


async def prompts_command(args: argparse.Namespace) -> int:
    async with _started(args) as hub:
        rows = await hub.prompts() if hub is not None else []
        failed = _failed(hub)
    if args.json:
        print_json(
            {
                "prompts": [
                    {
                        "server": row.server,
                        "name": row.name,
                        "description": row.description,
                        "arguments": [
                            {"name": name, "required": required, "description": about}
                            for name, required, about in row.arguments
                        ],
                    }
                    for row in rows
                ]
            }
        )
    elif hub is None:
        print(NONE_CONFIGURED)
    elif not rows and not failed:
        print(f"{args.server or 'no server'} offers no prompts")
    for row in rows if not args.json else ():
        names = ", ".join(f"{name}{'*' if required else ''}" for name, required, _ in row.arguments)
        print(f"{row.server}/{row.name}({names})")
        if row.description:
            print(f"    {row.description.strip().splitlines()[0]}")
        for name, required, about in row.arguments:
            if about:
                print(f"      {name}{' (required)' if required else ''}: {about}")
    return EXIT_FAILED if failed else EXIT_OK

"""``io-tui mcp list``: start the configured MCP servers, show their tools, report problems;
``io-tui mcp resources | read | prompts`` (``mcp_browse``): what they offer besides tools.

The servers are those ``io-tui run`` starts (``mcp_setup.mcp_servers``).
"""

from __future__ import annotations

import argparse
from typing import Any

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, print_json
from io_tui.cli.mcp_browse import NONE_CONFIGURED, prompts_command, read_command, resources_command
from io_tui.cli.mcp_setup import add_mcp_config_option, command_servers


def register(sub: Any) -> None:
    mcp = sub.add_parser(
        "mcp", help="MCP servers: start them, list their tools, resources and prompts"
    )
    actions = mcp.add_subparsers(dest="mcp_action", metavar="ACTION", required=True)
    listing = actions.add_parser(
        "list", help="start every configured server, list its tools (exit 1 if one failed)"
    )
    resources = actions.add_parser(
        "resources", help="list the resources and resource templates of every server, or SERVER's"
    )
    resources.add_argument("server", nargs="?", metavar="SERVER")
    reading = actions.add_parser(
        "read", help="print resource URI of SERVER (binary contents as a one-line summary)"
    )
    reading.add_argument("server", metavar="SERVER")
    reading.add_argument("uri", metavar="URI")
    prompts = actions.add_parser(
        "prompts",
        help="list the prompts of every server, or SERVER's: name, description, arguments",
    )
    prompts.add_argument("server", nargs="?", metavar="SERVER")
    handlers = {
        listing: list_command,
        resources: resources_command,
        reading: read_command,
        prompts: prompts_command,
    }
    for parser, handler in handlers.items():
        add_mcp_config_option(parser)
        parser.add_argument(
            "--workspace", "-w", default=".", help="whose .mcp.json to read (default: here)"
        )
        parser.add_argument("--json", action="store_true")
        parser.set_defaults(handler=handler)


async def list_command(args: argparse.Namespace) -> int:
    servers = command_servers(args)
    if not servers:
        if args.json:
            print_json({"servers": [], "problems": [], "disabled": []})
        else:
            print(NONE_CONFIGURED)
        return EXIT_OK
    from io_tui.core import build_hub

    async with build_hub(servers) as hub:
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

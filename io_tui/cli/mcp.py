"""``io-tui mcp list``: start the configured MCP servers, show their tools, report problems;
``io-tui mcp resources | read | prompts`` (``mcp_browse``): what they offer besides tools.

The servers are those ``io-tui run`` starts (``mcp_setup.mcp_servers``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from io_tui.cli.common import EXIT_FAILED, EXIT_OK, UsageError, add_mcp_config_option, print_json
from io_tui.cli.mcp_browse import NONE_CONFIGURED, prompts_command, read_command, resources_command
from io_tui.cli.mcp_setup import command_servers


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
    trust = actions.add_parser(
        "trust",
        help="trust the workspace's .mcp.json as it is now (its digest): its servers start in"
        " later runs there; a changed file is untrusted again",
    )
    trust.add_argument("--revoke", action="store_true", help="forget every trusted digest of it")
    trust.add_argument(
        "--workspace", "-w", default=".", help="whose .mcp.json to trust (default: here)"
    )
    trust.add_argument("--json", action="store_true")
    trust.set_defaults(handler=trust_command)
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
    servers = await command_servers(args)
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


async def trust_command(args: argparse.Namespace) -> int:
    """Trust (or forget) the workspace's ``.mcp.json`` by its digest, saying what it starts."""
    from io_tui.cli.common import open_store
    from io_tui.cli.mcp_setup import found_servers
    from io_tui.config import ConfigError, load_settings
    from io_tui.core import operator, server_command_line, shown_name

    try:
        settings = load_settings()
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    workspace = _directory(Path(args.workspace))
    store = await open_store(args, create=not args.revoke)
    try:
        if args.revoke:
            count = await store.trust.revoke(str(workspace))
            if args.json:
                print_json({"workspace": str(workspace), "revoked": count})
            else:
                print(f"forgot {count} trusted .mcp.json digest(s) of {shown_name(str(workspace))}")
            return EXIT_OK
        found = found_servers(settings, None, workspace)
        if found.workspace_file is None or not found.from_workspace:
            print(f"io-tui: no .mcp.json with servers in {shown_name(str(workspace))}")
            return EXIT_FAILED
        await store.trust.trust(str(workspace), found.workspace_digest, operator("cli"))
    finally:
        await store.close()
    starts = {
        name: server_command_line(e) or str(getattr(e, "url", ""))
        for name, e in found.from_workspace.items()
    }
    if args.json:
        print_json(
            {"file": str(found.workspace_file), "digest": found.workspace_digest, "servers": starts}
        )
        return EXIT_OK
    print(f"trusted {shown_name(str(found.workspace_file))} (digest {found.workspace_digest[:12]})")
    for name, line in starts.items():
        print(f"  {name}: {line}")
    return EXIT_OK


def _directory(path: Path) -> Path:
    resolved = path.resolve()
    if not resolved.is_dir():
        raise UsageError(f"not a directory: {resolved}")
    return resolved

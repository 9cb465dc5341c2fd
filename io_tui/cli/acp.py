"""``io-tui acp``: io-tui's harness as an Agent Client Protocol agent on stdin/stdout, for Zed,
Toad and other ACP clients (docs/ACP.md). Each prompt is an ordinary run in the store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from io_tui.cli.common import add_mcp_config_option, add_store_option, open_store
from io_tui.cli.mcp_setup import found_servers, mcp_servers
from io_tui.cli.run import add_run_settings_options, policy_from, provider_from, settings_from


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "acp",
        help="speak the Agent Client Protocol on stdio (for Zed, Toad, …)",
        description="io-tui's harness as an Agent Client Protocol agent on stdin/stdout: point"
        " an editor's agent server setting at `io-tui acp` (docs/ACP.md). Each prompt is an"
        " ordinary run in the store, which the cockpit shows live.",
    )
    add_run_settings_options(parser)
    parser.add_argument(
        "--log", type=Path, metavar="FILE", help="the whole log, tracebacks included"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="log everything to stderr")
    add_mcp_config_option(parser)
    add_store_option(parser)
    parser.set_defaults(handler=acp_command)


async def acp_command(args: argparse.Namespace) -> int:
    from io_tui.acp.server import configure_logging, serve

    configure_logging(args.log, args.verbose)
    settings = settings_from(args)
    # a bad provider, policy or --mcp-config fails here, as a usage error, before any client
    # waits on it
    await provider_from(settings).aclose()
    policy_from(settings)
    mcp_servers(settings, args.mcp_config)
    store = await open_store(args, create=True, check=True)
    try:
        return await serve(
            store, settings, lambda cwd: found_servers(settings, args.mcp_config, cwd)
        )
    finally:
        await store.close()

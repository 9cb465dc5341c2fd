"""The ``io-tui`` command: the TUI by default, headless subcommands beside it (DESIGN §4).

Each subcommand module exposes ``register(subparsers)`` and sets ``handler`` (an async function
taking the parsed args and returning an exit code). The UI is imported lazily, only when used.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence

from io_tui import __version__
from io_tui.cli.common import EXIT_FAILED, EXIT_USAGE, UsageError, add_store_option

SUBCOMMAND_MODULES = (
    "io_tui.cli.run",
    "io_tui.cli.trace",
    "io_tui.cli.approvals",
    "io_tui.cli.rules",
    "io_tui.cli.memory",
    "io_tui.cli.config",
    "io_tui.cli.mcp",
    "io_tui.cli.ui",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"io-tui: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="io-tui", description="A terminal cockpit for coding-agent runs.")
    parser.add_argument("--version", action="version", version=f"io-tui {__version__}")
    add_store_option(parser)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue  # a subcommand not built yet
            raise
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        try:
            from io_tui.cli.ui import open_app
        except ModuleNotFoundError:
            parser.print_help()
            return EXIT_USAGE
        handler = open_app
    try:
        outcome = handler(args)  # async handlers, or sync ones that run their own loop (serve)
        return int(asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome)
    except UsageError as exc:
        sys.stderr.write(f"io-tui: {exc}\n")
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("io-tui: interrupted\n")
        return EXIT_FAILED

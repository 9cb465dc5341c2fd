"""The ``io-tui`` command: the TUI by default, headless subcommands beside it (DESIGN §4).

Each subcommand module exposes ``register(subparsers)`` and sets ``handler`` (an async function
taking the parsed args and returning an exit code). Only the module of the command given is
imported (``COMMANDS``), and the UI only when it opens: ``io-tui --version`` loads no harness.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from io_tui import __version__
from io_tui.cli.common import (
    EXIT_FAILED,
    EXIT_PIPE_CLOSED,
    EXIT_USAGE,
    UsageError,
    add_show_escapes_option,
    add_store_option,
)
from io_tui.cli.terminal import guarded

COMMANDS = {  # command → the module that registers it (imported only when it runs)
    "run": "io_tui.cli.run",
    "demo": "io_tui.cli.ui",
    "trace": "io_tui.cli.trace",
    "approvals": "io_tui.cli.approvals",
    "decide": "io_tui.cli.approvals",
    "resume": "io_tui.cli.resume",
    "cancel": "io_tui.cli.cancel",
    "rewind": "io_tui.cli.rewind",
    "checkpoints": "io_tui.cli.rewind",
    "fork": "io_tui.cli.fork",
    "whatif": "io_tui.cli.whatif",
    "worker": "io_tui.cli.worker",
    "workers": "io_tui.cli.worker",
    "rules": "io_tui.cli.rules",
    "memory": "io_tui.cli.memory",
    "config": "io_tui.cli.config",
    "providers": "io_tui.cli.config",
    "mcp": "io_tui.cli.mcp",
    "serve": "io_tui.cli.ui",
    "acp": "io_tui.cli.acp",
    "hooks": "io_tui.cli.hooks",
}
# what ``io-tui --help`` says of each command, kept here so listing them imports none; each
# module registers its command with the same words (tests/cli/test_cli_imports.py checks)
SUMMARIES = {
    "run": "run one task headless",
    "demo": "the bundled demo task (the TUI, or --headless)",
    "trace": "the full trace of a run",
    "approvals": "pending approval requests across all runs",
    "decide": "decide a pending request and resume its run",
    "resume": "continue an interrupted run under the same id",
    "cancel": "cancel a paused, interrupted or queued run: its pending requests are denied",
    "rewind": "restore a run's workspace to before a step (or undo the last rewind)",
    "checkpoints": "a run's workspace checkpoints, or prune a workspace's",
    "fork": "start a new run from a step of a run, with the context that step had",
    "whatif": "send a recorded request again with its context changed; never executed",
    "worker": "drain the run queue: claim, drive, give back",
    "workers": "the workers serving the queue",
    "rules": "remembered approval rules: list or revoke",
    "memory": "list and edit what agents remember",
    "config": "where the config file is, and the merged settings",
    "providers": "probe the provider presets (or one endpoint) and list the models each serves",
    "mcp": "MCP servers: start them, list their tools, resources and prompts",
    "serve": "the TUI in a browser (textual-serve, 127.0.0.1 only)",
    "acp": "speak the Agent Client Protocol on stdio (for Zed, Toad, …)",
    "hooks": "Claude Code-style hooks: list, trust a workspace's",
}
RAW_TERMINAL = {"serve", "acp"}  # they own the terminal or speak a protocol on stdout


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"io-tui: {message}\n")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser for ``argv``: only the module of the command given (none for the app), so a
    command imports what it uses only; for help or an unknown word, the commands listed by
    their summaries (no module imported); every command's whole parser when ``argv`` is None."""
    parser = _Parser(prog="io-tui", description="A terminal cockpit for coding-agent runs.")
    parser.add_argument("--version", action="version", version=f"io-tui {__version__}")
    add_store_option(parser)
    add_show_escapes_option(parser)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, metavar="COMMAND")
    modules = _modules_for(argv)
    if modules is None:
        for command, summary in SUMMARIES.items():
            sub.add_parser(command, help=summary)
    else:
        for name in dict.fromkeys(modules):
            importlib.import_module(name).register(sub)
    _store_everywhere(parser)
    return parser


def _store_everywhere(parser: argparse.ArgumentParser) -> None:
    """``--store`` on every command and action that does not declare it (``mcp list``,
    ``config``, ``providers``), so it can be given after any of them, as before them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                _store_everywhere(child)
    if "--store" not in parser._option_string_actions:
        add_store_option(parser)
    if "--show-escapes" not in parser._option_string_actions:
        add_show_escapes_option(parser)


def _modules_for(argv: Sequence[str] | None) -> list[str] | None:
    """The command modules ``argv`` needs: its command's, none for the app, every one when
    ``argv`` is None; None when only the list of commands is shown (help, an unknown word)."""
    if argv is None:
        return list(COMMANDS.values())
    words = iter(argv)
    for word in words:
        if word in ("-h", "--help"):
            return None
        if word == "--store":
            next(words, None)  # its value
        elif not word.startswith("-"):
            return [COMMANDS[word]] if word in COMMANDS else None
    return []  # no command: the app


def entry() -> NoReturn:
    """The ``io-tui`` command (and ``python -m io_tui``): ``main``, then the process exits.
    The command closed what it opened; what it made lives until the exit, so the collector's
    last pass need not walk it (``gc.freeze``: 10–20 ms of a 100–150 ms command)."""
    code = main()
    gc.freeze()
    raise SystemExit(code)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        try:
            from io_tui.cli.ui import open_app
        except ModuleNotFoundError:
            parser.print_help()
            return EXIT_USAGE
        handler = open_app
    raw = args.command is None or args.command in RAW_TERMINAL
    show = bool(getattr(args, "show_escapes", False))
    try:
        with contextlib.nullcontext() if raw else guarded(show=show):
            outcome = handler(args)  # async handlers, or sync ones that run their own loop
            code = int(asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome)
            sys.stdout.flush()  # what is still buffered: a reader gone is met here, not at exit
        return code
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        return _reader_gone()
    except UsageError as exc:
        sys.stderr.write(f"io-tui: {exc}\n")
        return EXIT_USAGE
    except Exception as exc:
        from io_tui.core import StoreError  # only when something failed: startup stays light

        if not isinstance(exc, StoreError):
            raise
        sys.stderr.write(f"io-tui: {exc}\n")  # e.g. a store another process held locked
        return EXIT_USAGE
    except KeyboardInterrupt:
        sys.stderr.write("io-tui: interrupted\n")
        return EXIT_FAILED


def _stdout_closed() -> bool:
    """Whether stdout is a pipe whose reader has closed it (``io-tui trace 1 | head -3``): poll
    says so of a pipe's write end with no reader left (POLLERR on Linux; POLLHUP elsewhere). A
    ``BrokenPipeError`` from any other pipe (a child process's) is not this, and is not hidden."""
    import select

    if not hasattr(select, "poll"):
        return True
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        gone = select.POLLERR | select.POLLHUP
        return any(events & gone for _, events in poller.poll(0))
    except (OSError, ValueError):
        return True  # no stdout to poll: nothing more can be written to it either


def _reader_gone() -> int:
    """The reader of stdout stopped early: end quietly, as a command that SIGPIPE ends does
    (https://docs.python.org/3/library/signal.html#note-on-sigpipe). stdout goes to /dev/null,
    so that the interpreter's last flush at exit does not fail again. Exit 141 (128 + SIGPIPE),
    what the shell reports of ``cat FILE | head`` too: under ``set -o pipefail`` a script sees
    io-tui as any such command; 0 would claim everything was delivered, and 1 is a failed run."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return EXIT_PIPE_CLOSED

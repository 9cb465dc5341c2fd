"""The TUI entry points: ``io-tui`` (the app), ``io-tui demo`` (the app with the demo running),
and ``io-tui serve`` (the same app in a browser through textual-serve, bound to 127.0.0.1).
"""

from __future__ import annotations

import argparse
import gc
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.cli.common import (
    EXIT_OK,
    UsageError,
    add_store_option,
    first_store_path,
    store_path,
)

if TYPE_CHECKING:
    from io_tui.config import Settings
    from io_tui.core import StoreLocation

SERVE_HOST = "127.0.0.1"
# textual-serve's page, with its font from its own static folder rather than Google's servers:
# everything the browser loads comes from 127.0.0.1.
SERVE_TEMPLATES = Path(__file__).resolve().parent / "serve_templates"


def register(sub: Any) -> None:
    # ``demo`` is registered here, not with ``run``: the app's first frame must not wait for
    # what a headless run imports (the settings, the core), which ``--headless`` alone loads
    demo = sub.add_parser("demo", help="the bundled demo task (the TUI, or --headless)")
    demo.add_argument(
        "--headless", action="store_true", help="no TUI: auto-approve, print a summary"
    )
    demo.add_argument("--json", action="store_true")
    add_store_option(demo)
    demo.set_defaults(handler=demo_command)
    serve = sub.add_parser("serve", help="the TUI in a browser (textual-serve, 127.0.0.1 only)")
    serve.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default 8000)")
    serve.add_argument("--demo", action="store_true", help="serve the app with the demo running")
    add_store_option(serve)
    serve.set_defaults(handler=serve_command)


async def open_app(args: argparse.Namespace) -> int:
    return await _run(args, demo=False)


async def demo_command(args: argparse.Namespace) -> int:
    if args.headless:
        from io_tui.cli.run import demo_headless

        return await demo_headless(args)
    return await _run(args, demo=True)


async def _run(args: argparse.Namespace, *, demo: bool) -> int:
    # The collector stays off until the panes are on screen (the app turns it back on): the
    # start's imports and first frames are nearly all objects that live as long as the app,
    # and ~60 passes over them took ~40 ms of the way to the panes (BENCHMARKS.md, start-up).
    gc.disable()
    try:
        from io_tui.ui.app import boot_app

        app = boot_app(_Boot(args), demo=demo)
        await app.run_async()
    finally:
        gc.enable()  # an app that ended before its panes (a malformed config) did not
    if app.boot_error is not None:
        raise app.boot_error  # a UsageError or StoreError: ``main`` says it in one line
    return app.return_code if app.return_code is not None else EXIT_OK


class _Boot:
    """What the app loads after its first frame (``ui.app.Boot``): the store, found without the
    settings (pydantic stays off the way to the panes), then the settings, which must name the
    same store."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.located: StoreLocation | None = None

    def store(self) -> StoreLocation:
        self.located = first_store_path(self.args)
        return self.located

    def settings(self) -> Settings:
        from io_tui.config import ConfigError, load_settings

        try:
            settings = load_settings()
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        configured = store_path(self.args, settings)
        if configured != self.located:  # the config file changed as the app started
            raise UsageError(f"the store is now {configured}, not {self.located}: start again")
        return settings


def serve_command(args: argparse.Namespace) -> int:
    """Blocking: textual-serve runs its own aiohttp loop and spawns ``io-tui`` per browser tab."""
    from textual_serve.server import Server

    command = [sys.executable, "-m", "io_tui", "--store", str(store_path(args))]
    if args.demo:
        command.append("demo")
    server = Server(
        shlex.join(command),
        host=SERVE_HOST,
        port=args.port,
        title="io-tui",
        templates_path=SERVE_TEMPLATES,
    )
    server.serve()
    return EXIT_OK

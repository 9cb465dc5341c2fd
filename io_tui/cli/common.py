"""Helpers every subcommand shares: opening the store, printing JSON, reporting usage errors."""

from __future__ import annotations

import argparse
import json
import os
import sys
from argparse import Namespace
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from io_tui.cli.terminal import exact
from io_tui.core import json_safe
from io_tui.paths import config_file, config_table, default_store_path

if TYPE_CHECKING:
    from io_tui.config import Settings
    from io_tui.core import ServerSource, Store, StoreLocation

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PAUSED = 3
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE: what the shell says of a command SIGPIPE ended


STORE_HELP = (
    "the store: a SQLite file or a postgresql:// URL"
    " (default: IO_TUI_STORE, the config's store, or the data dir)"
)


class UsageError(Exception):
    """Bad usage or config: printed as one line, exit 2."""


def store_path(args: Namespace, settings: Settings | None = None) -> StoreLocation:
    """``--store``, else ``IO_TUI_STORE``, else the config's ``store``, else the data dir's file;
    a ``postgresql://`` URL selects PostgreSQL (shown and passed on without its password).
    ``settings``: loaded already (the config file is not read again)."""
    return _store_path(args, lambda: _configured_store(settings))


def first_store_path(args: Namespace) -> StoreLocation:
    """``store_path`` before the settings are loaded (the app shows the store's runs first),
    read as the settings read the config's ``store``, without pydantic: where there is a config
    file, ``IO_TUI_STORE`` in any case of its name (set, even empty, it wins), else the file's
    ``store`` as its TOML says, not validated. The app holds it to ``store_path`` once the
    settings are loaded."""

    def configured() -> str | None:
        if not config_file().exists():
            return None
        variables = {name.upper(): value for name, value in os.environ.items()}
        if "IO_TUI_STORE" in variables:
            return variables["IO_TUI_STORE"] or None
        store = config_table().get("store")
        return store if isinstance(store, str) else None

    return _store_path(args, configured)


def _store_path(args: Namespace, configured: Callable[[], str | None]) -> StoreLocation:
    from io_tui.core import store_location

    given = getattr(args, "store", None) or os.environ.get("IO_TUI_STORE") or configured()
    return store_location(given) if given else default_store_path()


def _configured_store(settings: Settings | None) -> str | None:
    if not config_file().exists():
        return None
    if settings is not None:
        return settings.store
    from io_tui.config import ConfigError, load_settings

    try:
        return load_settings().store
    except ConfigError as exc:
        raise UsageError(str(exc)) from None


async def open_store(args: Namespace, *, create: bool = False, check: bool = False) -> Store:
    """The store of ``args``; only commands that write a run or a note ``create`` a missing one:
    the others say "no store at PATH" instead of leaving an empty file behind. The commands that
    drive runs ``check`` the whole file first: a damaged store is refused before any model is
    asked or anything is written (a damaged page met later is one line too, ``StoreDamaged``)."""
    from io_tui.core import Store, StoreError

    try:
        return await Store.open(store_path(args), create=create, check=check)
    except StoreError as exc:
        raise UsageError(str(exc)) from None


async def servers_for_run(
    store: Store, run_id: int | None, current: dict[str, ServerSource]
) -> dict[str, ServerSource]:
    """The MCP servers to start for resuming ``run_id``: those it started with (this process's,
    ``current``, for a run from before that record); one line on stderr when they are not
    ``current``'s. No servers when nothing resumes (``run_id`` None)."""
    if run_id is None:
        return {}
    from io_tui.core import servers_to_resume

    servers, notice = await servers_to_resume(store, run_id, current)
    if notice:
        sys.stderr.write(f"io-tui: {notice}\n")
    return servers


def ended_as(status: str, outcome: str | None) -> str:
    """``finished (success)``; the outcome only when it says more than the status."""
    return status if outcome in (None, "", status) else f"{status} ({outcome})"


def counted(n: int, noun: str, nouns: str = "") -> str:
    """``1 note``, ``3 notes``; ``nouns`` for a plural that is not ``noun`` + s."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"


def error(message: str) -> None:
    """A command's one-line refusal, on stderr (stdout stays for what the command prints)."""
    sys.stderr.write(f"io-tui: {message}\n")
    sys.stderr.flush()


def print_json(data: Any) -> None:
    """``data`` as one JSON document, exact: escapes in it stay JSON escapes (``json_safe``)."""
    out = exact(sys.stdout)
    out.write(json_safe(json.dumps(data, ensure_ascii=False, default=str)) + "\n")
    out.flush()


def add_show_escapes_option(parser: Any) -> None:
    parser.add_argument(
        "--show-escapes",
        action="store_true",
        default=argparse.SUPPRESS,
        help="write escape sequences and control characters in untrusted text visibly (\\x1b)"
        " instead of dropping them (piped output always shows them)",
    )


def add_store_option(parser: Any) -> None:
    # SUPPRESS: an option given before the subcommand is not reset by the subparser's default.
    parser.add_argument(
        "--store",
        metavar="DB",
        default=argparse.SUPPRESS,
        help=STORE_HELP,
    )


def add_mcp_config_option(parser: Any) -> None:
    """``--mcp-config FILE``: MCP servers added to the config's for this command."""
    parser.add_argument(
        "--mcp-config",
        type=Path,
        metavar="FILE",
        help='servers to add: JSON {"mcpServers": …} or TOML [mcp.servers.NAME] tables',
    )


def approver_names() -> list[str]:
    """How asks can be answered (``--approve``): ``ask``, on the terminal, or a fixed approver
    (loaded only by the commands that take the option)."""
    from io_tui.core import FIXED_APPROVERS

    return sorted(("ask", *FIXED_APPROVERS))

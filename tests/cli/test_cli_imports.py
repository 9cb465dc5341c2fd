"""Each read-only command imports what it uses only (issue 34): listing the commands imports
none of them, and reading the store (the inbox, a trace, memory, rules) loads neither the
settings and pydantic, nor httpx, MCP, the run loop or the UI. A module that joins one of these
sets makes the command slower for every user; this test says which, and where it came from
(``python -X importtime -m io_tui …``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import io_tui

from io_tui.cli import COMMANDS, SUMMARIES, build_parser

HEAVY = (
    "pydantic",
    "pydantic_settings",
    "httpx",
    "mcp",
    "regex",
    "textual",
    "rich",
    "io_tui.config",
    "io_tui.ui",
    "io_tui.core.run.loop",
    "io_tui.core.run.harness",
    "io_tui.core.providers.scripted",
    "io_tui.core.tools.registry",
)


def loaded_by(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules ``io-tui ARGV`` loads, in a fresh interpreter (whatever it exits with)."""
    probe = (
        "import contextlib, io, json, sys\n"
        "from io_tui.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "    try:\n"
        f"        main({list(argv)!r})\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=env,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def heavy_in(modules: set[str]) -> list[str]:
    return sorted(h for h in HEAVY if h in modules)


@pytest.mark.parametrize(
    "argv",
    [
        ("--help",),
        ("--version",),
        ("nosuchcommand",),
        ("approvals", "--json"),
        ("approvals", "--history"),
        ("decide", "--help"),
        ("trace", "1", "--json"),
        ("trace", "1"),
        ("memory", "list"),
        ("rules",),
    ],
    ids=" ".join,
)
def test_a_read_only_command_loads_nothing_heavy(argv: tuple[str, ...], tmp_path: Path) -> None:
    store = ("--store", str(tmp_path / "store.db"))
    assert heavy_in(loaded_by(*argv, *store)) == []


# What ``io-tui trace`` leaves alone besides HEAVY (issue 34): a live run's fold and workspace
# and its summaries' agreement, the policy and the reviewer (it reads approvals' acts and
# decisions only), the plan (a run that rewrote its prefix), the PostgreSQL backend (a SQLite
# store), the drift factor's statistics, uuid (with platform) and getpass.
TRACE_LEAVES = (
    "io_tui.core.authority.policy",
    "io_tui.core.authority.review",
    "io_tui.core.boundary.workspace",
    "io_tui.core.context.plan",
    "io_tui.core.context.summary",
    "io_tui.core.contract",  # the run's contract: the cost annotation reads its prices only
    "io_tui.core.progress.fold",
    "io_tui.core.providers.base",  # the provider contract: a trace holds messages only
    "io_tui.core.store.pg",
    "getpass",
    "statistics",
    "uuid",
)


# and what one shape leaves besides: the readable trace, the prompt-cache annotation (with the
# context's estimates); the JSON document, the ledger's text
SHAPE_LEAVES = {
    (): ("io_tui.core.context.cache",),
    ("--json",): ("io_tui.core.progress.render",),
}


def test_a_trace_loads_only_what_it_shows(tmp_path: Path, workspace: Path, write_script) -> None:
    """A run that ran, traced: past the store's open (the approvals' repo is loaded) trace
    loads none of HEAVY or TRACE_LEAVES, nor what its shape does not show."""
    script = write_script(
        [
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}]},
            {"text": "done"},
        ]
    )
    store = str(tmp_path / "store.db")
    ran = io_tui("run", "look", "-w", str(workspace), "--provider", f"scripted:{script}",
                 "--store", store)  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    for shape, leaves in SHAPE_LEAVES.items():
        modules = loaded_by("trace", "1", *shape, "--store", store)
        assert "io_tui.core.store.approvals" in modules, shape  # it read the run
        left = heavy_in(modules) + sorted(m for m in (*TRACE_LEAVES, *leaves) if m in modules)
        assert left == [], shape


def test_the_default_store_is_found_without_the_settings(tmp_path: Path) -> None:
    """As a user runs it: no ``--store`` and no config file, so the store is the data dir's;
    looking for the config file must not import the settings that would read it."""
    env = {
        **os.environ,
        "IO_TUI_CONFIG": str(tmp_path / "absent.toml"),
        "IO_TUI_STORE": "",
        "XDG_DATA_HOME": str(tmp_path / "data"),
    }
    assert heavy_in(loaded_by("approvals", "--json", env=env)) == []


def test_listing_the_commands_imports_none_of_them(tmp_path: Path) -> None:
    modules = loaded_by("--help")
    assert sorted(m for m in set(COMMANDS.values()) if m in modules) == []


def test_the_summaries_are_what_each_command_registers() -> None:
    """``io-tui --help`` lists SUMMARIES; each module registers its command with the same words."""
    (sub,) = [a for a in build_parser(None)._actions if a.dest == "command"]
    registered = {action.dest: action.help for action in sub._choices_actions}
    assert registered == SUMMARIES
    assert list(SUMMARIES) == list(COMMANDS)


def test_the_cockpit_leaves_the_run_loop_to_its_worker() -> None:
    """The app's modules (its screens, hosts and commands) load none of what runs a run: by
    default that is the harness worker's, and the app's own first frame should not pay for
    it. A name taken from the face that drags the run loop in shows up here."""
    probe = (
        "import json, sys\n"
        "import io_tui.ui.app, io_tui.ui.screens.main, io_tui.ui.hosts, io_tui.ui.commands\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    modules = set(json.loads(done.stdout.splitlines()[-1]))
    run_loop = (
        "io_tui.core.run.loop",
        "io_tui.core.run.state",
        "io_tui.core.run.mcp_hubs",
        "io_tui.core.tools.registry",
        "io_tui.core.context.engine",
        "regex",
        "httpx",
    )
    assert sorted(m for m in run_loop if m in modules) == []


def test_the_cockpits_panes_come_before_the_settings(tmp_path: Path) -> None:
    """What the app loads on the way to its panes (``boot_app``: the main screen and the
    store's location, a config file naming it included) imports neither the settings nor
    pydantic, ~40 % of that way; they load once the panes are painted (``Boot.settings``). Nor
    what only a shown run's gauges and ledger read (~17 ms of dataclasses)."""
    config = tmp_path / "config.toml"
    config.write_text(f"store = {str(tmp_path / 'kept.db')!r}\n[ui]\ntheme = 'io-light'\n")
    probe = (
        "import argparse, json, sys\n"
        "import io_tui.ui.app, io_tui.ui.screens.main\n"
        "from io_tui.cli.ui import _Boot\n"
        "print(_Boot(argparse.Namespace(store=None)).store())\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "IO_TUI_CONFIG": str(config)}
    env.pop("IO_TUI_STORE", None)  # set, even empty, it would name the store
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True,
        env=env,
    )  # fmt: skip
    located, loaded = done.stdout.splitlines()[-2:]
    assert located == str(tmp_path / "kept.db")
    modules = set(json.loads(loaded))
    later = ("pydantic", "pydantic_settings", "io_tui.config", "io_tui.core.providers.base",
             "io_tui.core.contract", "io_tui.core.progress.model", "io_tui.core.context.cache")  # fmt: skip
    assert [m for m in later if m in modules] == []

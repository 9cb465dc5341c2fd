"""The TUI starts each MCP server once, in the process that drives its runs: the palette's
prompts, the new-run dialog's, the resource browser (F6) and the runs all use that one server
process, found by the marker in its environment (``/proc``). A server that hangs on an ask makes
it fail with a message after the ask timeout; the dialog stays usable."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_process import io_tui
from mcp_support import (
    MARK_VAR,
    needs_proc,
    new_mark,
    parent_of,
    processes_with_mark,
    server_script_args,
    wait_until_gone,
)
from textual.widgets import Input, Select
from waits import until

from io_tui.config import Settings
from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.hosts import ProcessHost
from io_tui.ui.screens.new_run import NewRunScreen
from io_tui.ui.screens.resources import ResourcesScreen
from io_tui.ui.testing import prepare_demo_workspace

SIZE = (120, 36)
GREETING = "Say hello to the operator, briefly."


def offering_server(mark: str) -> dict[str, Any]:
    """The test server with prompts (``greet``, ``review``, ``stall``) and a resource, its
    processes marked."""
    return {
        "command": sys.executable,
        "args": server_script_args("offers"),
        "env": {MARK_VAR: mark},
    }


def echo_script(path: Path, tool: str) -> str:
    turns = [{"tool_calls": [{"name": tool, "arguments": {"message": "hi"}}]}, {"text": "done"}]
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def app_in(workspace: Path, store: Path, harness: str = "process", **settings: Any) -> IoApp:
    """The app (its harness in a worker process unless ``harness="inline"``), whose new-run
    dialog opens on ``workspace``."""
    return create_app(
        Settings(**settings),
        store,
        poll_interval=None,
        approver=ApproveAll(),
        demo_workspace=workspace,
        harness=harness,  # type: ignore[arg-type]
    )


async def prompt_from_palette(pilot: Any, app: IoApp, title: str) -> NewRunScreen:
    """Choose ``Prompt: title`` in the palette once the servers list it: the dialog it opens."""
    await until(lambda: getattr(app.screen, "ready", False), "the main screen", 60)
    await pilot.press("ctrl+p")
    await pilot.press(*title)
    palette = app.screen
    await until(
        lambda: any(
            f"Prompt: {title}" in str(option.prompt)
            for option in palette.query("CommandList").first().options
        ),
        f"the prompt {title} in the palette",
        120,
    )
    await pilot.press("enter")
    await until(lambda: isinstance(app.screen, NewRunScreen), "the new-run dialog")
    dialog = app.screen
    assert isinstance(dialog, NewRunScreen)
    return dialog


def the_one_server(app: IoApp, mark: str) -> None:
    """Exactly one process of the marked server runs, and it is the child of the process that
    drives the runs: the harness worker, or the app itself with an inline harness."""
    servers = processes_with_mark(mark)
    assert len(servers) == 1, f"server processes: {servers}"
    host = app.host
    assert parent_of(servers[0]) == (
        host.client.pid if isinstance(host, ProcessHost) else os.getpid()
    )


@needs_proc
@pytest.mark.parametrize("harness", ["process", "inline"])
async def test_the_palette_the_dialog_f6_and_a_run_share_one_server_process(
    tmp_path: Path, harness: str
) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    mark = new_mark()
    provider = echo_script(tmp_path / "s.json", "mcp__t__echo")
    app = app_in(
        workspace,
        tmp_path / "store.db",
        harness,
        provider=provider,
        mcp={"servers": {"t": offering_server(mark)}},
    )
    async with app.run_test(size=SIZE) as pilot:
        dialog = await prompt_from_palette(pilot, app, "t/greet")
        assert dialog.query_one("#task", Input).value == GREETING
        await until(lambda: "t/review" in dialog.prompts, "the dialog's prompts", 60)
        await pilot.press("ctrl+s")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", "the run", 120)
        await pilot.press("f6")
        await until(lambda: isinstance(app.screen, ResourcesScreen), "the resources screen")
        browser = app.screen
        assert isinstance(browser, ResourcesScreen)
        await until(lambda: browser.rows, "the resources", 60)
        assert [(row.server, row.uri) for row in browser.rows] == [("t", "test://note")]
        the_one_server(app, mark)
    assert wait_until_gone(mark) == []
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, 1)
    assert trace["run"]["goal"] == GREETING
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: hi")


@needs_proc
async def test_a_workspaces_mcp_json_servers_offer_their_prompts_and_start_once(
    tmp_path: Path,
) -> None:
    """The servers a run in the workspace gets, its ``.mcp.json`` included, are the ones whose
    prompts the palette offers, from the same process the run then uses."""
    workspace = prepare_demo_workspace(tmp_path / "ws")
    mark = new_mark()
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"w": offering_server(mark)}}))
    trusted = io_tui("mcp", "trust", "-w", str(workspace), "--store", str(tmp_path / "store.db"))
    assert trusted.returncode == 0, trusted.stderr
    provider = echo_script(tmp_path / "s.json", "mcp__w__echo")
    app = app_in(workspace, tmp_path / "store.db", provider=provider)
    async with app.run_test(size=SIZE) as pilot:
        dialog = await prompt_from_palette(pilot, app, "w/greet")
        assert dialog.query_one("#task", Input).value == GREETING
        await pilot.press("ctrl+s")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", "the run", 120)
        the_one_server(app, mark)
    assert wait_until_gone(mark) == []
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, 1)
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: hi")


@needs_proc
async def test_a_prompt_that_never_answers_fails_in_the_dialog_and_it_goes_on(
    tmp_path: Path,
) -> None:
    """The server's ``stall`` prompt hangs: after the ask timeout the dialog says so, and the
    next prompt fills the task from the same server."""
    workspace = prepare_demo_workspace(tmp_path / "ws")
    mark = new_mark()
    app = app_in(workspace, tmp_path / "store.db", mcp={"servers": {"t": offering_server(mark)}})
    assert isinstance(app.host, ProcessHost)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: getattr(app.screen, "ready", False), "the main screen", 60)
        app.action_new_run()
        await until(lambda: isinstance(app.screen, NewRunScreen), "the new-run dialog")
        dialog = app.screen
        assert isinstance(dialog, NewRunScreen)
        await until(lambda: "t/stall" in dialog.prompts, "the dialog's prompts", 120)
        app.host.client.ask_timeout_s = 1.0  # the server is up: only the prompt hangs now
        dialog.query_one("#prompt", Select).value = "t/stall"
        await until(lambda: not dialog.has_class("-no-prompt-args"), "the arguments field")
        dialog.query_one("#prompt-args", Input).value = "seconds=3600"
        await until(
            lambda: "getting the prompt t/stall: no answer within 1s" in str(dialog.error.render()),
            "the timeout said in the dialog",
            60,
        )
        app.host.client.ask_timeout_s = 60.0
        dialog.query_one("#prompt", Select).value = "t/greet"
        task = dialog.query_one("#task", Input)
        await until(lambda: task.value == GREETING, "the next prompt's text", 60)
        await pilot.press("escape")
        the_one_server(app, mark)
    assert wait_until_gone(mark) == []

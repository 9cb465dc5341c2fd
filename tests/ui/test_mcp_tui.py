"""MCP in the TUI, through the harness worker process (the app's default) and the settings' real
stdio servers: a call's progress notifications drawn live on it in the transcript; the resource
browser (F6) and the prompts in the palette over server-everything."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from mcp_support import TEST_SERVER, server_everything_entry
from textual.widgets import Input
from waits import until

from io_tui.config import Settings
from io_tui.core.approvals import ApproveAll
from io_tui.core.run_request import NewRunRequest
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.resources import ResourcesScreen
from io_tui.ui.state import CallProgress
from io_tui.ui.testing import prepare_demo_workspace, wait_until_idle
from io_tui.ui.widgets.call_progress import progress_line
from io_tui.ui.widgets.table import Table
from io_tui.ui.widgets.transcript import Transcript

SIZE = (120, 36)


def mcp_app(tmp_path: Path, **servers: dict[str, object]) -> IoApp:
    settings = Settings(mcp={"servers": servers})  # type: ignore[arg-type]
    return create_app(settings, tmp_path / "store.db", poll_interval=None, approver=ApproveAll())


def parse_servers(**servers: dict[str, object]) -> dict[str, object]:
    return dict(Settings(mcp={"servers": servers}).mcp.servers)  # type: ignore[arg-type]


def server_entry(*args: str) -> dict[str, object]:
    return {"command": sys.executable, "args": [str(TEST_SERVER), *args]}


def script(path: Path, *turns: dict[str, object]) -> str:
    path.write_text(json.dumps({"turns": [*turns, {"text": "done"}]}))
    return f"scripted:{path}"


async def test_a_calls_progress_is_shown_live_on_it_in_the_transcript(tmp_path: Path) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    gate = tmp_path / "gate"
    call = {"name": "mcp__t__stepped", "arguments": {"gate": str(gate)}}
    provider = script(tmp_path / "s.json", {"tool_calls": [call]})
    app = mcp_app(tmp_path, t=server_entry())
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("step", workspace, provider))
        await until(lambda: 1 in app.runs, "the run")
        app.screen.select_run(1)  # type: ignore[attr-defined]
        transcript = app.screen.query_one(Transcript)
        shown = "↻ mcp__t__stepped ████░░░░░░░░ 1/3 · warming up"
        await until(lambda: shown in transcript.live_text, "the call's progress", 60)
        gate.touch()  # the server finishes the call
        await until(lambda: app.runs[1].status == "finished", "the run to finish", 60)
        await wait_until_idle(pilot)
        assert "↻" not in transcript.live_text
        assert "stepped" in transcript.text_of(1)


def test_progress_lines_read_plainly() -> None:
    assert progress_line(CallProgress("mcp__s__build", 2, 4, "linking")) == (
        "↻ mcp__s__build ██████░░░░░░ 2/4 · linking"
    )
    assert progress_line(CallProgress("mcp__s__scan", 2.5)) == "↻ mcp__s__scan 2.5"
    assert progress_line(CallProgress("x", 9, 3)).startswith("↻ x ████████████ 9/3")


async def test_f6_browses_the_servers_resources_and_reads_one(tmp_path: Path) -> None:
    entry = server_everything_entry()
    app = mcp_app(tmp_path, everything={"command": "node", "args": [str(entry), "stdio"]})
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: getattr(app.screen, "ready", False), "the main screen")
        await pilot.press("f6")
        await until(lambda: isinstance(app.screen, ResourcesScreen), "the resources screen")
        screen = app.screen
        assert isinstance(screen, ResourcesScreen)
        await until(lambda: screen.rows, "the resources", 60)
        kinds = {row.kind for row in screen.rows}
        assert kinds == {"resource", "template"}
        uris = [row.uri for row in screen.rows]
        assert "demo://resource/dynamic/text/{resourceId}" in uris
        features = next(i for i, row in enumerate(screen.rows) if row.uri.endswith("/features.md"))
        table = screen.query_one(Table)
        table.move_cursor(row=features)
        await pilot.press("enter")
        await until(
            lambda: "[resource demo://resource/static/document/features.md" in screen.shown,
            "the resource's text",
            30,
        )
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, ResourcesScreen), "back to the runs")


async def test_a_servers_prompt_in_the_palette_opens_the_new_run_dialog_with_its_text(
    tmp_path: Path,
) -> None:
    from io_tui.core import McpHub
    from io_tui.ui.screens.new_run import NewRunScreen

    server = {"command": "node", "args": [str(server_everything_entry()), "stdio"]}
    async with McpHub(parse_servers(everything=server)) as hub:
        expected = " ".join((await hub.prompt_text("everything", "simple-prompt", {})).split())
    app = mcp_app(tmp_path, everything=server)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: getattr(app.screen, "ready", False), "the main screen")
        await pilot.press("ctrl+p")
        await pilot.press(*"simple-prompt")
        palette = app.screen
        await until(
            lambda: any(
                "everything/simple-prompt" in str(option.prompt)
                for option in palette.query("CommandList").first().options
            ),
            "the prompt in the palette",
            60,
        )
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, NewRunScreen), "the new-run dialog")
        assert app.screen.query_one("#task", Input).value == expected

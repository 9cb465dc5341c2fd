"""The approval modal never shows a wrong diff: from its first frame a write is shown against the
file as it is now — when a live run asks (the desk) and when the operator opens it from the
inbox (with the run's goal line) — and a modal made before the file is read says so and takes
no key until its diff is right. The real app, its runs in its own loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Button, DataTable, Label, Static

from io_tui.config import Settings
from io_tui.core.run.request import NewRunRequest
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.inbox import InboxScreen
from ui._steering import EDIT_TURN, StoreHost, make_workspace, paused_run, script

RIGHT = "src/app.py — against the current file · +1 −1"


@pytest.fixture
def first_frames(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """What each approval modal's diff line said when it was first mounted (its first frame)."""
    seen: list[str] = []
    mounted = ApprovalScreen.on_mount

    async def on_mount(self: ApprovalScreen) -> None:
        seen.append(str(self.query_one(".approval-diff-label", Label).render()))
        await mounted(self)

    monkeypatch.setattr(ApprovalScreen, "on_mount", on_mount)
    return seen


def _app(store_path: Path) -> IoApp:
    return create_app(Settings(ui={"harness": "inline"}), store_path, poll_interval=None)


async def _until(predicate: Callable[[], object], pilot: Pilot[Any], limit: float = 30.0) -> None:
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


def _diff_line(screen: ApprovalScreen) -> str:
    return str(screen.query_one(".approval-diff-label", Label).render())


async def test_a_live_ask_shows_the_right_diff_from_its_first_frame(
    tmp_path: Path, store_path: Path, first_frames: list[str]
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    path = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    app = _app(store_path)
    async with app.run_test(size=(100, 32)) as pilot:
        app.start_request(NewRunRequest("fix parse", workspace, f"scripted:{path}"))
        await _until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await _until(lambda: screen.armed, pilot)
        assert first_frames == [RIGHT]  # never "new file · +2 −0" first
        assert _diff_line(screen) == RIGHT
        assert "goal: fix parse" in str(screen.query_one("#approval-run", Static).render())


async def test_from_the_inbox_the_modal_shows_the_right_diff_and_the_goal(
    tmp_path: Path, store_path: Path, first_frames: list[str]
) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EDIT_TURN, {"text": "done"}], tmp_path / "s.json")
    app = _app(store_path)
    async with app.run_test(size=(100, 32)) as pilot:
        app.action_inbox()
        await _until(
            lambda: isinstance(app.screen, InboxScreen) and app.screen.query("#inbox-table"), pilot
        )
        table = app.screen.query_one("#inbox-table", DataTable)
        await _until(lambda: table.row_count, pilot)
        await pilot.press("enter")
        await _until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await _until(lambda: screen.armed, pilot)
        assert first_frames == [RIGHT]
        run_line = str(screen.query_one("#approval-run", Static).render())
        assert "goal: fix parse" in run_line


async def test_a_modal_made_before_the_file_is_read_waits_for_it_unarmed(
    tmp_path: Path, store_path: Path, first_frames: list[str]
) -> None:
    """A caller that makes the modal without the file: it says it is reading the file, takes
    no key meanwhile, and arms once the diff is the right one."""
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EDIT_TURN], tmp_path / "s.json")

    async def bare(store: Store) -> ApprovalScreen:
        (record,) = await store.approvals.pending()
        return ApprovalScreen(record.request, store=store, arm_s=0)

    host = StoreHost(store_path, bare)
    async with host.run_test(size=(100, 32)) as pilot:
        await _until(lambda: isinstance(host.screen, ApprovalScreen), pilot)
        screen = host.screen
        assert isinstance(screen, ApprovalScreen)
        await _until(lambda: screen.armed, pilot)
        assert first_frames == ["src/app.py — reading the file as it is now…"]
        assert _diff_line(screen) == RIGHT
        assert not isinstance(host.focused, Button)  # enter can never press Approve
        await pilot.press("enter", "space", "enter")
        await pilot.pause()
        assert host.results == []

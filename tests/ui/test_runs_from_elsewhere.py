"""Runs another process starts (the CLI, ACP, a queue worker), through the real app following
its store: the new run is scrolled into view once the operator is idle, and never takes the
cursor or the selection; while the operator is at the keys, or a modal is open, it waits until
they stop or the modal closes."""

from __future__ import annotations

from pathlib import Path

import pytest
from waits import until_app

from io_tui.config import Settings
from io_tui.core import EventKind, RunEvent, Store
from io_tui.ui import attention
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.help import HelpScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.widgets.run_tree import RunTree

from .conftest import FakeClock

SIZE = (100, 24)  # the tree shows ~18 of the 30 runs
EARLIER = 30


async def start_elsewhere(store: Store, goal: str) -> int:
    """A run as ``io-tui run`` starts it in another process: its row, its lease, its start."""
    run_id = await store.runs.create(goal=goal, workspace="/w", contract={}, provider={}, policy={})
    await store.leases.acquire(run_id)
    detail = {"goal": goal, "workspace": "/w"}
    await store.runs.add_events([RunEvent(run_id, 0, EventKind.RUN_STARTED, detail)])
    return run_id


def in_sight(tree: RunTree, run_id: int) -> bool:
    line = tree.run_nodes[run_id]._line
    top = tree.scroll_offset.y
    return line >= 0 and top <= line < top + tree.scrollable_content_region.height


def cursor_run(tree: RunTree) -> int | None:
    node = tree.cursor_node
    return node.data.run_id if node is not None and node.data is not None else None


@pytest.fixture
def keys_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The operator's key clock, moved by hand; idle after 0.5 s of it (timers wait that long)."""
    monkeypatch.setattr(attention, "IDLE_S", 0.5)
    return FakeClock(1000.0)


async def test_a_run_started_elsewhere_is_scrolled_into_view_when_the_operator_is_idle(
    tmp_path: Path, keys_clock: FakeClock
) -> None:
    path = tmp_path / "store.db"
    async with await Store.open(path) as store:
        for n in range(EARLIER):
            run_id = await store.runs.create(
                goal=f"earlier run {n + 1}", workspace="/w", contract={}, provider={}, policy={}
            )
            await store.runs.set_status(run_id, "finished", "success")
    app: IoApp = create_app(Settings(ui={"harness": "inline"}), path, poll_interval=0.05)
    app.activity.clock = keys_clock
    async with app.run_test(size=SIZE) as pilot, await Store.open(path) as other:
        await until_app(pilot, lambda: getattr(app.screen, "ready", False), "the panes")
        screen = app.screen
        assert isinstance(screen, MainScreen)
        tree = screen.run_tree
        await until_app(pilot, lambda: len(tree.run_nodes) == EARLIER, "the earlier runs")
        screen.select_run(1)
        await pilot.pause(0.1)
        assert not in_sight(tree, EARLIER)  # the tree is longer than the pane

        # idle: the new run comes into view; the cursor and the selection stay on run 1
        first = await start_elsewhere(other, "started by io-tui run")
        await until_app(pilot, lambda: first in tree.run_nodes, "the run from elsewhere")
        await until_app(pilot, lambda: in_sight(tree, first), "scrolled into view")
        assert cursor_run(tree) == 1 and screen.selected_run == 1

        # at the keys: the view stays where the operator put it until they stop
        await pilot.press("down")
        await until_app(pilot, lambda: cursor_run(tree) == 2, "the cursor moved")
        await pilot.pause(0.1)
        top = tree.scroll_offset.y
        second = await start_elsewhere(other, "started by a queue worker")
        await until_app(pilot, lambda: second in tree.run_nodes, "the second run")
        await pilot.pause(0.8)  # longer than IDLE_S of the wall clock: the key clock stands
        assert tree.scroll_offset.y == top and not in_sight(tree, second)
        keys_clock.advance(1)  # the operator stopped
        await until_app(pilot, lambda: in_sight(tree, second), "scrolled once idle")
        assert cursor_run(tree) == 2 and screen.selected_run == 2

        # a modal open: nothing moves under it; once it closes (and the keys stop), in view
        await pilot.press("home")
        await until_app(pilot, lambda: tree.scroll_offset.y == 0, "back at the top")
        await pilot.press("f1")
        await until_app(pilot, lambda: isinstance(app.screen, HelpScreen), "the help")
        keys_clock.advance(1)
        third = await start_elsewhere(other, "started by an ACP client")
        await until_app(pilot, lambda: third in tree.run_nodes, "the third run")
        await pilot.pause(0.8)
        assert tree.scroll_offset.y == 0
        await pilot.press("escape")
        await until_app(pilot, lambda: app.screen is screen, "the help closed")
        keys_clock.advance(1)
        await until_app(pilot, lambda: in_sight(tree, third), "scrolled once the modal closed")
        assert cursor_run(tree) == 1 and screen.selected_run == 1

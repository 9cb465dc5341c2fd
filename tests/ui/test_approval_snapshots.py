"""Snapshots of the approval modal (a write with its diff, an exec) and of the inbox."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from io_tui.core.store import Store
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.inbox import InboxScreen
from ui._steering import EDIT_TURN, EXEC_TURN, StoreHost, fixed_workspace, freeze_times, paused_run


def _seed(store_path: Path, tmp_path: Path, turns: list[list[dict[str, Any]]]) -> None:
    async def go() -> None:
        async with await Store.open(store_path) as store:
            for i, run_turns in enumerate(turns):
                await paused_run(
                    store, fixed_workspace(f"ws{i}"), run_turns, tmp_path / f"s{i}.json"
                )
            await freeze_times(store)

    asyncio.run(go())


async def _modal(store: Store) -> ApprovalScreen:
    (record,) = await store.approvals.pending()
    return ApprovalScreen(record.request, store=store, position="1 of 1", goal="fix parse")


async def _settle(pilot: Any) -> None:
    """Workers done, then a few refresh cycles: a DataTable sizes its columns after its rows."""
    await pilot.app.workers.wait_for_complete()
    for _ in range(3):
        await pilot.pause(0.05)
    await pilot.wait_for_scheduled_animations()


def test_modal_write_with_diff(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """A write: the run, the rule and layer that asked, a unified diff of src/app.py, five keys."""
    _seed(store_path, tmp_path, [[EDIT_TURN]])
    assert snap_compare(StoreHost(store_path, _modal), terminal_size=(100, 30), run_before=_settle)


def test_modal_write_side_by_side(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """The same write after v: the diff side by side, old left and new right."""
    _seed(store_path, tmp_path, [[EDIT_TURN]])

    async def toggled(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("v")
        await pilot.pause()

    assert snap_compare(StoreHost(store_path, _modal), terminal_size=(100, 30), run_before=toggled)


def test_modal_exec(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """An exec: argv as JSON and the working directory."""
    _seed(store_path, tmp_path, [[EXEC_TURN]])
    assert snap_compare(StoreHost(store_path, _modal), terminal_size=(100, 30), run_before=_settle)


def test_inbox(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """Three pending requests from three runs, oldest first, "1 of 3"."""
    _seed(store_path, tmp_path, [[EDIT_TURN], [EXEC_TURN], [EDIT_TURN]])
    app = StoreHost(store_path, lambda store: InboxScreen(store, poll_interval=None))
    assert snap_compare(app, terminal_size=(120, 20), run_before=_settle)

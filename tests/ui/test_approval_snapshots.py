"""Snapshots of the approval modal (a write with its diff, an exec, an MCP call), its remember and
rewrite dialogs, and the inbox with its preview — at 80×24 and larger."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.store import Store
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.testing import freeze
from ui._steering import (
    EDIT_TURN,
    EXEC_TURN,
    StoreHost,
    fixed_workspace,
    freeze_times,
    mcp_request,
    paused_run,
)

pytestmark = pytest.mark.fixed_paths  # the workspaces under /tmp/io-tui-steering-snapshots

SMALL = (80, 24)


def _seed(
    store_path: Path, tmp_path: Path, turns: list[list[dict[str, Any]]], *, mcp: bool = False
) -> None:
    async def go() -> None:
        async with await Store.open(store_path) as store:
            for i, run_turns in enumerate(turns):
                await paused_run(
                    store, fixed_workspace(f"ws{i}"), run_turns, tmp_path / f"s{i}.json"
                )
            if mcp:
                await mcp_request(store, fixed_workspace(f"ws{len(turns)}"))
            await freeze_times(store)

    asyncio.run(go())


async def _modal(store: Store) -> ApprovalScreen:
    (record,) = await store.approvals.pending()
    return await ApprovalScreen.prepared(
        record.request, store=store, position="1 of 1", goal="fix parse", arm_s=0
    )


async def _settle(pilot: Any) -> None:
    """Workers done and the screen ready, then a few refresh cycles: a DataTable sizes its
    columns after its rows; cursors do not blink (a snapshot taken mid-blink would differ)."""
    await pilot.app.workers.wait_for_complete()
    for _ in range(200):  # a screen that reads the store as it mounts says when it is done
        if getattr(pilot.app.screen, "ready", True):
            break
        await pilot.pause(0.05)
    for _ in range(3):
        await pilot.pause(0.05)
    await pilot.wait_for_scheduled_animations()
    freeze(pilot.app)
    await pilot.pause(0.05)


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
    app = StoreHost.inbox(store_path)
    assert snap_compare(app, terminal_size=(120, 20), run_before=_settle)


def _pressed(*keys: str) -> Any:
    async def run_before(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press(*keys)
        await _settle(pilot)

    return run_before


def test_small_modal_write(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24: the write's title, run, rule, its diff from the first change, and the five keys
    on one line, all on screen."""
    _seed(store_path, tmp_path, [[EDIT_TURN]])
    assert snap_compare(StoreHost(store_path, _modal), terminal_size=SMALL, run_before=_settle)


def test_small_modal_exec(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24: an exec's argv, working directory and the five keys."""
    _seed(store_path, tmp_path, [[EXEC_TURN]])
    assert snap_compare(StoreHost(store_path, _modal), terminal_size=SMALL, run_before=_settle)


def test_small_modal_mcp(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24: an MCP tool call, "call MCP tool" in the title and its arguments as JSON."""
    _seed(store_path, tmp_path, [], mcp=True)
    assert snap_compare(StoreHost(store_path, _modal), terminal_size=SMALL, run_before=_settle)


def test_small_remember(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24, remember on an exec: the exact command line as the pattern, the wider choices
    under it (each with its radius), what it allows and where, only the chosen scope filled, the blast radius (1 of the 2 earlier
    exec requests: the one in this workspace) and that request listed."""

    async def go() -> None:
        async with await Store.open(store_path) as store:
            here, other = fixed_workspace("ws0"), fixed_workspace("ws1")
            for i, ws in enumerate((here, other, here)):
                await paused_run(store, ws, [EXEC_TURN], tmp_path / f"s{i}.json")
            await freeze_times(store)

    asyncio.run(go())

    async def last(store: Store) -> ApprovalScreen:
        record = (await store.approvals.pending())[-1]
        return ApprovalScreen(record.request, store=store, position="3 of 3", arm_s=0)

    assert snap_compare(StoreHost(store_path, last), terminal_size=SMALL, run_before=_pressed("3"))


def test_small_remember_write(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24, remember on an edit: exactly src/app.py as the pattern (its choice filled), the
    folder and the extension under it with what each would have allowed (the earlier edit of
    the same file in this workspace, not the one in ws1), "write exactly 'src/app.py'"."""

    async def go() -> None:
        async with await Store.open(store_path) as store:
            here, other = fixed_workspace("ws0"), fixed_workspace("ws1")
            for i, ws in enumerate((here, other, here)):
                await paused_run(store, ws, [EDIT_TURN], tmp_path / f"s{i}.json")
            await freeze_times(store)

    asyncio.run(go())

    async def last(store: Store) -> ApprovalScreen:
        record = (await store.approvals.pending())[-1]
        return ApprovalScreen(record.request, store=store, position="3 of 3", arm_s=0)

    assert snap_compare(StoreHost(store_path, last), terminal_size=SMALL, run_before=_pressed("3"))


def test_small_remember_not_matching(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24: a pattern that does not match the request, after one ctrl+s: the dialog stays and
    says a second ctrl+s saves it anyway."""
    _seed(store_path, tmp_path, [[EXEC_TURN]])

    async def run_before(pilot: Any) -> None:
        await _settle(pilot)
        await pilot.press("3")
        await _settle(pilot)
        await pilot.press("ctrl+u", *"pytest", "ctrl+s")
        await _settle(pilot)

    assert snap_compare(StoreHost(store_path, _modal), terminal_size=SMALL, run_before=run_before)


def test_small_rewrite(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24, rewrite of an edit: its arguments as JSON in an editor, ctrl+s and escape named."""
    _seed(store_path, tmp_path, [[EDIT_TURN]])
    assert snap_compare(
        StoreHost(store_path, _modal), terminal_size=SMALL, run_before=_pressed("2")
    )


def test_small_inbox(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24: three requests (write, exec, MCP), every column, the first highlighted and its
    diff previewed below."""
    _seed(store_path, tmp_path, [[EDIT_TURN], [EXEC_TURN]], mcp=True)
    app = StoreHost.inbox(store_path)
    assert snap_compare(app, terminal_size=SMALL, run_before=_settle)


def test_small_inbox_mcp_preview(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """80×24: the MCP call highlighted, its arguments previewed."""
    _seed(store_path, tmp_path, [[EDIT_TURN], [EXEC_TURN]], mcp=True)
    app = StoreHost.inbox(store_path)
    assert snap_compare(app, terminal_size=SMALL, run_before=_pressed("down", "down"))


def test_large_modal_write(snap_compare: Any, store_path: Path, tmp_path: Path) -> None:
    """200×60: the modal keeps a readable width, the diff fills its height."""
    _seed(store_path, tmp_path, [[EDIT_TURN]])
    assert snap_compare(StoreHost(store_path, _modal), terminal_size=(200, 60), run_before=_settle)

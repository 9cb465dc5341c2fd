"""The memory editor: provenance, edit, pin/unpin, delete and clear with confirmation, recall
history, caps as gauges, and every change audited; snapshot of the editor."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, ProgressBar, TextArea

from io_tui.core.contract import MemoryLimits
from io_tui.core.store import Store
from io_tui.ui.screens.memory_editor import ConfirmScreen, EditValueScreen, MemoryEditorScreen
from io_tui.ui.testing import wait_until_idle
from ui._steering import StoreHost, freeze_times

WS = "/work/project-a"


async def _seed(store_path: Path) -> None:
    async with await Store.open(store_path) as store:
        limits = MemoryLimits()
        for i, (key, value) in enumerate(
            [
                ("test-command", "python3 -m unittest"),
                ("style", "ruff, 100 columns"),
                ("todo", "docs"),
            ]
        ):
            await store.memory.write(
                key=key,
                value=value,
                scope="workspace",
                workspace=WS,
                run_id=4,
                step=i + 2,
                limits=limits,
            )
        await store.memory.set("editor", "vim", "global", None)
        await store.memory.record_recall(4, 5, 11, ["test-command"], WS)
        await store.memory.record_recall(5, 2, 19, ["test-command"], WS)
        await freeze_times(store)
        await store.db.conn.execute("UPDATE memory_recalls SET at = 1700000000 + id * 600")
        await store.db.conn.commit()


def _editor(store: Store) -> MemoryEditorScreen:
    return MemoryEditorScreen(store, WS)


async def _settle(pilot: Any) -> None:
    """Workers done and the tables laid out at their final column widths (a table sizes its
    columns as rows arrive, so a picture taken a frame early shows them squeezed)."""
    await wait_until_idle(pilot)


async def test_notes_with_provenance_gauges_and_recalls(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(120, 36)) as pilot:
        await _settle(pilot)
        screen = app.screen
        table = screen.query_one("#memory-table", DataTable)
        rows = [[str(cell) for cell in table.get_row(k)] for k in table.rows]  # cells are Text
        assert [r[1] for r in rows] == ["test-command", "style", "todo", "editor"]
        assert rows[0][3] == "run 4 step 2" and rows[0][6] == "2" and rows[3][3] == "operator"
        assert screen.query_one("#gauge-workspace-entries", ProgressBar).progress == 3
        recalls = screen.query_one("#memory-recalls", DataTable)
        assert [[str(c) for c in recalls.get_row(k)[:3]] for k in recalls.rows] == [
            ["#11", "4", "5"],
            ["#19", "5", "2"],
        ]


async def test_edit_pin_delete_clear_are_audited(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(120, 36)) as pilot:
        await _settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditValueScreen)
        app.screen.query_one("#memory-value", TextArea).text = "python3 -m unittest -q"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        await pilot.press("p")
        await _settle(pilot)
        await pilot.press("down", "x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")
        await _settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await _settle(pilot)
        table = app.screen.query_one("#memory-table", DataTable)
        assert [str(table.get_row(k)[1]) for k in table.rows] == ["test-command", "editor"]
    async with await Store.open(store_path) as store:
        note = await store.memory.get("test-command", "workspace", WS)
        assert note is not None and note.value == "python3 -m unittest -q" and note.pinned
        ops = [json.loads(e["detail"])["op"] for e in await store.runs.events(0)]
        assert ops[-4:] == ["set", "pin", "delete", "clear"]


def test_memory_editor_snapshot(snap_compare: Any, store_path: Path) -> None:
    """Three workspace notes and one global note, gauges, the first note's two recalls."""
    asyncio.run(_seed(store_path))
    assert snap_compare(StoreHost(store_path, _editor), terminal_size=(120, 30), run_before=_settle)


async def test_a_note_the_agent_wrote_with_markup_and_escapes_is_shown_as_text(
    store_path: Path,
) -> None:
    async with await Store.open(store_path) as store:
        value = "use [/] then [bold]x\x1b[2J"
        await store.memory.set("odd [/]", value, "workspace", WS)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(120, 36)) as pilot:
        await _settle(pilot)
        view = str(app.screen.query_one("#memory-value-view").render())
        assert view == "use [/] then [bold]x"
        table = app.screen.query_one("#memory-table", DataTable)
        assert "odd [/]" in " ".join(str(c) for c in table.get_row(next(iter(table.rows))))

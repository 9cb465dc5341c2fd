"""The TUI meets a parent paused with its sub-agent: the run tree and the transcript say which
run it waits on; deciding the child's request in the inbox finishes the child, then the parent,
under the same ids."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from io_tui.config import Settings
from io_tui.core.store import Store
from io_tui.ui.app import create_app
from io_tui.ui.screens.inbox import InboxScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.transcript import status_line
from ui._steering import EDIT_TURN, make_workspace, paused_run

SPAWN = {"tool_calls": [{"id": "s1", "name": "spawn_agent", "arguments": {"goal": "fix parse"}}]}


async def test_a_parent_paused_with_its_child_resumes_from_the_inbox(
    tmp_path: Path, store_path: Path
) -> None:
    ws = make_workspace(tmp_path / "ws")
    turns = [SPAWN, EDIT_TURN, {"text": "child: fixed"}, {"text": "parent: done"}]
    async with await Store.open(store_path) as store:
        first = await paused_run(store, ws, turns, tmp_path / "s.json")
    assert (first.run_id, first.outcome.value, first.waiting_on) == (1, "awaiting_sub_agent", 2)
    app = create_app(Settings(ui={"harness": "inline"}), store_path, poll_interval=None)
    async with app.run_test(size=(120, 32)) as pilot:
        await wait_until_idle(pilot)
        tree = app.screen.query_one(RunTree)
        assert "paused · waits on #2 ·" in str(tree.run_nodes[1].label)
        assert "waits on" not in str(tree.run_nodes[2].label)
        assert tree.run_nodes[2].parent is tree.run_nodes[1]
        assert "paused with its sub-agent run 2" in status_line(app.runs[1])
        app.action_inbox()
        await wait_until_idle(pilot)
        assert isinstance(app.screen, InboxScreen)
        table = app.screen.query_one("#inbox-table", DataTable)
        assert table.row_count == 1
        await pilot.press("1")  # approve the child's edit
        await app.workers.wait_for_complete()
        await wait_until_idle(pilot)
    assert "return x" in (ws / "src" / "app.py").read_text()
    async with await Store.open(store_path) as store:
        rows = await store.runs.all()
        assert [(r.id, r.status, r.outcome) for r in rows] == [
            (1, "finished", "finished"),
            (2, "finished", "finished"),
        ]
        spawned, *_ = await store.trace.observations(1)
        assert not spawned.is_error and "child: fixed" in spawned.text

"""The rules screen: remembered rules listed and revocable; snapshot of the list."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static
from waits import until

from io_tui.core.authority.policy import Act
from io_tui.core.store import Store
from io_tui.ui.screens.confirm import ConfirmScreen
from io_tui.ui.screens.rules import RulesScreen
from ui._steering import StoreHost, freeze_times


async def _seed(store_path: Path) -> None:
    async with await Store.open(store_path) as store:
        run = await store.runs.create(
            goal="g", workspace="/w/a", contract={}, provider={}, policy={}
        )
        await store.rules.add(
            act=Act.WRITE, pattern="src/*", scope="workspace", workspace="/w/a", run_id=run
        )
        await store.rules.add(
            act=Act.EXEC, pattern="git", scope="global", workspace="/w/a", run_id=run
        )
        await store.rules.add(
            act=Act.WRITE, pattern="docs/*", scope="run", workspace="/w/a", run_id=run
        )
        await freeze_times(store)


async def test_list_and_revoke(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, lambda store: RulesScreen(store))
    async with app.run_test(size=(110, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#rules-table", DataTable)
        assert table.row_count == 3
        # revoking asks first: no keeps the rule, yes revokes it
        await pilot.press("down", "x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the question", 10)
        question = str(app.screen.query_one("#confirm-question", Static).render())
        assert question == (
            "Revoke rule 2: allow exec git? The requests it matched will ask again."
        )
        await pilot.press("n")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert table.row_count == 3
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the question", 10)
        await pilot.press("y")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [k.value for k in table.rows] == ["1", "3"]
        await pilot.press("h")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert table.row_count == 3
    async with await Store.open(store_path) as store:
        assert [r.pattern for r in await store.rules.list()] == ["src/*", "docs/*"]


def test_rules_snapshot(snap_compare: Any, store_path: Path) -> None:
    """Three remembered rules (workspace, global, run scope), the second one highlighted."""
    asyncio.run(_seed(store_path))
    app = StoreHost(store_path, lambda store: RulesScreen(store))

    async def settle(pilot: Any) -> None:
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("down")
        await pilot.pause()

    assert snap_compare(app, terminal_size=(110, 16), run_before=settle)

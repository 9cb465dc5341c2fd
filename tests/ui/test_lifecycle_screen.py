"""The lifecycle screen ("why did it forget X?"), opened from the inspector with one key, on the
real app driving the demo run."""

from __future__ import annotations

from io_tui.ui.screens.inspector import InspectorScreen
from io_tui.ui.screens.lifecycle import LifecycleScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import wait_until_idle

from .conftest import SIZE


async def test_l_shows_the_entrys_lifecycle_and_text_searches_the_run(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        main.select_run(1, 10)
        await pilot.pause(0.1)
        await pilot.press("i")
        await wait_until_idle(pilot)
        inspector = app.screen
        assert isinstance(inspector, InspectorScreen)
        # the demo's step-9 grep gave step 4's result again: it is left out of the request with
        # its step, pointing at step 4's. Why?
        ((key, dropped),) = [(k, r) for k, r in inspector.rows.items() if r.call_id == "call_9_1"]
        assert dropped.state == "dropped"
        inspector.show_entry(key)
        await pilot.press("l")
        await wait_until_idle(pilot)
        screen = app.screen
        assert isinstance(screen, LifecycleScreen)
        assert screen.report is not None and screen.query_box.value == "call_9_1"
        assert [k.value for k in screen.matches.rows] == ["call_9_1"]
        story = str(screen.story.render())
        assert "word_count" in story and "dropped (superseded by step 4)" in story
        assert "the same, to the character" in story  # the reason the manifest gave
        assert "no summary: nothing of this run was folded" in str(screen.ledger.render())

        await pilot.press("slash")
        assert screen.query_box.has_focus
        screen.query_box.value = "WORD_COUNT"
        await pilot.press("enter")
        await wait_until_idle(pilot)
        keys = [k.value for k in screen.matches.rows]
        assert keys[:2] == ["call_4_1", "call_9_1"]  # the greps, by target, before text hits
        assert screen.matches.has_focus
        await pilot.press("down")
        assert "step 9" in str(screen.story.render())

        screen.query_box.value = "nothing like this anywhere"
        screen.query_box.focus()
        await pilot.press("enter")
        await wait_until_idle(pilot)
        assert screen.matches.row_count == 0
        assert "No entry matches 'nothing like this anywhere'" in str(screen.story.render())
        await pilot.press("escape")
        assert app.screen is inspector

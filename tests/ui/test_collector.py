"""The collector's full pass runs when the operator is back on the main screen, not during
their next key (``ui.collector``)."""

from __future__ import annotations

import gc
import weakref

from io_tui.ui.collector import COLLECT_AFTER_S
from io_tui.ui.screens.help import HelpScreen


async def test_a_closed_screen_is_freed_once_the_operator_is_back(make_app) -> None:
    """With Python's own passes off, only the app's can free the closed help screen's cycles:
    none runs while the screen is open, one runs once it has closed and frees it."""
    app = make_app(demo=False)
    gc.disable()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            while not hasattr(app, "collector"):  # made once the first frame is drawn
                await pilot.pause(0.02)
            before = app.collector.passes
            await pilot.press("f1")
            assert isinstance(app.screen, HelpScreen)
            help_screen = weakref.ref(app.screen)
            await pilot.pause(COLLECT_AFTER_S * 3)
            assert app.collector.passes == before  # not while a screen is open
            await pilot.press("escape")
            await pilot.pause(COLLECT_AFTER_S * 3)
            assert app.collector.passes == before + 1
            assert help_screen() is None
    finally:
        gc.enable()

"""What a key that opens a screen does not pay for: the collector's full pass runs once the
operator is back on the main screen (``ui.collector``), and no screen's first open parses the
app's stylesheet again."""

from __future__ import annotations

import gc
import weakref

from io_tui.ui.collector import COLLECT_AFTER_S
from io_tui.ui.screens.help import HelpScreen
from io_tui.ui.screens.main import MainScreen


async def test_a_closed_screen_is_freed_once_the_operator_is_back(make_app) -> None:
    """With Python's own passes off, only the app's can free the closed help screen's cycles:
    none runs while the screen is open, one runs once it has closed and frees it."""
    app = make_app(demo=False)
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            while not hasattr(app, "collector"):  # made once the first frame is drawn
                await pilot.pause(0.02)
            gc.disable()  # after the app turned the collector on, as it does then
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


async def test_no_screen_parses_the_stylesheet_again_when_it_first_opens(make_app) -> None:
    """Every screen's stylesheet is read after the first frame: opening each screen once (the
    F-keys, the new-run dialog, the inspector, the palette) never parses the app's again."""
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        while not hasattr(app, "collector"):  # the first frame drawn, the styles read
            await pilot.pause(0.02)
        parses = 0
        reparse = app.stylesheet.reparse

        def counted() -> None:
            nonlocal parses
            parses += 1
            reparse()

        app.stylesheet.reparse = counted  # type: ignore[method-assign]
        for key in ("f1", "f2", "f3", "f4", "f5", "ctrl+n", "i", "ctrl+p"):
            await pilot.press(key)
            await pilot.pause(0.2)
            assert not isinstance(app.screen, MainScreen), key
            while not isinstance(app.screen, MainScreen):
                await pilot.press("escape")
                await pilot.pause(0.05)
        assert parses == 0


async def test_an_app_closed_before_its_panes_were_up_starts_nothing_after(make_app) -> None:
    """The work after the first frame waits on a timer (after a boot); an app quit before it
    fires (a ctrl+q in the first tenth of a second) starts none of it, and raises nothing."""
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        while not hasattr(app, "collector"):
            await pilot.pause(0.02)
        collector = app.collector
    assert not app.is_running
    app._after_first_frame()  # as a timer that fires late would
    assert app.collector is collector

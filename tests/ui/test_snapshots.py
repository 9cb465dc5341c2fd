"""SVG snapshots of the real app driven by the demo: fixed size, theme, no blink, workers awaited."""

from __future__ import annotations

from textual.pilot import Pilot

from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import freeze, wait_until_idle

from .conftest import SIZE


async def _settle(pilot: Pilot[object], *keys: str, step: int | None = None) -> None:
    await wait_until_idle(pilot)
    screen = pilot.app.screen
    if isinstance(screen, MainScreen) and screen.selected_run is not None:
        screen.select_run(1, step)
        await wait_until_idle(pilot)
        await _scroll_end_once_laid_out(pilot, screen)
        screen.run_tree.scroll_home(animate=False)
        await pilot.pause(0.2)
    if keys:
        await pilot.press(*keys)
        await wait_until_idle(pilot)
    freeze(pilot.app)
    await pilot.pause(0.1)


async def _scroll_end_once_laid_out(pilot: Pilot[object], screen: MainScreen) -> None:
    """Transcript steps keep arriving after the workers finish (a followed transcript loads new
    steps at most twice a second); wait until its height has held for 0.8 s, then show its end."""
    transcript = screen.transcript
    last, stable = -1.0, 0
    for _ in range(100):
        await pilot.pause(0.1)
        stable = stable + 1 if transcript.virtual_size.height == last else 0
        last = transcript.virtual_size.height
        if stable >= 8:
            break
    transcript.scroll_end(animate=False)
    await pilot.pause(0.1)


def test_main_screen_after_demo(snap_compare, make_app) -> None:
    """The finished demo run: ten steps in the tree, transcript, gauges with drift."""
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=_settle)


def test_main_screen_light_theme(snap_compare, make_app) -> None:
    """The same screen in io-light."""
    assert snap_compare(make_app(theme="io-light"), terminal_size=SIZE, run_before=_settle)


def test_inspector_step_10(snap_compare, make_app) -> None:
    """The manifest of step 10's request and its fixed sections: step 2's test run carried
    whole until the next rewrite (step 8 ran it again), step 3's read refreshed after step 6's
    edit, step 9's grep dropped (it gave step 4's result again, which stays carried)."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", step=10)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_lifecycle_of_the_dropped_grep(snap_compare, make_app) -> None:
    """``l`` on step 9's grep (the last entry) in step 10's inspector: its call id in the query
    box, the one entry it names, its story (dropped with its step, pointing at step 4's same
    result) with the manifest's reason, and the compaction ledger (no summary in the demo)."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", *["down"] * 8, "l", step=10)

    assert snap_compare(make_app(), terminal_size=SIZE, run_before=run_before)


def test_trace_viewer(snap_compare, make_app) -> None:
    """The trace viewer: the run header and the first steps with their full results."""
    assert snap_compare(make_app(), terminal_size=SIZE, run_before=lambda p: _settle(p, "t"))


def test_help_screen(snap_compare, make_app) -> None:
    """Help lists keys with their binding ids."""
    assert snap_compare(
        make_app(demo=False), terminal_size=SIZE, run_before=lambda p: _settle(p, "f1")
    )

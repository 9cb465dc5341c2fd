"""The progress ledger in the TUI: ``l`` shows the selected run's ledger beside its transcript (in
its place below 110 columns), and the new-run dialog's "Continue" starts a fresh run from it."""

from __future__ import annotations

from textual.pilot import Pilot
from textual.widgets import Select

from io_tui.core.progress.keeper import ledger_of
from io_tui.core.progress.render import render_ledger
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.new_run import NewRunScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.ledger_pane import LedgerPane

from .test_snapshots import _settle

NARROW = (80, 24)


async def _ledger_shown(pilot: Pilot[object]) -> LedgerPane:
    pane = pilot.app.screen.query_one("#ledger", LedgerPane)
    for _ in range(100):
        if pane.ledger is not None:
            break
        await pilot.pause(0.05)
    return pane


async def test_l_shows_the_selected_runs_ledger_and_hides_it(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_until_idle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        pane = screen.query_one("#ledger", LedgerPane)
        assert not pane.display
        await pilot.press("l")
        pane = await _ledger_shown(pilot)
        ledger = await ledger_of(app.store, 1)
        assert pane.display and screen.transcript.display  # beside the transcript
        assert (
            pane.ledger == ledger and pane.border_title == f"Ledger · run 1 · rev {ledger.revision}"
        )
        shown = str(pane.text.render())
        text = render_ledger(ledger).splitlines()  # the store's ledger, as text, not markup
        action = next(line for line in text if line.startswith("Next safe action:"))
        assert shown.splitlines()[1] == action  # the next safe action first
        assert set(shown.splitlines()[1:]) == set(text[1:])  # then every other line of it
        assert "textstats/core.py (edit_file, step 6)" in shown
        await pilot.press("l")
        assert not pane.display


async def test_below_110_columns_the_ledger_takes_the_transcripts_place(make_app) -> None:
    app = make_app()
    async with app.run_test(size=NARROW) as pilot:
        await wait_until_idle(pilot)
        await pilot.press("l")
        pane = await _ledger_shown(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        assert pane.display and not screen.query_one("#side").display
        assert screen.run_tree.display  # the runs stay: another run shows its own ledger
        assert pane.region.right <= 80 and pane.region.bottom <= 24


async def test_continue_from_a_run_in_the_new_run_dialog(make_app) -> None:
    """Continue from run 1 with the task left empty: run 2 starts in run 1's workspace, its
    first request carrying run 1's ledger."""
    app = make_app()
    async with app.run_test(size=(140, 44)) as pilot:
        await wait_until_idle(pilot)
        await pilot.press("ctrl+n")
        for _ in range(100):
            if isinstance(app.screen, NewRunScreen):
                break
            await pilot.pause(0.05)
        dialog = app.screen
        assert isinstance(dialog, NewRunScreen)
        choose = dialog.query_one("#continue-from", Select)
        for _ in range(100):
            if dialog.run_workspaces:
                break
            await pilot.pause(0.05)
        choose.value = 1
        await pilot.pause(0.1)
        assert dialog.request().continue_run_id == 1
        await pilot.press("ctrl+s")
        for _ in range(200):
            if await app.store.runs.get(2) is not None:
                break
            await pilot.pause(0.05)
        await wait_until_idle(pilot)
        run = await app.store.runs.get(2)
        assert run is not None and run.contract["continues"]["run_id"] == 1
        assert run.workspace == (await app.store.runs.get(1)).workspace
        first = (await app.store.trace.requests(2))[0]
        assert any("Progress ledger of run 1" in m["content"] for m in first.messages)


def test_ledger_80x24(snap_compare, make_app) -> None:
    """The demo's run 1 ledger in the transcript's place: the objective, the approved edit, the
    modified file and memory note with digests, both checks passed, nothing open, the next
    safe action; the run tree stays on the left."""
    assert snap_compare(make_app(), terminal_size=NARROW, run_before=lambda p: _ledger_settled(p))


def test_ledger_140x44(snap_compare, make_app) -> None:
    """At 140 columns the ledger stands beside the transcript and the budgets."""
    assert snap_compare(
        make_app(), terminal_size=(140, 44), run_before=lambda p: _ledger_settled(p)
    )


async def _ledger_settled(pilot: Pilot[object]) -> None:
    await _settle(pilot)
    await pilot.press("l")
    await _ledger_shown(pilot)
    await wait_until_idle(pilot)
    await pilot.pause(0.1)

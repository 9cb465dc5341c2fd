"""App-wide flows: every main-screen key in the command palette, the palette's demo on a fresh
copy, the theme kept across restarts (not in the config file), F-keys switching screens."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from palette import run_from_palette
from waits import until

from io_tui.ui import ui_state
from io_tui.ui.screens.audit import AuditScreen
from io_tui.ui.screens.inspector import InspectorScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.rules import RulesScreen
from io_tui.ui.screens.trace import TraceScreen
from io_tui.ui.testing import wait_until_idle

from .conftest import SIZE


async def test_the_inspector_and_the_trace_are_in_the_palette(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        await run_from_palette(pilot, "main: inspect")
        await wait_until_idle(pilot)
        assert isinstance(app.screen, InspectorScreen)
        await run_from_palette(
            pilot, "main: trace"
        )  # from the inspector: it closes, the trace opens
        await wait_until_idle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert [type(s).__name__ for s in app.screen_stack] == ["MainScreen", "TraceScreen"]


async def test_every_main_screen_key_is_a_palette_command(make_app) -> None:
    from io_tui.ui.commands import KeyCommands

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        provider = KeyCommands(app.screen)
        names = {name: help_text for name, _, help_text in provider.commands()}
        on_step = ("rewind", "fork", "whatif")  # offered once a step is selected
        for binding in MainScreen.BINDINGS:
            # interrupt only while the selected run is live, resume while it is interrupted
            if binding.action in ("interrupt", "resume", *on_step):
                assert f"Main: {binding.description}" not in names
                continue
            assert f"Main: {binding.description}" in names, binding.id
        assert names["Main: Inspect"].endswith("key i")
        assert names["App: Audit"].endswith("key f5")
        main = app.main_screen()
        assert main is not None
        main.select_run(1, 2)
        await wait_until_idle(pilot)
        names = {name: help_text for name, _, help_text in KeyCommands(app.screen).commands()}
        for binding in MainScreen.BINDINGS:
            if binding.action in on_step:
                assert f"Main: {binding.description}" in names, binding.id
        assert names["Main: Fork"].endswith("key f")


async def test_the_palette_demo_runs_on_a_fresh_copy_each_time(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        first = Path(app.runs[1].workspace)
        (first / "textstats" / "core.py").write_text("broken on purpose\n")  # a used folder
        await run_from_palette(pilot, "run: demo")
        await until(lambda: 2 in app.runs and app.runs[2].status == "finished", "run 2", 60)
        await wait_until_idle(pilot, within_s=60)
        second = app.runs[2]
        assert Path(second.workspace) != first
        assert second.status == "finished" and second.outcome == "success"


async def test_the_theme_is_kept_across_restarts_not_in_the_config(make_app) -> None:
    state = Path(os.environ["IO_TUI_UI_STATE"])
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+t")
        chosen = app.theme
        assert chosen != "io-dark"
    assert ui_state.load(state) == ui_state.UiState(chosen, "io-dark")
    again = make_app(demo=False)
    async with again.run_test(size=SIZE) as pilot:
        assert again.theme == chosen
    edited = make_app(demo=False, theme="io-ember")  # the config's theme changed since
    async with edited.run_test(size=SIZE) as pilot:
        assert edited.theme == "io-ember"


async def test_an_unreadable_state_file_is_ignored(make_app) -> None:
    await asyncio.to_thread(Path(os.environ["IO_TUI_UI_STATE"]).write_text, "{not json")
    app = make_app(demo=False)
    async with app.run_test(size=SIZE):
        assert app.theme == "io-dark"


async def test_f_keys_switch_screens_instead_of_stacking_them(make_app) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("f3")
        await pilot.pause()
        assert isinstance(app.screen, RulesScreen)
        await pilot.press("f5")
        await pilot.pause()
        assert isinstance(app.screen, AuditScreen)
        assert len(app.screen_stack) == 2  # rules closed when audit opened
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_a_state_file_that_cannot_be_written_is_reported_not_fatal(
    make_app, monkeypatch, tmp_path
) -> None:
    blocker = tmp_path / "a-file"
    await asyncio.to_thread(blocker.write_text, "")
    monkeypatch.setenv("IO_TUI_UI_STATE", str(blocker / "ui-state.json"))  # under a file
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert app.theme != "io-dark"
        assert any("not kept for the next start" in n.message for n in app._notifications)


async def _palette_names(pilot: Any, query: str) -> list[str]:
    """The palette's hits for ``query``, best first, once its search has answered."""
    from textual.command import CommandList, CommandPalette

    await pilot.press("ctrl+p")
    await until(lambda: isinstance(pilot.app.screen, CommandPalette), "the palette", 10)
    await pilot.press(*query)

    def hits() -> list[str]:
        found = pilot.app.screen.query(CommandList)
        if not found or found.first().highlighted is None:
            return []
        listed = found.first()
        return [str(listed.get_option_at_index(i).prompt) for i in range(listed.option_count)]

    await until(hits, f"hits for {query!r}", 10)
    await pilot.pause(0.3)  # every provider answered
    names = [name.splitlines()[0] for name in hits()]
    await pilot.press("escape")
    return names


async def test_clearing_notes_from_the_palette_asks_and_never_comes_up_by_chance(make_app) -> None:
    """A fuzzy query for something else never lists the destructive command; named, it ranks
    last, and it clears only after a yes."""
    from io_tui.ui.screens.confirm import ConfirmScreen

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        workspace = app.runs[1].workspace
        assert await app.store.notes.notes_for(workspace)  # the demo remembered its test command
        names = await _palette_names(pilot, "inspe")
        assert names and names[0].startswith("Main: Inspect")
        assert not any("clear" in name for name in names)
        names = await _palette_names(pilot, "memory")
        assert names[-1] == "Memory: clear this workspace's notes (keeps pinned)"

        await run_from_palette(pilot, "memory clear")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the question", 10)
        await pilot.press("n")
        await wait_until_idle(pilot)
        assert await app.store.notes.notes_for(workspace)  # no: nothing cleared

        await run_from_palette(pilot, "memory clear")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the question", 10)
        await pilot.press("y")
        await until(lambda: not [w for w in app.workers if w.group == "db"], "the clear", 10)
        assert [n for n in await app.store.notes.notes_for(workspace) if not n.pinned] == []

"""The main screen's first frame is its layout (the skeleton), drawn by the screen; the panes take
its places a frame later, and nothing the app learnt or was asked in between is lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from damaged_store import MALFORMED, damage_table, sha256
from scripted_run import run_script
from textual.command import CommandPalette
from textual.containers import Vertical
from textual.css.stylesheet import Stylesheet
from textual.geometry import Size
from textual.pilot import Pilot
from textual.widgets import Footer, Input

from io_tui.core.events import EventKind, RunEvent
from io_tui.core.store import Store
from io_tui.ui.app import IoApp
from io_tui.ui.messages import RunEventsReceived
from io_tui.ui.screens.main import PROMPT_PLACEHOLDER, MainScreen
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.skeleton import main_layout
from io_tui.ui.widgets.title_bar import TitleBar
from io_tui.ui.widgets.transcript import Transcript

from .conftest import SIZE


@asynccontextmanager
async def panes_held(
    app: IoApp, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[tuple[Pilot[None], Callable[[], Awaitable[None]]]]:
    """The app started with its main screen left on the skeleton; the yielded coroutine
    function mounts the panes as the screen would have after its first frame."""
    mount = MainScreen._mount_panes

    async def held(self: MainScreen) -> None:
        pass

    monkeypatch.setattr(MainScreen, "_mount_panes", held)
    async with app.run_test(size=SIZE) as pilot:

        async def release() -> None:
            screen = app.screen
            assert isinstance(screen, MainScreen)
            await mount(screen)

        yield pilot, release


async def _until(pilot: Pilot[int], done: Callable[[], object], turns: int = 1000) -> None:
    """Process the app's messages until ``done()`` (at most ``turns`` rounds; no fixed sleep)."""
    for _ in range(turns):
        if done():
            return
        await pilot.pause()
    raise AssertionError("condition not reached")


async def _ready(pilot) -> MainScreen:  # type: ignore[no-untyped-def]
    screen = pilot.app.screen
    assert isinstance(screen, MainScreen)
    await _until(pilot, lambda: screen.ready and screen.query(Footer))
    await pilot.pause()
    return screen


async def test_the_first_frame_is_the_layout_drawn_by_the_screen(make_app, monkeypatch) -> None:
    app = make_app(demo=False)
    async with panes_held(app, monkeypatch) as (pilot, _):
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen) and not screen.ready
        assert not screen.children  # no widget yet: the screen draws the lines
        rows = [screen.render_line(y).text for y in range(SIZE[1])]
        layout = main_layout(Size(*SIZE))
        assert "io-tui — agent cockpit" in rows[0]
        assert rows[1].startswith("╭─ Runs ─") and "╮╭─ Budgets ─" in rows[1]
        box = layout.transcript
        assert rows[box.y][box.x :] == "╭─ Transcript " + "─" * (box.width - 15) + "╮"
        assert rows[layout.prompt.y + 1].startswith(f"▊  {PROMPT_PLACEHOLDER}")
        assert all(len(row) == SIZE[0] for row in rows)


@pytest.mark.parametrize("size", [(140, 44), (80, 24), (60, 20), (200, 50)])
async def test_the_panes_take_the_places_the_skeleton_drew(make_app, size) -> None:
    """``main_layout`` mirrors main.tcss: at every size the panes land where the first frame
    drew them (the runs pane at its 30-column minimum on the narrow screen)."""
    app = make_app(demo=False)
    async with app.run_test(size=size) as pilot:
        screen = await _ready(pilot)
        layout = main_layout(Size(*size))
        assert screen.query_one(TitleBar).region == layout.header
        assert screen.query_one(RunTree).region == layout.runs
        assert screen.query_one("#gauges", Vertical).region == layout.gauges
        assert screen.query_one(Transcript).region == layout.transcript
        assert screen.query_one(Input).region == layout.prompt
        assert screen.query_one(Footer).region == layout.footer


async def test_runs_that_arrive_before_the_panes_are_shown_in_them(make_app, monkeypatch) -> None:
    app = make_app(demo=False)
    async with panes_held(app, monkeypatch) as (pilot, release):
        events = [RunEvent(1, 0, EventKind.RUN_STARTED, {"goal": "early", "workspace": "/w"})]
        for step in (1, 2):
            events.append(RunEvent(1, step, EventKind.REQUEST_STARTED, {}))
            events.append(RunEvent(1, step, EventKind.STEP_COMMITTED, {"tokens": 100}))
        app.post_message(RunEventsReceived(tuple(events)))
        await pilot.pause()
        assert set(app.runs[1].steps) == {1, 2} and not app.screen.ready  # type: ignore[attr-defined]
        await release()
        screen = await _ready(pilot)
        assert set(screen.run_tree.step_nodes) == {(1, 1), (1, 2)}
        assert screen.selected_run == 1


async def test_keys_before_the_panes_do_nothing(make_app, monkeypatch) -> None:
    app = make_app(demo=False)
    async with panes_held(app, monkeypatch) as (pilot, release):
        await pilot.press("i", "t", "m", "x", "e", "escape", "down", "enter")
        assert isinstance(app.screen, MainScreen) and app.return_code is None
        await release()
        screen = await _ready(pilot)
        assert screen.focused is screen.run_tree
        await pilot.press("m")
        assert screen.focused is screen.prompt


async def test_quitting_while_the_panes_mount_is_clean(make_app, monkeypatch) -> None:
    """Textual's Header raised NoMatches from its title watcher when the app closed while the
    Header mounted; the title bar has no children to look up. Quit at every point of start-up:
    at once, on the skeleton, while the panes mount, while the footer mounts, once ready."""
    mount_all, mount = MainScreen.mount_all, MainScreen.mount
    quit_in: set[str] = set()

    def quitting_mount_all(self: MainScreen, *args: Any, **kw: Any) -> Any:
        mounting = mount_all(self, *args, **kw)
        if "panes" in quit_in:
            self.app.exit()  # while they mount
        return mounting

    def quitting_mount(self: MainScreen, *args: Any, **kw: Any) -> Any:
        mounting = mount(self, *args, **kw)
        if "footer" in quit_in and any(isinstance(w, Footer) for w in args):
            self.app.exit()
        return mounting

    monkeypatch.setattr(MainScreen, "mount_all", quitting_mount_all)
    monkeypatch.setattr(MainScreen, "mount", quitting_mount)
    for point in ("start", "skeleton", "panes", "footer", "ready"):
        quit_in.clear()
        quit_in.add(point)
        app = make_app(demo=False)
        async with app.run_test(size=SIZE) as pilot:
            if point == "skeleton":
                await _until(pilot, lambda: isinstance(app.screen, MainScreen))  # noqa: B023
            elif point == "ready":
                await _ready(pilot)
            elif point in ("panes", "footer"):
                await _until(pilot, lambda: app.return_code is not None)  # noqa: B023
            if point in ("start", "skeleton", "ready"):
                app.exit()
        assert app.return_code in (None, 0)


async def test_title_bar_follows_the_title_and_its_icon_opens_the_palette(make_app) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _ready(pilot)
        bar = screen.query_one(TitleBar)
        app.title = "io-tui [1 asking]"
        await pilot.pause()
        assert "io-tui [1 asking] — agent cockpit" in str(bar.render())
        await pilot.click(TitleBar, offset=(1, 0))
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)


async def test_a_configured_theme_is_parsed_once_and_switching_restyles(
    make_app, monkeypatch
) -> None:
    """The theme chosen in ``__init__`` goes into the stylesheet before it is first parsed; the
    refresh that setting it queues is skipped (it parsed and applied every rule again before the
    first frame). A later switch still restyles every widget."""
    reparsed: list[Stylesheet] = []
    reparse = Stylesheet.reparse

    def counting(self: Stylesheet) -> None:
        reparsed.append(self)
        reparse(self)

    monkeypatch.setattr(Stylesheet, "reparse", counting)
    before_the_screens: list[int] = []  # parses up to the first frame
    app = make_app(demo=False, theme="io-light")
    read_screen_styles = app._read_screen_styles  # after the frame: parses again, once

    def first_frame_drawn() -> None:
        before_the_screens.append(len(reparsed))
        read_screen_styles()

    monkeypatch.setattr(app, "_read_screen_styles", first_frame_drawn)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _ready(pilot)
        await _until(pilot, lambda: before_the_screens)
        assert before_the_screens == [0]
        light = screen.styles.background
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert reparsed and app.theme != "io-light"
        assert screen.styles.background != light


async def test_a_run_written_by_another_process_appears_at_the_next_poll(
    make_app, tmp_path, store_on_both
) -> None:
    """The store the app opened in the background is the one it polls: a run that another
    process (``io-tui run``) writes shows in the tree; on a SQLite file and on PostgreSQL."""
    app = make_app(demo=False, store=store_on_both)
    async with app.run_test(size=SIZE) as pilot:
        screen = await _ready(pilot)
        await app.workers.wait_for_complete()  # the first read of the store
        await pilot.pause()
        assert app.runs == {} and app.return_code is None
        async with await Store.open(app.store_path) as other:  # a second connection
            run_id = await other.runs.create(
                goal="goal", workspace=str(tmp_path), contract={}, provider={}, policy={}
            )
        app.poll_store()
        await app.workers.wait_for_complete()
        await _until(pilot, lambda: run_id in screen.run_tree.run_nodes)


async def test_a_corrupt_store_ends_the_app_with_its_reason(make_app, tmp_path) -> None:
    bad = tmp_path / "store.db"  # the store make_app opens
    bad.write_bytes(b"this is not sqlite" * 100)
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await asyncio.wait([app.store.db.open_soon()])  # the background open, failed
        await _until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 2
    assert bad.read_bytes() == b"this is not sqlite" * 100


async def _store_with_a_run(path: Path, workspace: Path, script: Path) -> None:
    async with await Store.open(path) as store:
        await run_script(store, workspace, script)


def _as_it_ended(app: IoApp) -> tuple[list[str], list[str]]:
    """Its toasts and what it prints as it exits (taken before the exit clears them)."""
    return [n.message for n in app._notifications], [str(r) for r in app._exit_renderables]


def _ended_with_its_line(
    app: IoApp, ended: tuple[list[str], list[str]], path: Path, before: str
) -> None:
    """The app ended as for a store it cannot open: exit 2, no toast, the one line printed as
    it exits, and the file as it was."""
    toasts, said = ended
    assert app.return_code == 2 and toasts == []
    [message] = said
    assert message.startswith(f"store {path} is damaged ({MALFORMED}); ")
    assert sha256(path) == before


async def test_a_store_damaged_past_its_open_ends_the_app_with_one_line(
    make_app, tmp_path, workspace, write_script
) -> None:
    """The open passes; the app's first read of the runs' steps meets the damaged page: the app
    ends as for a store it cannot open (exit 2, the one line), no toast, the file unchanged."""
    path = tmp_path / "store.db"  # the store make_app opens
    await _store_with_a_run(path, workspace, write_script([{"text": "done"}]))
    before = damage_table(path, "steps")
    app = make_app(demo=False)  # its runs inline: only the app's own reads meet the damage
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.return_code is not None)
        ended = _as_it_ended(app)
    _ended_with_its_line(app, ended, path, before)


async def test_a_store_the_harness_worker_finds_damaged_ends_the_app_with_one_line(
    make_app, tmp_path, workspace, write_script
) -> None:
    """A page the app never reads (the rules): the harness worker's check at its open finds it,
    its one line ends the app (exit 2) instead of a "Harness stopped" toast."""
    path = tmp_path / "store.db"
    await _store_with_a_run(path, workspace, write_script([{"text": "done"}]))
    before = damage_table(path, "rules")
    app = make_app(demo=False, harness="process")
    async with app.run_test(size=SIZE) as pilot, asyncio.timeout(60):  # a process starts
        while app.return_code is None:
            await pilot.pause(0.05)
        ended = _as_it_ended(app)
    _ended_with_its_line(app, ended, path, before)

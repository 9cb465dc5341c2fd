"""The CLI's app (``boot_app``) paints the main screen's layout before it loads the settings and
imports the core, in the theme the user will see; then the cockpit is built and the panes take
the skeleton's places, and the keys typed meanwhile reach them."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.geometry import Size
from textual.message import Message
from textual.pilot import Pilot
from textual.widgets import Input

from io_tui.config import Settings
from io_tui.ui import ui_state
from io_tui.ui.app import IoApp, boot_app
from io_tui.ui.first_theme import configured_theme
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.skeleton import SkeletonScreen
from io_tui.ui.widgets.skeleton import main_layout

from .conftest import SIZE


class HeldBoot:
    """A boot that waits on the test: ``release`` lets it find the store, then
    ``release_settings`` (by default ``release`` too) lets it load the settings."""

    def __init__(
        self, store: Path, settings: Settings | None = None, *, hold_settings: bool = False
    ) -> None:
        self.path = store
        self.loaded = settings
        self.gate = threading.Event()
        self.settings_gate = threading.Event()
        self.called = threading.Event()
        self.settings_called = threading.Event()
        self.error: Exception | None = None  # what finding the store raises
        self.settings_error: Exception | None = None
        self.hold_settings = hold_settings

    def store(self) -> Path:
        self.called.set()
        self.gate.wait(30)
        if self.error is not None:
            raise self.error
        return self.path

    def settings(self) -> Settings:
        self.settings_called.set()
        self.settings_gate.wait(30)
        if self.settings_error is not None:
            raise self.settings_error
        return self.loaded or _settings()

    def release(self) -> None:
        self.gate.set()
        if not self.hold_settings:
            self.settings_gate.set()


def _settings() -> Settings:
    return Settings(ui={"harness": "inline"})  # type: ignore[arg-type]


async def _until(pilot: Pilot[int], done: Callable[[], object], turns: int = 2000) -> None:
    for _ in range(turns):
        if done():
            return
        await pilot.pause(0.01)
    raise AssertionError("condition not reached")


def _ready(app: IoApp) -> bool:
    screen = app.screen
    return isinstance(screen, MainScreen) and screen.ready


def _rows(app: IoApp) -> list[str]:
    return [app.screen.render_line(y).text for y in range(SIZE[1])]


async def test_the_layout_is_painted_before_the_settings_load(tmp_path: Path) -> None:
    boot = HeldBoot(tmp_path / "store.db")
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, boot.called.is_set)
        screen = app.screen
        assert type(screen) is SkeletonScreen and not app.started
        skeleton = _rows(app)
        assert "io-tui — agent cockpit" in skeleton[0]
        box = main_layout(Size(*SIZE)).transcript
        assert skeleton[box.y][box.x :].startswith("╭─ Transcript ─")
        boot.release()
        await _until(pilot, lambda: app.started)
        assert _ready(app) and app.store_path == tmp_path / "store.db"
        assert len(app.screen_stack) == 1  # the main screen is the one base screen
        assert app.return_code is None


async def test_the_panes_show_the_stores_runs_before_the_settings_load(tmp_path: Path) -> None:
    """The settings (pydantic, ~40 % of the way to the panes) load once the panes show the
    store's runs; the keys typed before that wait for them (``[ui.keys]`` may remap them), and
    ``x`` interrupts a run only once there is a host to drive one."""
    store = tmp_path / "store.db"
    await _a_run_in(store, "the stored task")
    boot = HeldBoot(store, hold_settings=True)
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        boot.release()
        await _until(pilot, boot.settings_called.is_set)
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.host is None and not app.started
        nodes = screen.run_tree.run_nodes
        await _until(pilot, lambda: 1 in nodes and "the stored task" in str(nodes[1].label))
        await pilot.press("m", "h", "i")
        assert screen.prompt.value == "" and screen.x_does() != "interrupt"
        boot.settings_gate.set()
        await _until(pilot, lambda: app.started and screen.prompt.value == "hi")
        assert screen.host is app.host and screen.focused is screen.prompt


async def _a_run_in(path: Path, task: str) -> None:
    from io_tui.core import Store

    store = await Store.open(path, create=True)
    try:
        await store.runs.create(
            goal=task, workspace=str(path.parent), contract={}, provider={}, policy={}
        )
    finally:
        await store.close()


async def test_the_main_screen_arrives_without_restyling_the_app(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its rules are the app's (main.tcss) and its widgets are styled as they mount: a new
    mode's screen would otherwise have every rule parsed again and applied to every node,
    twice, on the way to the panes."""
    from textual.css.stylesheet import Stylesheet

    reparsed: list[object] = []
    reparse = Stylesheet.reparse
    monkeypatch.setattr(Stylesheet, "reparse", lambda sheet: reparsed.append(reparse(sheet)))
    boot = HeldBoot(tmp_path / "store.db", hold_settings=True)
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        boot.release()
        await _until(pilot, boot.settings_called.is_set)  # the panes are painted
        ready, restyled = _ready(app), list(reparsed)
        boot.settings_gate.set()
    assert ready and restyled == []


async def test_the_main_screen_draws_the_same_first_frame(tmp_path: Path, monkeypatch) -> None:
    """The main screen arrives on the skeleton's frame: until its panes mount it draws the
    same lines, so the change of screens does not show."""
    boot = HeldBoot(tmp_path / "store.db")
    app = boot_app(boot)
    monkeypatch.setattr(MainScreen, "_mount_panes", lambda self: asyncio.sleep(0))
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, boot.called.is_set)
        skeleton = _rows(app)
        boot.release()
        await _until(pilot, lambda: isinstance(app.screen, MainScreen))
        await pilot.pause()
        assert _rows(app) == skeleton


async def test_keys_typed_while_the_cockpit_loads_reach_the_panes(tmp_path: Path) -> None:
    boot = HeldBoot(tmp_path / "store.db")
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, boot.called.is_set)
        await pilot.press("m", "h", "i")
        assert app.return_code is None and type(app.screen) is SkeletonScreen
        boot.release()
        await _until(pilot, lambda: _ready(app))
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await _until(pilot, lambda: screen.prompt.value == "hi")
        assert screen.focused is screen.prompt


async def test_a_new_run_asked_for_while_the_cockpit_loads_opens(tmp_path: Path) -> None:
    """ctrl+n and the task typed after it: the dialog opens once the cockpit is up, with the
    task in its field (the typeahead holds the keys for it as for any ctrl+n)."""
    from io_tui.ui.screens.new_run import NewRunScreen

    boot = HeldBoot(tmp_path / "store.db")
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, boot.called.is_set)
        await pilot.press("ctrl+n", "f", "i", "x")
        boot.release()
        await _until(pilot, lambda: isinstance(app.screen, NewRunScreen))
        dialog = app.screen

        def task() -> list[str]:  # the dialog's Task field, once it is mounted
            return [field.value for field in dialog.query("#task").results(Input)]

        await _until(pilot, lambda: task() == ["fix"])


@pytest.mark.parametrize("step", ["store", "settings"])
async def test_quit_while_the_cockpit_loads(tmp_path: Path, step: str) -> None:
    """ctrl+q quits at once, on the skeleton (the store being found) as on the panes (the
    settings loading); what the boot thread returns after builds nothing."""
    boot = HeldBoot(tmp_path / "store.db", hold_settings=True)
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        if step == "settings":
            boot.release()
        await _until(pilot, (boot.settings_called if step == "settings" else boot.called).is_set)
        await pilot.press("ctrl+q")
        await _until(pilot, lambda: app.return_code is not None, turns=300)  # at once
        boot.release()
        boot.settings_gate.set()  # the boot thread ends; nothing is built from it
    assert app.return_code == 0 and not app.started


@pytest.mark.parametrize("step", ["store", "settings"])
async def test_what_the_boot_raises_ends_the_app_for_the_cli_to_say(
    tmp_path: Path, step: str
) -> None:
    """Finding the store (a URL it cannot read) or loading the settings (a malformed config,
    found once the panes are up): the app ends (exit 2, the error kept for the CLI to say in
    one line), and a store that was not there is not made."""
    boot = HeldBoot(tmp_path / "store.db")
    error = ValueError("config (c.toml or IO_TUI_* env): max_steps: not a number")
    if step == "store":
        boot.error = error
    else:
        boot.settings_error = error
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        boot.release()
        await _until(pilot, lambda: app.return_code is not None)
    assert app.return_code == 2 and app.boot_error is error and not app.started
    assert app.viewing is (step == "settings") and not (tmp_path / "store.db").exists()


async def test_a_broken_theme_file_is_said_once_after_the_boot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every theme file is read and validated once the settings are loaded, once, whatever
    theme the first frame guessed: its error is one notification."""
    from io_tui.ui import themes

    bad = tmp_path / "themes"
    bad.mkdir()
    (bad / "oops.toml").write_text("name = ")
    load = themes.load_themes
    monkeypatch.setattr(themes, "load_themes", lambda: load(bad))  # the app's, once booted
    # settings whose theme the first frame could not guess (given here, not by a config file)
    settings = Settings(ui={"harness": "inline", "theme": "io-light"})  # type: ignore[arg-type]
    boot = HeldBoot(tmp_path / "store.db", settings)
    boot.release()
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, lambda: app.started)  # the settings loaded, the themes checked
        await pilot.pause(0.1)
        said = [n.message for n in app._notifications if "oops.toml" in n.message]
    assert len(said) == 1 and app.theme == "io-light"


@pytest.mark.parametrize(
    ("config", "env", "remembered", "first"),
    [
        ("[ui]\ntheme = 'io-light'\n", {}, None, "io-light"),
        ("[ui]\ntheme = 'io-light'\n", {"IO_TUI_UI__THEME": "io-ember"}, None, "io-ember"),
        ("", {"io_tui_ui": '{"theme": "io-light"}'}, None, "io-light"),
        ("", {}, None, "io-dark"),
        ("[ui]\ntheme = 'io-light'\n", {}, ("io-ember", "io-light"), "io-ember"),
        ("[ui]\ntheme = 'io-light'\n", {}, ("io-ember", "io-dark"), "io-light"),  # config changed
        ("[ui]\ntheme = [broken\n", {}, None, "io-dark"),  # the settings' load says so
    ],
)
async def test_the_first_frame_is_in_the_theme_the_settings_choose(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str,
    env: dict[str, str],
    remembered: tuple[str, str] | None,
    first: str,
) -> None:
    """The first frame's theme, guessed before pydantic loads, is the one the settings and
    the UI state file choose once loaded: no change of theme when the cockpit arrives."""
    path = tmp_path / "config.toml"
    path.write_text(config)
    monkeypatch.setenv("IO_TUI_CONFIG", str(path))
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    if remembered is not None:
        ui_state.changed(theme=remembered[0], config_theme=remembered[1])
    assert configured_theme() in (first, remembered and remembered[1])
    broken = "broken" in config
    boot = HeldBoot(tmp_path / "store.db")
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, boot.called.is_set)
        assert app.theme == first
        if broken:
            boot.error = ValueError("not valid TOML")
        boot.release()
        await _until(pilot, lambda: app.started or app.return_code is not None)
        assert app.theme == first


async def test_a_ready_that_reaches_the_app_after_it_stopped_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quit (or the end of a test) while the panes mount: the screen's ``Ready`` can reach the
    app after it stopped running, as it did in the suite on a loaded machine. It starts
    nothing then (no follower, no demo, no key replay) and raises nothing: before, it
    subscribed to a signal of a stopped app and a traceback reached the terminal."""
    kept: list[Message] = []
    post = MainScreen.post_message

    def keep_ready(screen: MainScreen, message: Message) -> bool:
        if isinstance(message, MainScreen.Ready):
            kept.append(message)
            return True
        return post(screen, message)

    monkeypatch.setattr(MainScreen, "post_message", keep_ready)
    boot = HeldBoot(tmp_path / "store.db")
    app = boot_app(boot)
    async with app.run_test(size=SIZE) as pilot:
        await _until(pilot, boot.called.is_set)
        boot.release()
        await _until(pilot, lambda: kept)
    assert not app.is_running
    app.on_main_screen_ready()  # the kept Ready, handled now

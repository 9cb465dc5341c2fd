"""``IoApp``: the cockpit. Built by ``create_app`` (tests, screenshots, benchmarks), or by
``boot_app`` (the CLI): that one paints the main screen's layout first, then shows the store's
runs in the panes (``_load_cockpit``), then loads the settings and starts the cockpit
(``_load_settings``).

Runs execute in a ``RunHost`` (``ui.hosts``): by default a harness worker process, or the app's
own loop (``harness="inline"``). Their events reach the app through one ``EventPump`` as
``RunEventsReceived`` batches (one in flight at a time, the next posted once the last is
applied), are folded into the run views by the app's ``RunBoard`` (``self.runs``) and the
changes applied to the screen under ``batch_update()``.
Hosts and screens talk to the app in messages (``RunStarted``, ``HarnessNotice``, ``StartRun``…);
the app hands each what it needs when it builds it (store, host, settings, the run views).
Human decisions arrive as ``ApprovalRequested`` with a Future, answered by the app's
``ApprovalDesk``; what the operator does to a run's life (start it, on the host or the queue;
resume it; cancel it) is the app's ``RunDesk``. The store opens in the background while the
first frame is drawn (every store call waits for it; one it cannot open ends the app with exit
code 2 and the store's error) and is read after it.
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable
from contextlib import suppress
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual import events, work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.notifications import Notification, SeverityLevel
from textual.screen import ModalScreen, Screen
from textual.theme import Theme
from textual.worker import Worker, WorkerState

from io_tui.ui import ui_state
from io_tui.ui.collector import Collector
from io_tui.ui.first_theme import DEFAULT_THEME, bundled_theme, configured_theme
from io_tui.ui.screens.skeleton import SkeletonScreen
from io_tui.ui.typeahead import Typeahead, typed_again

if TYPE_CHECKING:
    from textual.command import Provider
    from textual.driver import Driver
    from textual.message_pump import MessagePump

    from io_tui.config import HarnessMode, Settings
    from io_tui.core import ApprovalRequest, Approver, Decision, Store, StoreLocation
    from io_tui.ui.approver import ApprovalDesk
    from io_tui.ui.attention import Activity
    from io_tui.ui.bridge import EventPump
    from io_tui.ui.commands import Cockpit
    from io_tui.ui.hosts import RunHost
    from io_tui.ui.mcp_prompts import ServerPrompts
    from io_tui.ui.messages import (
        ApprovalRequested,
        HarnessNotice,
        NewRunRequest,
        NewRunRequested,
        RunEnded,
        RunEventsReceived,
        RunsLost,
        RunStarted,
        RunStopped,
        StartRun,
        StepsLoaded,
        StoreChanged,
        StoreDamagedFound,
    )
    from io_tui.ui.run_board import RunBoard
    from io_tui.ui.run_desk import RunDesk
    from io_tui.ui.screens.main import MainScreen
    from io_tui.ui.screens.new_run import NewRunScreen
    from io_tui.ui.state import RunView

    class Boot(Protocol):
        """What the CLI's app loads after its first frame, each on a thread: where the store
        is (the panes show its runs), then the settings (once the panes are painted)."""

        def store(self) -> StoreLocation: ...

        def settings(self) -> Settings: ...


POLL_INTERVAL = 2.0  # seconds: notice runs changed by other processes (io-tui decide, run)
# seconds: the panes lay out and paint within ~60-100 ms of their footer mounting (140x44)
PANES_PAINT_S = 0.1
GC_YOUNG = 10_000  # allocations between the collector's young passes, in the app


def _provider(module: str, name: str) -> Callable[[], type[Provider]]:
    """A command provider of ``io_tui.ui.<module>``, imported when the palette first opens."""

    def provider() -> type[Provider]:
        loaded: type[Provider] = getattr(importlib.import_module(f"io_tui.ui.{module}"), name)
        return loaded

    return provider


class IoApp(App[int]):
    CSS_PATH = ["app.tcss", "screens/main.tcss"]
    TITLE = "io-tui"
    SUB_TITLE = "agent cockpit"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {  # each imported when the palette first opens
        _provider("commands", "KeyCommands"),  # every key of the app and the main screen
        _provider("commands", "RunCommands"),
        _provider("commands", "ThemeCommands"),
        _provider("commands", "MemoryCommands"),
        _provider("commands", "SteeringCommands"),  # approvals: inbox / rules / memory / audit
        _provider("commands", "McpTrustCommands"),  # a workspace's .mcp.json, by its digest
        _provider("mcp_prompts", "PromptCommands"),  # the MCP servers' prompts → new-run dialog
    }
    BINDINGS = [
        # priority: checked as the key arrives, so the keys typed after it wait for the dialog
        # (``typeahead``) instead of reaching the screen below before it opens
        Binding(
            "ctrl+n",
            "new_run",
            "New run",
            id="app.new_run",
            tooltip="Start a new run",
            priority=True,
        ),
        Binding("f1", "help", "Help", id="app.help", tooltip="Every key, with its binding id"),
        Binding(
            "ctrl+t", "next_theme", "Theme", id="app.theme", tooltip="Switch to the next theme"
        ),
        Binding("ctrl+q", "quit", "Quit", id="app.quit", priority=True, tooltip="Quit io-tui"),
        # approvals: the steering screens
        Binding("f2", "inbox", "Inbox", id="app.inbox", tooltip="Pending approvals across runs"),
        Binding("f3", "rules", "Rules", id="app.rules", tooltip="Remembered rules: list, revoke"),
        Binding("f4", "memory", "Memory", id="app.memory", tooltip="Edit what the agent remembers"),
        Binding("f5", "audit", "Audit", id="app.audit", tooltip="Every approval decision"),
        Binding(  # not in the footer (it is full): in the palette and the help
            "f6",
            "resources",
            "Resources",
            id="app.resources",
            tooltip="Browse what the MCP servers offer to read",
            show=False,
        ),
    ]

    def __init__(
        self,
        settings: Settings | None,
        store_path: StoreLocation | None,
        *,
        demo: bool = False,
        approver: Approver | None = None,
        poll_interval: float | None = POLL_INTERVAL,
        demo_workspace: Path | None = None,
        harness: HarnessMode | None = None,
        boot: Boot | None = None,
    ) -> None:
        """With ``settings`` and ``store_path`` (``create_app``) the cockpit is built here;
        with ``boot`` (``boot_app``) after the first frame, from what ``boot`` loads."""
        super().__init__()
        self.demo = demo
        self.poll_interval = poll_interval
        self.demo_workspace: Path | None = demo_workspace
        self._approver, self._harness, self._boot = approver, harness, boot
        self._booting = False  # ``_load_cockpit`` started
        self.viewing = False  # the store and the run views are built (``_view``)
        self.store_opening = False  # ``_open_store`` was called: store calls wait for it
        self.started = False  # the cockpit is built (``_start``): the settings and the host
        self.boot_error: Exception | None = None  # what ``boot`` raised, for the CLI to say
        self.typeahead = Typeahead(self)  # keys typed while a dialog opens
        # keys typed while the cockpit loads (``boot``), given to its panes once they are up
        self._early_keys: list[events.Key | events.Paste] | None = None
        self._replaying: events.Key | events.Paste | None = None  # the one handed on now
        self.paint_delays: deque[float] = deque(maxlen=100_000)  # event → painted, seconds
        self.events_applied = 0
        state = self._ui_state = ui_state.load()
        self.last_new_run = state.new_run  # what the new-run dialog last started a run with
        self.new_run_dialog: NewRunScreen | None = None  # made on the first ctrl+n, then kept
        if settings is None or store_path is None:
            if boot is None:
                raise ValueError("IoApp needs settings and a store, or a boot to load them")
            self._theme_problems = self._first_theme(state.theme_for(configured_theme()))
        else:
            self._theme_problems = self._choose_theme(state.theme_for(settings.ui.theme))
            self._view(store_path)
            self._start(settings)
        # The stylesheet is first parsed with these variables (it holds the default theme's).
        self._startup_css: dict[str, str] | None = self.get_css_variables()
        self.stylesheet.set_variables(self._startup_css)

    def _view(self, store_path: StoreLocation) -> None:
        """What the panes show before the settings are loaded: the store (opened by
        ``_open_store``) and the run views."""
        from io_tui.core import Store
        from io_tui.ui.attention import Activity
        from io_tui.ui.bridge import EventPump
        from io_tui.ui.run_board import RunBoard

        self.store_path = store_path
        self.store: Store = Store(store_path)
        self.board: RunBoard = RunBoard()
        self.runs: dict[int, RunView] = self.board.runs  # every run the app knows, by id
        self.event_pump: EventPump = EventPump(self)
        self.activity: Activity = Activity()  # when the operator last pressed a key
        self.viewing = True

    def _start(self, settings: Settings) -> None:
        """Build the cockpit on its views: the host runs execute in, the keys of
        ``[ui.keys]``."""
        self.settings = settings
        self.host: RunHost = _host(self, self._harness or settings.ui.harness, self._approver)
        # The config's ``[ui.keys]`` (and the letters of ``letter_shortcuts``; a user's own
        # remap wins over them), by binding id: set on mount, shown by the help and palette.
        letters = _letter_keymap() if settings.ui.letter_shortcuts else {}
        self.key_remaps: dict[str, str] = {**letters, **settings.ui.keys}
        self.started = True

    @cached_property
    def desk(self) -> ApprovalDesk:
        """The approval desk, built on first use (after the first frame: it brings the approval
        modal and the inbox with it), with the app's store, host and ``[ui]`` settings."""
        from io_tui.ui.approver import ApprovalDesk

        return ApprovalDesk(
            self,
            store=self.store,
            host=self.host,
            ui=self.settings.ui,
            activity=self.activity,
            inbox_key=self._inbox_key,
            withdraw=self.withdraw_notification,
        )

    @cached_property
    def run_desk(self) -> RunDesk:
        """The run desk (start, resume, cancel), built on first use with the app's store, host
        and settings; what it changes is reloaded through ``refresh_runs``."""
        from io_tui.ui.run_desk import RunDesk

        return RunDesk(
            self,
            store=self.store,
            host=self.host,
            settings=self.settings,
            approvals=self.desk,
            refresh=self.refresh_runs,
        )

    # -- start and stop ------------------------------------------------------------------------

    def on_load(self) -> None:
        if self.viewing:
            self._open_store()

    def _open_store(self) -> None:
        # The store opens while the first frame is drawn; every store call waits for it.
        self.store.db.open_soon().add_done_callback(self._store_opened)
        self.store_opening = True

    def get_driver_class(self) -> type[Driver]:
        """Textual's driver for this platform; on POSIX terminals one whose output survives the
        terminal hanging up (``io_tui.ui.driver``), so the app can still quit."""
        from textual.drivers.linux_driver import LinuxDriver

        from io_tui.ui.driver import HangupSafeDriver

        chosen = super().get_driver_class()
        return HangupSafeDriver if chosen is LinuxDriver else chosen

    def _store_opened(self, opening: asyncio.Task[None]) -> None:
        from io_tui.core import StoreError

        if not opening.cancelled() and (error := opening.exception()) is not None:
            message = (
                str(error) if isinstance(error, StoreError) else f"cannot open store: {error!r}"
            )
            self.exit(return_code=2, message=message)

    def _store_damaged(self, message: str) -> None:
        """The store turned out damaged after its open (a query of this app's, or the harness
        worker's ``quick_check`` or statement): the app ends as for a store it cannot open,
        exit 2 and the one line, the first time; nothing more is written to the store."""
        if self.return_code is None:
            self.exit(return_code=2, message=message)

    def on_store_damaged_found(self, message: StoreDamagedFound) -> None:
        self._store_damaged(message.text)

    def _choose_theme(self, wanted: str) -> list[tuple[str, str]]:
        """Register the theme files and pick ``wanted`` (the configured theme, or the one the
        UI state file remembers for it) before the stylesheet is first built (a theme set after
        mount parses and applies all CSS a second time). Returns the problems to notify once
        mounted."""
        from io_tui.ui.themes import load_themes

        themes, errors = load_themes()
        for theme in themes:
            self.register_theme(theme)
        problems = [(error, "error") for error in errors]
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            problems.append((f"unknown theme {wanted!r}; using {DEFAULT_THEME}", "warning"))
            self.theme = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        return problems

    def _first_theme(self, wanted: str) -> list[tuple[str, str]]:
        """The theme of the first frame before the settings load: ``wanted`` read from its
        bundled file (no validation: pydantic is not loaded yet), else the default's. Once the
        settings are loaded, ``_choose_theme`` validates every file and confirms the choice."""
        for name in (wanted, DEFAULT_THEME):
            theme = bundled_theme(name)
            if theme is not None:
                self.register_theme(theme)
            if name in self.available_themes:
                self.theme = name
                break
        return []

    def refresh_css(self, animate: bool = True) -> None:
        """Setting the theme in ``__init__`` queues a refresh that would parse and apply every
        rule a second time before the first frame, with the variables the stylesheet was first
        built with (``_choose_theme``): that one refresh is skipped."""
        startup, self._startup_css = self._startup_css, None
        if startup is not None and self.get_css_variables() == startup:
            return
        super().refresh_css(animate)

    def get_default_screen(self) -> Screen[Any]:
        if not self.viewing:  # the CLI's app: the layout, until the store's runs are shown
            return SkeletonScreen()
        return self._main_screen()

    def _main_screen(self) -> MainScreen:
        from io_tui.ui.screens.main import MainScreen

        host = self.host if self.started else None  # given once the settings are loaded
        screen = MainScreen(self.runs, self.store, host, self.activity)
        # A screen of a new mode is restyled whole (every rule parsed again, then applied to
        # every node, twice: once as its mode starts, once as it is switched to) unless it is
        # as current as the app's stylesheet, which it is: main.tcss is the app's, and the
        # widgets are styled as they mount.
        screen._css_update_count = self._css_update_count
        return screen

    async def on_event(self, event: events.Event) -> None:
        if self._early_keys is not None and self._hold_early(event):
            return
        if self.typeahead.take(event):  # a dialog is opening: its keys wait for it
            return
        if isinstance(event, events.Key) and self.started:  # approvals: every key (typing?)
            self.activity.key_pressed()
        await super().on_event(event)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Until the cockpit is loaded only quitting does anything (keys are held till then)."""
        return self.started or action == "quit"

    def _hold_early(self, event: events.Event) -> bool:
        """Keep a key (or paste) typed while the cockpit loads, or while the ones typed before
        it are handed on (True: not to be handled now); ctrl+q quits at once, as it does once
        the cockpit is up."""
        if not isinstance(event, events.Key | events.Paste) or event.is_forwarded:
            return False
        if event is self._replaying:
            return False
        if isinstance(event, events.Key) and event.key == "ctrl+q":
            self.exit(0)
        elif self._early_keys is not None:
            self._early_keys.append(event)
        return True

    async def _replay_early_keys(self) -> None:
        """Hand the keys typed while the cockpit loaded to the app, as typed, each once the one
        before it has been handled in full. Posted at once they would not keep their order: the
        app passes a key to the focused pane and goes on to the next, while the main screen's
        keys act only once the key has bubbled back up to the app, and a focus they move
        (``m``: to the prompt) moves one message later still; "mhi" would leave "hi" with the
        run tree. Keys typed meanwhile join the end of the list."""
        held = self._early_keys or []
        while held and self.is_running:
            again = self._replaying = typed_again(held.pop(0), self)
            self.post_message(again)
            await _drained(self)  # the app checked its priority keys, then passed it on
            target = self.screen.focused or self.screen
            for node in target.ancestors_with_self:  # up to the screen's and the app's keys
                await _drained(node)
            await _drained(self)  # what they deferred: a focus moved
        self._early_keys = self._replaying = None

    def on_mount(self) -> None:
        if self.started:
            self._cockpit_started()
            self.call_after_refresh(self._after_first_frame)
        else:  # the first frame is the skeleton; keys typed meanwhile go to the main screen
            self._early_keys = []

    def on_skeleton_screen_painted(self) -> None:
        """The skeleton's frame is drawn: the cockpit loads (once; the main screen is a
        skeleton too until its panes mount)."""
        if self._boot is not None and not self.viewing and not self._booting:
            self._booting = True
            self.run_worker(self._load_cockpit(), group="boot")

    async def _load_cockpit(self) -> None:
        """After the first frame: find the store on a thread, with the main screen's modules
        imported beside it (not the settings: pydantic is ~40 % of the way to the panes), and
        show the main screen, whose panes read the store (``_load_settings`` follows). What
        ``boot`` raises ends the app (exit 2), for the CLI to say in one line."""
        assert self._boot is not None
        try:
            store_path = await asyncio.to_thread(_located, self._boot)
        except Exception as error:  # the CLI says what (a store URL it cannot read: one line)
            self._boot_failed(error)
            return
        if not self.is_running:
            return
        self._view(store_path)
        # a store not there yet is made once the settings are read (and valid: a malformed
        # config leaves nothing behind); one that is is read now, its runs shown in the panes
        if not isinstance(store_path, Path) or store_path.exists():
            self._open_store()
        # the main screen is the base of a mode of its own: the skeleton, the default mode's
        # base, stays below out of sight, and the main screen is the one base screen as ever
        self.add_mode("cockpit", self._main_screen)
        await self.switch_mode("cockpit")

    @work(group="boot")
    async def _load_settings(self) -> None:
        """Once the panes are painted: load the settings on a thread, build the cockpit on
        them, and hand the panes the keys typed meanwhile, in their order."""
        assert self._boot is not None
        try:
            settings = await asyncio.to_thread(self._boot.settings)
        except Exception as error:  # the CLI says what (a malformed config: one line)
            self._boot_failed(error)
            return
        main = self.main_screen()
        if not self.is_running or main is None:
            return
        self._start(settings)
        main.host = self.host
        if not self.store_opening:
            self._open_store()
            self.refresh_runs(None)
        # every theme file, validated, and the theme the settings choose (the first frame's:
        # ``first_theme`` read the same configuration without pydantic)
        self._theme_problems = self._choose_theme(self._ui_state.theme_for(settings.ui.theme))
        self._cockpit_started()
        main.refresh_bindings()  # ``x`` interrupts what the host runs
        self.run_worker(self._replay_early_keys(), group="boot")
        self._after_first_frame()

    def _boot_failed(self, error: Exception) -> None:
        self.boot_error = error
        self.exit(return_code=2)

    def on_main_screen_ready(self) -> None:
        """The panes are mounted: the store is read."""
        if not self.is_running:
            return  # it quit as the panes mounted: nothing more to start
        if self.store_opening:
            self.refresh_runs(None)

    def on_main_screen_shown(self) -> None:
        """After a boot the panes' frame is the one the user waits for: the settings, and what
        else would compete with it for the interpreter (the new-run dialog's import thread,
        the approval desk's modules), wait until it is painted (Textual says nothing when a
        frame is written: ``PANES_PAINT_S`` after the footer mounted)."""
        if self._boot is not None and not self.started:
            self.set_timer(PANES_PAINT_S, self._load_settings)

    def _cockpit_started(self) -> None:
        """The cockpit's start, once it is built and its screen shown: theme problems said,
        keys remapped, other processes followed, the demo started."""
        from io_tui.ui.live import follow

        for problem, severity in self._theme_problems:
            if severity == "error":
                self.notify(problem, title="Theme file ignored", severity="error", timeout=10)
            else:
                self.notify(problem, severity="warning")
        if self.settings.ui.keys:
            self._check_keys()
        if self.key_remaps:
            self.set_keymap(self.key_remaps)
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.poll_interval:  # other processes' runs, live (ui/live.py), and the inbox
            follow(self, self.poll_interval)
            self.poll_interval = None  # the follower reloads the inbox and its badge
        if self.demo:
            self.start_demo()
        # A batch of events lives until the refresh that paints it: at 700 allocations between
        # young collections (the default) it outlives two of them and is promoted to the old
        # generation, whose growth then sets off full passes over everything the app holds
        # (at 50 runs x 500 steps: 54 passes, up to 0.9 s each, the p95 event->screen 329 ms).
        # With 10,000 a batch dies young: 5 full passes, p95 123 ms (BENCHMARKS.md, ui_load).
        gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
        terminal = sys.__stdin__
        if not self.is_headless and terminal is not None and terminal.isatty():
            self.set_interval(1.0, partial(self._check_terminal, terminal.fileno()))

    def _after_first_frame(self) -> None:
        """What would slow the first frame down, once it is on screen: the approval desk, the
        harness worker, the new-run dialog's modules, the collector told what stays."""
        if not self.is_running:
            return  # quit before its timer fired: nothing more to start
        # approvals: the inbox badge in the title
        self.desk.attach(self.poll_interval)
        if not self.demo:  # the harness worker starts while the user reads the first screen
            self._prepare_host()
        # the new-run dialog's module (the providers, httpx, the harness's tools: ~90 ms) is
        # imported while the user reads the first screen, not when ctrl+n is first pressed
        _import_in_background("io_tui.ui.screens.new_run")
        self._read_screen_styles()
        # What the app built to draw its first frame (modules, styles, widgets: ~70,000 objects)
        # lives as long as the app. Frozen, the collector's full passes stop walking it: under
        # a load of live runs those pauses fell from ~25-110 ms to ~10-35 ms (BENCHMARKS.md).
        # Started by the CLI, the app ran with the collector off until now (``cli/ui.py``):
        # what the start left in reference cycles (~9,000 objects) is freed first, not frozen.
        if not gc.isenabled():
            gc.collect()
        gc.freeze()
        gc.enable()
        self.collector = Collector(self)  # the full passes, while the operator reads

    def _read_screen_styles(self) -> None:
        """Every screen's stylesheet, read now (~30 ms): a screen opened for the first time
        read its own, parsed the app's whole stylesheet again and restyled every widget of
        the app, 30–100 ms of the key that opened it (``benchmarks/key_open.py``)."""
        sheet = self.stylesheet
        screens = (Path(__file__).parent / "screens").resolve()  # as Textual names them
        unread = [p for p in sorted(screens.glob("*.tcss")) if not sheet.has_source(str(p), "")]
        for path in unread:
            sheet.read(path)
        if unread:
            sheet.reparse()
            sheet.update(self)

    async def _check_terminal(self, fd: int) -> None:
        """Quit as ctrl+q does once the terminal is gone (its window closed, the SSH link
        dropped). The hangup signal reaches only the terminal's session leader: under ``make
        run`` that is make, which waits for the app instead of passing it on, and the app,
        reading the dead terminal's end of file, would spin on with nobody to see it."""
        if not os.isatty(fd):
            await self.action_quit()

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification is text, never markup: messages carry paths, commands, errors,
        notes and a dead worker's stderr, where "[/]" would be read as markup (and raise) and
        an escape sequence would reach the terminal. (Screens' ``notify`` lands here too.)"""
        from io_tui.ui.terminal_text import plain

        super().notify(
            plain(message), title=plain(title), severity=severity, timeout=timeout, markup=False
        )

    def withdraw_notification(self, notification: Notification) -> None:
        """Take a notification off the screen before its timeout (a no-op once it is gone).
        Textual has no public call for one notification: this uses ``App._notifications`` and
        ``App._unnotify`` (``tests/ui/test_textual_private.py``)."""
        if notification in self._notifications:
            self._unnotify(notification)

    def _remember_theme(self, theme: Theme) -> None:
        """The theme chosen now is the next start's (``ui_state``; not the config file).
        Written at once (one small file, replaced atomically), so a quit right after keeps it."""
        try:
            ui_state.changed(theme=theme.name, config_theme=self.settings.ui.theme)
        except OSError as error:
            self.notify(f"the theme is not kept for the next start: {error}", severity="warning")

    def _prepare_host(self) -> None:
        self.run_worker(self.host.prepare(), group="harness-io", exit_on_error=False)

    async def action_quit(self) -> None:
        """Stop the runs (asking ones pause durably, the others end ``cancelled``), then exit."""
        if self.started:
            self.desk.shutdown()
            await self.host.close()
        self.exit(0)

    async def on_unmount(self) -> None:
        if self.started:
            await self.host.close()  # and with it the MCP servers
        if self.viewing:
            await self.store.close()

    # -- starting runs -------------------------------------------------------------------------

    async def ask_human(self, request: ApprovalRequest, future: asyncio.Future[Decision]) -> None:
        """Queue the approval modal for ``request`` (shown one at a time from a worker); the
        desk resolves ``future`` with the Decision, or a defer if the app closes first."""
        self.desk.ask(request, future)

    # approvals: the steering screens (bindings app.inbox / app.rules / app.memory / app.audit,
    # and their palette entries). Screens not on the first frame are imported when first opened:
    # the new-run dialog alone pulls in every provider and httpx.
    def action_inbox(self) -> None:
        from io_tui.ui.screens.inbox import InboxScreen

        self.switch_to(lambda: InboxScreen(self.store, self.desk, poll_interval=self.poll_interval))

    def action_rules(self) -> None:
        from io_tui.ui.screens.rules import RulesScreen

        self.switch_to(lambda: RulesScreen(self.store))

    def action_memory(self) -> None:
        from io_tui.ui.screens.memory_editor import MemoryEditorScreen

        self.switch_to(lambda: MemoryEditorScreen(self.store, self.selected_workspace()))

    def action_audit(self) -> None:
        from io_tui.ui.screens.audit import AuditScreen

        self.switch_to(lambda: AuditScreen(self.store))

    def action_resources(self) -> None:
        """The resource browser, for the servers of the selected run's workspace (else the
        new-run dialog's default one)."""
        from io_tui.ui.screens.resources import ResourcesScreen

        selected = self.selected_workspace()
        workspace = Path(selected) if selected else self.default_workspace()
        self.switch_to(lambda: ResourcesScreen(self.host, workspace))

    @cached_property
    def prompts(self) -> ServerPrompts:
        """The MCP servers' prompts (the palette's, the new-run dialog's), asked of the host:
        the servers live where the runs do."""
        from io_tui.ui.mcp_prompts import ServerPrompts

        return ServerPrompts(self.host)

    def default_workspace(self) -> Path:
        """Where the new-run dialog opens: the demo's workspace if there is one, else here."""
        return self.demo_workspace or Path.cwd()

    def switch_to(self, open_screen: Callable[[], Screen[Any]]) -> None:
        """F-keys switch screens: the screens opened over the main one (audit, rules, the
        inspector, the help…) close first, so escape goes back to the main screen. A dialog
        waiting for an answer (an approval, a confirmation) stays, and the screen opens over it.
        """
        from io_tui.ui.screens.help import HelpScreen

        while len(self.screen_stack) > 1 and (
            not isinstance(self.screen, ModalScreen) or isinstance(self.screen, HelpScreen)
        ):
            self.pop_screen()
        self.push_screen(open_screen())

    def selected_workspace(self) -> str | None:
        """The workspace of the run selected on the main screen, else the demo's, if any."""
        main = self.main_screen()
        run_id = main.selected_run if main is not None else None
        run = self.runs.get(run_id) if run_id is not None else None
        workspace = (run.workspace if run is not None else None) or self.demo_workspace
        return str(workspace) if workspace else None

    async def on_approval_requested(self, message: ApprovalRequested) -> None:
        await self.ask_human(message.request, message.future)

    def on_new_run_requested(self, message: NewRunRequested) -> None:
        self.action_new_run(task=message.task)

    def start_demo(self, *, fresh: bool = False) -> None:
        """Start the bundled demo: on the prepared workspace if there is one, else (and always
        with ``fresh``: the palette's "Run: demo") on a new temp copy of the demo project."""
        self.run_worker(self._start_demo(fresh), group="runs", exit_on_error=False)

    async def _start_demo(self, fresh: bool) -> None:
        from io_tui import demo

        workspace = None if fresh else self.demo_workspace
        if workspace is None:
            workspace = self.demo_workspace = await asyncio.to_thread(demo.make_workspace)
        self.host.start_demo(workspace)

    def on_start_run(self, message: StartRun) -> None:
        self.start_request(message.request)

    def start_request(self, request: NewRunRequest) -> None:
        """Start a new run (or a follow-up), on the host or the queue (``RunDesk.start``)."""
        self.run_desk.start(request)

    def interrupt(self, run_id: int) -> bool:
        return self.host.interrupt(run_id)

    def action_resume_run(self, run_id: int) -> None:
        """R: resume an interrupted run (``RunDesk.resume``)."""
        self.run_desk.resume(run_id)

    def action_rewind_run(self, run_id: int, step: int) -> None:
        """w on a step: rewind the run's files to before it (``RunDesk.rewind``)."""
        self.run_desk.rewind(run_id, step)

    def action_undo_rewind(self, run_id: int) -> None:
        """W: undo the run's last rewind (``RunDesk.rewind``)."""
        self.run_desk.rewind(run_id, None)

    def action_fork_run(self, run_id: int, step: int) -> None:
        """f on a step: fork the run from it (``RunDesk.fork``)."""
        run = self.runs.get(run_id)
        if run is not None:
            self.run_desk.fork(run_id, step, run.workspace)

    def action_cancel_run(self, run_id: int) -> None:
        """x on a run no process drives: cancel it once the operator says yes
        (``RunDesk.cancel``)."""
        self.run_desk.cancel(run_id)

    def on_run_started(self, message: RunStarted) -> None:
        self._live_changed(message.run_id)

    def on_run_stopped(self, message: RunStopped) -> None:
        self._live_changed(message.run_id)

    def _live_changed(self, run_id: int) -> None:
        """A host took or dropped a run: its keys (interrupt) apply while it is live."""
        main = self.main_screen()
        if main is not None and main.selected_run == run_id:
            main.refresh_bindings()  # the footer is recomposed: only for the selected run

    def on_runs_lost(self, message: RunsLost) -> None:
        self.refresh_runs(message.run_ids)

    def on_harness_notice(self, message: HarnessNotice) -> None:
        self.notify(
            message.text, title=message.title, severity=message.severity, timeout=message.timeout
        )

    def on_run_ended(self, message: RunEnded) -> None:
        from io_tui.core import ended_line, ending_of
        from io_tui.ui.state import counted

        if message.error:
            self.notify(message.error, title="Run not started", severity="error")
        elif message.result is not None:
            result = message.result
            ending = ending_of(result.outcome.value)
            self.notify(
                f"run {result.run_id} "
                f"{ended_line(result.status, result.outcome.value, result.error)[2:]}"
                f" · {counted(result.steps, 'step')}, {result.tokens:,} tok",
                severity="information"
                if ending is not None and ending.tone == "success"
                else "warning",
            )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures are reported."""
        from io_tui.core import StoreDamaged, StoreError, store_trouble

        if event.state is WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            if isinstance(error, StoreDamaged):
                self._store_damaged(str(error))
                return
            if isinstance(error, StoreError):  # full, out of reach, a run taken over: the app
                # goes on (what it shows is read again once the store answers)
                self.notify(str(error), title=store_trouble(error), severity="error", timeout=30)
                return
            self.notify(
                f"{type(error).__name__}: {error}",
                title=f"{event.worker.group} worker failed",
                severity="error",
                timeout=10,
            )

    # -- events → views, coalesced ---------------------------------------------------------------

    def on_run_events_received(self, message: RunEventsReceived) -> None:
        """Fold a batch into the run views, then apply the net changes to the screen at once."""
        events = message.events
        changes = self.board.apply(events)
        self.events_applied += len(events)
        main = self.main_screen()
        if main is not None:
            with self.batch_update():
                main.apply_changes(changes)
        self.call_after_refresh(self._painted, [e.at for e in events])
        self.event_pump.applied()
        if changes.new:
            self.refresh_runs(changes.new)

    def _painted(self, stamps: list[float]) -> None:
        now = time.time()
        self.paint_delays.extend(now - at for at in stamps)

    def main_screen(self) -> MainScreen | None:
        """The main screen once its panes are mounted (it then shows every run of ``self.runs``);
        None before that, and once the app is shutting down: events still arriving from the host
        while the screens' widgets are being removed have nowhere to go."""
        from io_tui.ui.screens.main import MainScreen

        if not self.is_running:
            return None
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen) and screen.ready:
                return screen
        return None

    # -- the store: initial load, polling, refresh ---------------------------------------------

    def poll_store(self) -> None:
        self.refresh_runs(None)

    @work(group="db", exit_on_error=False)
    async def refresh_runs(self, run_ids: list[int] | None) -> None:
        from io_tui.ui.messages import StoreChanged

        as_of = self.board.batches
        if run_ids is None:
            await self.store.leases.reap()  # a run whose process died shows interrupted
            rows = await self.store.runs.all()
        else:
            rows = [r for r in [await self.store.runs.get(i) for i in run_ids] if r is not None]
        self.post_message(StoreChanged(rows, await queue_workers(self.store, rows), as_of))

    def on_store_changed(self, message: StoreChanged) -> None:
        main = self.main_screen()
        shown, stale, stopped = self.board.apply_rows(
            message.runs, self._is_live, message.workers, message.as_of
        )
        if main is not None:
            for run in shown:
                main.upsert_run(run)
            for run, step in stopped:  # its process died: its clock stops, saying so
                main.upsert_step(run, step)
        if stale:
            self.load_steps_of(stale)

    def _is_live(self, run_id: int) -> bool:
        """Whether this app's host drives ``run_id``: none does before the settings load."""
        return self.started and self.host.is_live(run_id)

    @work(group="db", exit_on_error=False)
    async def load_steps_of(self, run_ids: list[int]) -> None:
        from io_tui.ui.messages import StepsLoaded
        from io_tui.ui.run_board import step_view

        rows = await self.store.trace.step_summaries(run_ids)
        self.post_message(StepsLoaded(tuple(step_view(row) for row in rows)))

    def on_steps_loaded(self, message: StepsLoaded) -> None:
        main = self.main_screen()
        with self.batch_update():
            for run, step in self.board.apply_steps(message.steps):
                if main is not None:
                    main.upsert_step(run, step)

    # -- actions -------------------------------------------------------------------------------

    def action_new_run(self, task: str = "", prompt: str | None = None) -> None:
        from io_tui.ui.screens.new_run import NewRunScreen

        def started(request: NewRunRequest | None) -> None:
            if request is not None:
                self.start_request(request)
                self._remember_new_run(request)

        workspace = self.default_workspace()
        screen = self.new_run_dialog
        if screen is None:
            screen = NewRunScreen(
                self.store,
                self.settings,
                workspace,
                task=task,
                prompts=self.prompts,
                prompt=prompt,
                last=self.last_new_run,
            )
            self.new_run_dialog = screen
            self.install_screen(screen, "new-run")  # kept when it closes: opened again at once
        elif screen in self.screen_stack:  # open already: what was chosen goes into it
            screen.take(task, prompt)
            return
        else:
            screen.reopen(workspace, task=task, prompt=prompt, last=self.last_new_run)
        self.typeahead.hold()  # what is typed before its Task has the cursor goes there after
        self.push_screen(screen, started)

    def _remember_new_run(self, request: NewRunRequest) -> None:
        """The dialog opens next time (and after a restart) with what this run was started
        with: provider, base URL, model, limits, workspace (``ui_state``)."""
        from io_tui.ui.screens.new_run_fields import remembered

        self.last_new_run = remembered(request)
        try:
            ui_state.changed(new_run=self.last_new_run)
        except OSError as error:
            self.notify(f"the new run's settings are not kept: {error}", severity="warning")

    def action_help(self) -> None:
        from io_tui.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen(self.help_sections(), self.key_remaps))

    def help_sections(self) -> list[tuple[str, Iterable[BindingType]]]:
        """Every key the help lists: the app's, then each screen's (and a widget's own)."""
        from io_tui.ui.screens.approval import ApprovalScreen
        from io_tui.ui.screens.audit import AuditScreen
        from io_tui.ui.screens.inbox import InboxScreen
        from io_tui.ui.screens.inspector import InspectorScreen
        from io_tui.ui.screens.lifecycle import LifecycleScreen
        from io_tui.ui.screens.main import MainScreen
        from io_tui.ui.screens.memory_editor import MemoryEditorScreen
        from io_tui.ui.screens.new_run import NewRunScreen
        from io_tui.ui.screens.rules import RulesScreen
        from io_tui.ui.screens.trace import TraceScreen
        from io_tui.ui.widgets.run_tree import RunTree
        from io_tui.ui.widgets.transcript import Transcript

        return [
            ("app", self.BINDINGS),
            ("main", MainScreen.BINDINGS),
            ("run tree", RunTree.BINDINGS),
            ("transcript", Transcript.BINDINGS),
            ("inspector", InspectorScreen.BINDINGS),
            ("lifecycle", LifecycleScreen.BINDINGS),
            ("trace", TraceScreen.BINDINGS),
            ("new run", NewRunScreen.BINDINGS),
            ("approval", ApprovalScreen.BINDINGS),
            ("inbox", InboxScreen.BINDINGS),
            ("rules", RulesScreen.BINDINGS),
            ("memory", MemoryEditorScreen.BINDINGS),
            ("audit", AuditScreen.BINDINGS),
        ]

    def _check_keys(self) -> None:
        """The config's ``[ui.keys]`` without the entries that cannot work, each said once."""
        from io_tui.ui.keymap import checked_keymap

        every = [binding for _, section in self.help_sections() for binding in section]
        kept, problems = checked_keymap(self.settings.ui.keys, every)
        letters = _letter_keymap() if self.settings.ui.letter_shortcuts else {}
        self.key_remaps = {**letters, **kept}
        if problems:
            self.notify(
                "\n".join(problems), title="[ui.keys] entries ignored", severity="error", timeout=15
            )

    def keymap_key(self, binding: Binding) -> str:
        """The key(s) ``binding`` answers to as shown, after the config's ``[ui.keys]``."""
        keys = self.key_remaps.get(binding.id, binding.key) if binding.id else binding.key
        return ", ".join(self.get_key_display(Binding(k, "")) for k in keys.split(","))

    def _inbox_key(self) -> str:
        """The key that opens the inbox (``app.inbox``, as remapped): the approval banner's."""
        keys = self.key_remaps.get("app.inbox")
        if keys is None:
            bindings = [b for b in self.BINDINGS if isinstance(b, Binding)]
            keys = next((b.key for b in bindings if b.id == "app.inbox"), "f2")
        return keys.split(",", 1)[0]

    def action_next_theme(self) -> None:
        names = sorted(n for n in self.available_themes if n.startswith("io-"))
        if not names:
            return
        index = names.index(self.theme) + 1 if self.theme in names else 0
        self.theme = names[index % len(names)]
        self.notify(f"theme: {self.theme}")


async def queue_workers(store: Store, rows: list[Any]) -> dict[int, str]:
    """What the run tree says of each queue run among ``rows``: the worker driving it (``on
    HOST pid N``) or that it waits for the operator; runs off the queue are not in it."""
    entries = await store.queue.entries([r.id for r in rows])
    if not entries:
        return {}
    hosts = await store.queue.run_hosts(list(entries))
    out = {}
    for run_id, entry in entries.items():
        if run_id in hosts:
            out[run_id] = f"on {hosts[run_id]}"
        elif entry.held:
            out[run_id] = "held for the operator (R)"
    return out


def create_app(
    settings: Settings,
    store_path: StoreLocation,
    *,
    demo: bool = False,
    approver: Approver | None = None,
    poll_interval: float | None = POLL_INTERVAL,
    demo_workspace: Path | None = None,
    harness: HarnessMode | None = None,
) -> IoApp:
    """The app with its cockpit built at once: tests, screenshots and benchmarks use it (the
    CLI's is ``boot_app``).

    ``demo_workspace``: a prepared copy of the demo project (fixed path for snapshots); by
    default the demo copies it into a fresh temp dir. ``approver``: replaces the UI approver
    (screenshots and benchmarks approve everything; a worker process takes only the fixed ones
    of ``FIXED_APPROVERS``). ``harness``: where runs execute (default ``settings.ui.harness``).
    """
    return IoApp(
        settings,
        store_path,
        demo=demo,
        approver=approver,
        poll_interval=poll_interval,
        demo_workspace=demo_workspace,
        harness=harness,
    )


def boot_app(boot: Boot, *, demo: bool = False) -> IoApp:
    """The CLI's app: its first frame (the main screen's layout, in the configured theme) is
    drawn before the settings and the core are imported; then ``boot`` finds the store on a
    thread and the panes show its runs; then ``boot`` loads the settings on a thread and the
    cockpit is built on them. What ``boot`` raises ends the app with exit code 2 and is kept
    in ``boot_error``."""
    return IoApp(None, None, demo=demo, boot=boot)


def _located(boot: Boot) -> StoreLocation:
    """``boot``'s store, with the modules the main screen is built of imported (on the boot
    thread, while the first frame is on screen)."""
    importlib.import_module("io_tui.ui.screens.main")
    return boot.store()


async def _drained(node: MessagePump, longest_s: float = 1.0) -> None:
    """Return once ``node`` has handled the messages posted to it so far (or has closed, or
    ``longest_s`` has passed: a pane removed meanwhile does not stop the keys after it)."""
    handled = asyncio.Event()
    if node.call_later(handled.set):
        with suppress(TimeoutError):
            await asyncio.wait_for(handled.wait(), longest_s)


def _import_in_background(module: str) -> None:
    """Import ``module`` on a thread of its own: a key that needs it later finds it loaded (a
    key pressed meanwhile waits on the import's lock, as it would have imported it itself)."""
    import threading

    threading.Thread(target=importlib.import_module, args=(module,), daemon=True).start()


def _host(app: IoApp, mode: HarnessMode, approver: Approver | None) -> RunHost:
    from io_tui.core import FIXED_APPROVERS
    from io_tui.ui.hosts import InlineHost, ProcessHost

    pump, store, settings = app.event_pump, app.store, app.settings
    if mode == "inline":
        from io_tui.ui.approver import UIApprover

        return InlineHost(app, pump, store, settings, approver or UIApprover(app))
    if approver is None:
        return ProcessHost(app, pump, store, settings)
    names: dict[type, str] = {kind: name for name, kind in FIXED_APPROVERS.items()}
    if type(approver) not in names:
        raise ValueError(f"{type(approver).__name__} cannot answer in a worker process")
    return ProcessHost(app, pump, store, settings, names[type(approver)])


def _letter_keymap() -> dict[str, str]:
    from io_tui.ui.approver import letter_keymap

    return letter_keymap()


def _cockpit(app: IoApp) -> Cockpit:
    return app  # mypy: the app is what the palette's providers take it for


__all__ = ["IoApp", "boot_app", "create_app"]

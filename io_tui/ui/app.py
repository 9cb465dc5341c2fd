"""``IoApp``: the cockpit. Built by ``create_app`` (used by the CLI, tests, screenshots, benchmark).

Runs are Textual workers (``group="runs"``, ``exit_on_error=False``) around ``start_run``; their
events reach the app through one ``EventPump`` as ``RunEventsReceived`` batches (one in flight
at a time, the next posted once the last is painted), are folded into ``self.runs`` and applied
to the screen under ``batch_update()``. Human decisions arrive as ``ApprovalRequested`` with a
Future, answered in ``ask_human``. The store is opened and read after the first frame.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import on, work
from textual.app import App
from textual.binding import Binding
from textual.worker import Worker, WorkerState, get_current_worker

from io_tui.config import Settings
from io_tui.core.approvals import ApprovalRequest, Approver, Decision
from io_tui.core.contract import TaskContract
from io_tui.core.events import EventKind
from io_tui.core.policy import Policy
from io_tui.core.providers.base import Provider
from io_tui.core.run import Harness, start_run
from io_tui.core.store import Store, StoreError
from io_tui.ui import steering
from io_tui.ui.approver import ApprovalDesk, UIApprover
from io_tui.ui.bridge import BridgeSink, EventPump
from io_tui.ui.commands import MemoryCommands, RunCommands, ThemeCommands
from io_tui.ui.messages import (
    ApprovalRequested,
    NewRunRequest,
    RunEnded,
    RunEventsReceived,
    StartRun,
    StepsLoaded,
    StoreChanged,
)
from io_tui.ui.state import RunView, StepView
from io_tui.ui.steering import SteeringCommands
from io_tui.ui.themes import DEFAULT_THEME, load_themes

if TYPE_CHECKING:
    from io_tui.ui.screens.main import MainScreen

POLL_INTERVAL = 2.0  # seconds: notice runs changed by other processes (io-tui decide, run)


class IoApp(App[int]):
    CSS_PATH = "app.tcss"
    TITLE = "io-tui"
    SUB_TITLE = "agent cockpit"
    ENABLE_COMMAND_PALETTE = True
    COMMANDS = App.COMMANDS | {
        RunCommands,
        ThemeCommands,
        MemoryCommands,
        SteeringCommands,  # approvals: inbox / rules / memory editor / audit
    }
    BINDINGS = [
        Binding("ctrl+n", "new_run", "New run", id="app.new_run", tooltip="Start a new run"),
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
    ]

    def __init__(
        self,
        settings: Settings,
        store_path: Path,
        *,
        demo: bool = False,
        approver: Approver | None = None,
        poll_interval: float | None = POLL_INTERVAL,
        demo_workspace: Path | None = None,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.store_path = store_path
        self.demo = demo
        self.fixed_approver = approver
        self.poll_interval = poll_interval
        self.store: Store = Store(store_path)
        self.runs: dict[int, RunView] = {}
        self.run_workers: dict[int, Worker[Any]] = {}
        self.demo_workspace: Path | None = demo_workspace
        self.event_pump = EventPump(self)
        self._theme_problems = self._choose_theme()
        self.paint_delays: deque[float] = deque(maxlen=100_000)  # event → painted, seconds
        self.events_applied = 0
        self._store_open = False

    # -- start and stop ------------------------------------------------------------------------

    async def on_load(self) -> None:
        try:
            await self.store.db.open()
            self._store_open = True
        except StoreError as exc:
            self.exit(2, message=str(exc))

    def _choose_theme(self) -> list[tuple[str, str]]:
        """Register the theme files and pick the configured theme before the stylesheet is first
        built (a theme set after mount parses and applies all CSS a second time). Returns the
        problems to notify once mounted."""
        themes, errors = load_themes()
        for theme in themes:
            self.register_theme(theme)
        problems = [(error, "error") for error in errors]
        wanted = self.settings.ui.theme
        if wanted in self.available_themes:
            self.theme = wanted
        else:
            problems.append((f"unknown theme {wanted!r}; using {DEFAULT_THEME}", "warning"))
            self.theme = DEFAULT_THEME if DEFAULT_THEME in self.available_themes else "textual-dark"
        return problems

    def on_mount(self) -> None:
        from io_tui.ui.screens.main import MainScreen

        self.push_screen(MainScreen())
        for problem, severity in self._theme_problems:
            if severity == "error":
                self.notify(problem, title="Theme file ignored", severity="error", timeout=10)
            else:
                self.notify(problem, severity="warning")
        if self.settings.ui.keys:
            self.set_keymap(self.settings.ui.keys)
        if self.poll_interval:
            self.set_interval(self.poll_interval, self.poll_store)
        ApprovalDesk.of(self).attach(self.poll_interval)  # approvals: inbox badge in the title
        if self.demo:
            self.start_demo()

    async def action_quit(self) -> None:
        """Cancel live runs (each ends ``cancelled``, its store rows consistent), then exit."""
        workers = [w for w in self.workers if w.group == "runs" and w.is_running]
        for worker in workers:
            worker.cancel()
        if workers:
            await self.workers.wait_for_complete(workers)
        self.exit(0)

    async def on_unmount(self) -> None:
        if self._store_open:
            self._store_open = False
            await self.store.close()

    # -- starting runs -------------------------------------------------------------------------

    def build_approver(self) -> Approver:
        return self.fixed_approver or UIApprover(self)  # approvals: asks → the approval desk

    async def ask_human(self, request: ApprovalRequest, future: asyncio.Future[Decision]) -> None:
        """Queue the approval modal for ``request`` (shown one at a time from a worker); the
        desk resolves ``future`` with the Decision, or a defer if the app closes first."""
        ApprovalDesk.of(self).ask(request, future)

    # approvals: the steering screens (bindings app.inbox / app.rules / app.memory / app.audit)
    def action_inbox(self) -> None:
        steering.open_inbox(self)

    def action_rules(self) -> None:
        steering.open_rules(self)

    def action_memory(self) -> None:
        steering.open_memory(self)

    def action_audit(self) -> None:
        steering.open_audit(self)

    @on(ApprovalRequested)
    async def _on_approval_requested(self, message: ApprovalRequested) -> None:
        await self.ask_human(message.request, message.future)

    @work(group="runs", exit_on_error=False)
    async def run_task(
        self,
        contract: TaskContract,
        provider: Provider,
        policy: Policy,
        seed_run_id: int | None = None,
    ) -> None:
        worker = get_current_worker()
        sink = BridgeSink(
            self.event_pump, on_run_id=lambda run_id: self.run_workers.__setitem__(run_id, worker)
        )
        harness = Harness(
            store=self.store,
            provider=provider,
            approver=self.build_approver(),
            sink=sink,
            policy=policy,
        )
        result = await start_run(harness, contract, seed_run_id=seed_run_id)
        self.post_message(RunEnded(result))

    @work(group="runs", exit_on_error=False)
    async def start_demo(self) -> None:
        from io_tui import demo
        from io_tui.core.providers.scripted import ScriptedProvider

        workspace = self.demo_workspace
        if workspace is None:
            workspace = self.demo_workspace = await asyncio.to_thread(demo.make_workspace)
        provider = ScriptedProvider.from_file(demo.SCRIPT)
        self.run_task(demo.demo_contract(workspace), provider, demo.demo_policy())

    @on(StartRun)
    def _on_start_run(self, message: StartRun) -> None:
        self.start_request(message.request)

    @work(group="runs", exit_on_error=False)
    async def start_request(self, request: NewRunRequest) -> None:
        """Build the contract and provider for a new run (or a follow-up), then start it."""
        from io_tui.ui.runs import build_run

        try:
            contract, provider, policy = await build_run(self.store, self.settings, request)
        except ValueError as exc:
            self.post_message(RunEnded(None, error=str(exc)))
            return
        self.run_task(contract, provider, policy, request.seed_run_id)

    def interrupt(self, run_id: int) -> bool:
        worker = self.run_workers.get(run_id)
        if worker is None or not worker.is_running:
            return False
        worker.cancel()
        return True

    async def send_operator_message(self, run_id: int, text: str) -> None:
        await self.store.runs.add_operator_message(run_id, text)

    @on(RunEnded)
    def _on_run_ended(self, message: RunEnded) -> None:
        if message.error:
            self.notify(message.error, title="Run not started", severity="error")
        elif message.result is not None:
            result = message.result
            self.notify(
                f"run {result.run_id}: {result.status} ({result.outcome.value}), "
                f"{result.steps} steps, {result.tokens:,} tok",
                severity="information" if result.status == "finished" else "warning",
            )

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place worker failures are reported (and run workers' ends reach the keys)."""
        if event.worker.group == "runs" and not event.worker.is_running:
            main = self._main_screen()
            selected = main.selected_run if main is not None else None
            if main is not None and self.run_workers.get(selected or -1) is event.worker:
                main.refresh_bindings()  # "interrupt" applies while the run's worker runs
        if event.state is WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            self.notify(
                f"{type(error).__name__}: {error}",
                title=f"{event.worker.group} worker failed",
                severity="error",
                timeout=10,
            )

    # -- events → views, coalesced ---------------------------------------------------------------

    @on(RunEventsReceived)
    def _on_run_events(self, message: RunEventsReceived) -> None:
        """Fold a batch into the run views, then apply the net changes to the screen at once."""
        events = message.events
        changed_runs: set[int] = set()
        changed_steps: set[tuple[int, int]] = set()
        committed: set[tuple[int, int]] = set()
        new_runs: list[int] = []
        runs = self.runs
        for event in events:
            run = runs.get(event.run_id)
            if run is None:
                detail = event.detail
                run = RunView(
                    event.run_id,
                    str(detail.get("goal", "")),
                    str(detail.get("workspace", "")),
                )
                runs[event.run_id] = run
                new_runs.append(event.run_id)
            if run.apply(event):
                changed_runs.add(run.id)
                if event.step:
                    changed_steps.add((run.id, event.step))
            if event.kind is EventKind.STEP_COMMITTED:
                committed.add((run.id, event.step))
        self.events_applied += len(events)
        main = self._main_screen()
        if main is not None:
            with self.batch_update():
                main.apply_changes(changed_runs, changed_steps, committed)
        self.call_after_refresh(self._painted, [e.at for e in events])
        if new_runs:
            self.refresh_runs(new_runs)

    def _painted(self, stamps: list[float]) -> None:
        now = time.time()
        self.paint_delays.extend(now - at for at in stamps)
        self.event_pump.delivered()

    def _main_screen(self) -> MainScreen | None:
        from io_tui.ui.screens.main import MainScreen

        for screen in self.screen_stack:
            if isinstance(screen, MainScreen):
                return screen
        return None

    # -- the store: initial load, polling, refresh ---------------------------------------------

    def poll_store(self) -> None:
        self.refresh_runs(None)

    @work(group="db", exit_on_error=False)
    async def refresh_runs(self, run_ids: list[int] | None) -> None:
        if run_ids is None:
            rows = await self.store.runs.list()
        else:
            rows = [r for r in [await self.store.runs.get(i) for i in run_ids] if r is not None]
        self.post_message(StoreChanged(rows))

    @on(StoreChanged)
    def _on_store_changed(self, message: StoreChanged) -> None:
        main = self._main_screen()
        stale: list[int] = []
        for row in message.runs:
            run = self.runs.get(row.id)
            local = row.id in self.run_workers and self.run_workers[row.id].is_running
            if run is None:
                run = self.runs[row.id] = RunView.from_row(row)
                stale.append(row.id)
            elif not local:
                if (row.status, row.tokens) != (run.status, run.tokens) or row.steps > len(
                    run.steps
                ):
                    stale.append(row.id)
                run.status, run.outcome, run.tokens = row.status, row.outcome, row.tokens
            run.parent_run_id = row.parent_run_id
            run.token_budget = (row.contract or {}).get("token_budget")
            if main is not None:
                main.upsert_run(run)
        if stale:
            self.load_steps_of(stale)

    @work(group="db", exit_on_error=False)
    async def load_steps_of(self, run_ids: list[int]) -> None:
        rows = await self.store.runs.step_summaries(run_ids)
        self.post_message(StepsLoaded(tuple(_step_view(row) for row in rows)))

    @on(StepsLoaded)
    def _on_steps_loaded(self, message: StepsLoaded) -> None:
        main = self._main_screen()
        with self.batch_update():
            for run_id, fresh in message.steps:
                run = self.runs.get(run_id)
                if run is None:
                    continue
                view = run.steps.get(fresh.step)
                if view != fresh:
                    run.steps[fresh.step] = replace(fresh, asking=view.asking if view else False)
                    if main is not None:
                        main.upsert_step(run, run.steps[fresh.step])

    # -- actions -------------------------------------------------------------------------------

    def action_new_run(self, task: str = "") -> None:
        from io_tui.ui.screens.new_run import NewRunScreen

        def started(request: NewRunRequest | None) -> None:
            if request is not None:
                self.start_request(request)

        default = self.demo_workspace or Path.cwd()
        self.push_screen(NewRunScreen(self.settings, default, task=task), started)

    def action_help(self) -> None:
        from io_tui.ui.screens.help import HelpScreen

        self.push_screen(HelpScreen())

    def action_next_theme(self) -> None:
        names = sorted(n for n in self.available_themes if n.startswith("io-"))
        if not names:
            return
        index = names.index(self.theme) + 1 if self.theme in names else 0
        self.theme = names[index % len(names)]
        self.notify(f"theme: {self.theme}")


def create_app(
    settings: Settings,
    store_path: Path,
    *,
    demo: bool = False,
    approver: Approver | None = None,
    poll_interval: float | None = POLL_INTERVAL,
    demo_workspace: Path | None = None,
) -> IoApp:
    """The one way to build the app: the CLI, tests, screenshots and benchmarks all use it.

    ``demo_workspace``: a prepared copy of the demo project (fixed path for snapshots); by
    default the demo copies it into a fresh temp dir. ``approver``: replaces the UI approver
    (screenshots and benchmarks approve everything).
    """
    return IoApp(
        settings,
        store_path,
        demo=demo,
        approver=approver,
        poll_interval=poll_interval,
        demo_workspace=demo_workspace,
    )


def _step_view(row: Any) -> tuple[int, StepView]:
    names = [c["name"] for c in json.loads(row["tool_calls"])]
    return row["run_id"], StepView(row["step"], row["tokens"], names, committed=True)


__all__ = ["IoApp", "create_app"]

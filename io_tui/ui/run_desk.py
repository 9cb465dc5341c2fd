"""The run desk: what the operator does to a run's life from the cockpit, beside the approval desk.

Starting a run (on the app's run host, or on the queue for a worker), resuming an interrupted one
(its calls in flight at the crash reconciled first, then continued in a detached ``io-tui
resume`` process, or back on the queue), and cancelling one no process drives (after a yes).
The app owns one (``IoApp.run_desk``) and keeps only the keys and palette entries that call it;
each change ends with the runs it touched reloaded from the store (``refresh``), which is the
authority the run tree is rebuilt from.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from typing import Any

from textual.app import App

from io_tui.config import Settings
from io_tui.core import NewRunRequest, Store, StoreLocation
from io_tui.ui.approver import OPERATOR, ApprovalDesk
from io_tui.ui.hosts import RunHost
from io_tui.ui.messages import RunEnded


class RunDesk:
    """``app`` shows the dialogs and notifications and runs the desk's workers; ``refresh``
    reloads the given runs from the store; ``approvals`` is told of the requests a cancel
    decided, so its inbox and badge follow."""

    def __init__(
        self,
        app: App[Any],
        *,
        store: Store,
        host: RunHost,
        settings: Settings,
        approvals: ApprovalDesk,
        refresh: Callable[[list[int]], object],
    ) -> None:
        self.app = app
        self.store = store
        self.host = host
        self.settings = settings
        self.approvals = approvals
        self.refresh = refresh

    # -- starting --

    def start(self, request: NewRunRequest) -> None:
        """Start a new run (or a follow-up); a request that cannot start ends in ``RunEnded``.
        A request for the queue is put there for a worker to drive."""
        if request.queue:
            self.app.run_worker(self._enqueue(request), group="db", exit_on_error=False)
        else:
            self.host.start(request)

    async def _enqueue(self, request: NewRunRequest) -> None:
        from io_tui.core import enqueue_request

        try:
            run_id, notices = await enqueue_request(self.store, self.settings, request)
        except ValueError as exc:
            self.app.post_message(RunEnded(None, error=str(exc)))
            return
        for notice in notices:
            self.app.notify(notice, severity="warning")
        labels = f" serving {', '.join(request.labels)}" if request.labels else ""
        self.app.notify(f"run {run_id} is on the queue: the first free worker{labels} drives it")
        self.refresh([run_id])

    # -- resuming --

    def resume(self, run_id: int) -> None:
        """Resume an interrupted run: its calls in flight at the crash go to the reconcile
        modal first; the run continues in its own ``io-tui resume`` process (its asks deferred
        to the inbox), which the store poll follows. A queue run goes back to the queue with
        the choice instead, for a worker to continue."""
        self.app.run_worker(self._resume(run_id), group="db", exit_on_error=False)

    async def _resume(self, run_id: int) -> None:
        from io_tui.core import Workspace, in_flight_calls
        from io_tui.ui.screens.reconcile import ReconcileScreen

        row = await self.store.runs.get(run_id)
        if row is None or row.status != "interrupted":
            self.app.notify(f"run {run_id} is not interrupted", severity="warning")
            return
        calls = await in_flight_calls(self.store, run_id, Workspace(row.workspace))
        choice = await self.app.push_screen_wait(ReconcileScreen(calls)) if calls else "rerun"
        if choice is not None and await self.store.queue.release(run_id, choice):
            self.app.notify(f"run {run_id} is back on the queue ({choice} for calls in flight)")
            self.refresh([run_id])
        elif choice is not None:
            launch_resume(self.store.path, run_id, choice)
            self.app.notify(f"resuming run {run_id} ({choice} for calls in flight)")

    # -- rewinding and forking --

    def rewind(self, run_id: int, step: int | None) -> None:
        """Rewind a run's files to before ``step`` (None: undo its last rewind), after the
        modal showed what changes and took the operator's word for each file someone else
        changed; the run's transcript then shows the rewind."""
        self.app.run_worker(self._rewind(run_id, step), group="db", exit_on_error=False)

    async def _rewind(self, run_id: int, step: int | None) -> None:
        from io_tui.ui.screens.rewind import RewindScreen

        result = await self.app.push_screen_wait(RewindScreen(self.store, run_id, step))
        if result is None:
            return
        what = "the last rewind undone" if step is None else f"files rewound to before step {step}"
        self.app.notify(f"run {run_id}: {what}: {result.plan.summary()}; W undoes it")
        self.refresh([run_id])
        self.reload_transcript(run_id)

    def fork(self, run_id: int, step: int, workspace: str) -> None:
        """Fork a run from ``step`` (the modal says what is sent and where the fork works),
        then start the fork in its own ``io-tui resume`` process, as an interrupted run is
        resumed: its asks go to the inbox."""
        self.app.run_worker(self._fork(run_id, step, workspace), group="db", exit_on_error=False)

    async def _fork(self, run_id: int, step: int, workspace: str) -> None:
        from pathlib import Path

        from io_tui.ui.screens.fork import ForkScreen

        screen = ForkScreen(self.store, run_id, step, Path(workspace), self.settings)
        fork_id = await self.app.push_screen_wait(screen)
        if fork_id is None:
            return
        launch_resume(self.store.path, fork_id, "rerun")
        self.app.notify(
            f"run {fork_id} forked from run {run_id} at step {step}: it runs in its own"
            " process, its asks in the inbox (F2)"
        )
        self.refresh([run_id, fork_id])
        self.reload_transcript(run_id)

    def reload_transcript(self, run_id: int) -> None:
        """The main screen's transcript of ``run_id`` read again (a rewind or fork is a note
        under the step the run was at)."""
        from io_tui.ui.screens.main import MainScreen

        main = next((s for s in self.app.screen_stack if isinstance(s, MainScreen)), None)
        if main is not None and main.selected_run == run_id:
            main.load_transcript(run_id)

    # -- cancelling --

    def cancel(self, run_id: int) -> None:
        """Cancel a run no process drives (paused, interrupted) once the operator says yes: it
        ends ``cancelled`` and its pending requests are denied (core ``cancel_run``), so they
        leave this inbox and every other cockpit's, which say who decided them."""
        self.app.run_worker(self._cancel(run_id), group="db", exit_on_error=False)

    async def _cancel(self, run_id: int) -> None:
        from io_tui.core import CancelRefused, cancel_run, plan_cancel
        from io_tui.ui.cancelling import question, said
        from io_tui.ui.screens.confirm import ConfirmScreen

        try:
            plan = await plan_cancel(self.store, run_id)
        except CancelRefused as exc:
            self.app.notify(str(exc), severity="warning")
            self.refresh([run_id])
            return
        if not await self.app.push_screen_wait(ConfirmScreen(question(plan))):
            return
        try:
            done = await cancel_run(self.store, run_id, by=OPERATOR)
        except CancelRefused as exc:  # resumed, or cancelled, while the question was open
            self.app.notify(f"nothing cancelled: {exc}", severity="warning")
            self.refresh([run.id for run in plan.runs])
            return
        self.approvals.settled_here(done.approvals)
        self.app.notify(said(done))
        for note in done.notes:
            self.app.notify(note, severity="warning")
        self.refresh([run.id for run in done.runs])


def launch_resume(store: StoreLocation, run_id: int, choice: str) -> None:
    """``io-tui resume RUN --reconcile CHOICE`` as its own process, detached from the app."""
    argv = [sys.executable, "-m", "io_tui", "resume", str(run_id), "--reconcile", choice,
            "--approve", "defer", "--store", str(store)]  # fmt: skip
    subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )

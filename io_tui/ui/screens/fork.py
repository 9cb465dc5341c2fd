"""Fork a run from a step: a new run whose first request is that step's, as recorded, on the
workspace as it was before the step. The modal says what will be sent and what the workspace
restore changes; the operator may add an instruction, pick where the fork works (the run's own
workspace, restored; a new git worktree; a copy) and another provider or model.

The fork is made by the core (``plan_fork``, ``create_fork``) in a worker; the modal dismisses
with its run id, and the app starts it in its own process (``io-tui resume``, as it resumes an
interrupted run: its asks go to the inbox). A fork in place is refused while someone else's
changes are in the workspace: fork beside it, or rewind first (which asks per file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Input, RadioButton, RadioSet, Static

from io_tui.core import (
    ForkError,
    ForkPlace,
    ForkPlan,
    NewRunRequest,
    Store,
    create_fork,
    plan_fork,
    provider_for,
    run_settings_for,
)
from io_tui.ui.answers import on_answer

PLACES = (ForkPlace.HERE, ForkPlace.WORKTREE, ForkPlace.COPY)


class ForkScreen(ModalScreen[int | None]):
    """Dismissed with the fork's run id, or None (nothing was made)."""

    CSS_PATH = "fork.tcss"
    BINDINGS = [
        Binding("ctrl+s", "fork", "Fork", id="fork.go", tooltip="Make the fork and start it", priority=True),
        Binding("escape", "cancel", "Cancel", id="fork.cancel", tooltip="Make nothing"),
    ]  # fmt: skip

    class Planned(Message):
        def __init__(self, plan: ForkPlan | None, error: str | None) -> None:
            super().__init__()
            self.plan = plan
            self.error = error

    class Made(Message):
        def __init__(self, run_id: int | None, error: str | None) -> None:
            super().__init__()
            self.run_id = run_id
            self.error = error

    dialog = query_one("#fork", Vertical)
    head = query_one("#fork-head", Static)
    workspace_note = query_one("#fork-workspace", Static)
    note = query_one("#fork-note", Static)
    instruction = query_one("#fork-task", Input)
    directory = query_one("#fork-dir", Input)
    provider = query_one("#fork-provider", Input)
    model = query_one("#fork-model", Input)
    places = query_one("#fork-place", RadioSet)
    go_button = query_one("#fork-go", Button)

    def __init__(self, store: Store, run_id: int, step: int, workspace: Path, settings: Any):
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.step = step
        self.workspace = workspace
        self.settings = settings
        self.plan: ForkPlan | None = None
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(id="fork"):
            yield Static("reading the step's request…", id="fork-head")
            yield Static("", id="fork-workspace")
            yield Input(placeholder="a new instruction (optional)", id="fork-task")
            with RadioSet(id="fork-place"):
                yield RadioButton("in the run's workspace, restored to the step", value=True)
                yield RadioButton("in a new git worktree")
                yield RadioButton("in a copy of the files")
            yield Input(
                value=str(self.workspace.parent / f"{self.workspace.name}-fork-{self.run_id}"
                          f"-{self.step}"),
                id="fork-dir",
            )  # fmt: skip
            with Horizontal(id="fork-model-row"):
                yield Input(placeholder="provider: the run's", id="fork-provider")
                yield Input(placeholder="model: the run's", id="fork-model")
            yield Static("", id="fork-note")
            with Horizontal(id="fork-buttons"):
                yield Button("ctrl+s  Fork", id="fork-go", variant="primary", disabled=True)
                yield Button("esc  Cancel", id="fork-cancel")

    def on_mount(self) -> None:
        self.dialog.border_title = f"Fork run {self.run_id} from step {self.step}"
        self.directory.display = False
        self.instruction.focus()
        self.load()

    @work(group="fork", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        try:
            plan = await plan_fork(self.store, self.run_id, self.step)
        except ForkError as exc:
            self.post_message(self.Planned(None, str(exc)))
            return
        self.post_message(self.Planned(plan, None))

    @on_answer(Planned)
    def _planned(self, message: Planned) -> None:
        if message.plan is None:
            self.head.update(f"Cannot fork: {message.error}")
            return
        plan = self.plan = message.plan
        self.head.update(
            f"Its first request is request {plan.request_id} of run {self.run_id}, sent again as"
            f" recorded ({plan.messages} messages, ~{plan.est_tokens:,} tokens); steps"
            f" 1–{self.step - 1} are the run's."
        )
        self._describe_place()
        self.go_button.disabled = False

    def _place(self) -> ForkPlace:
        index = self.places.pressed_index
        return PLACES[index] if 0 <= index < len(PLACES) else ForkPlace.HERE

    @on(RadioSet.Changed, "#fork-place")
    def _place_changed(self) -> None:
        self.directory.display = self._place() is not ForkPlace.HERE
        self._describe_place()

    def _describe_place(self) -> None:
        plan, place = self.plan, self._place()
        if plan is None:
            return
        if place is not ForkPlace.HERE:
            self.workspace_note.update(
                f"The fork works in a new {place.value} (below), made as the files were before"
                f" step {self.step}; run {self.run_id}'s workspace is left as it is."
            )
            return
        rewind = plan.rewind
        if rewind is None or not rewind.changes:
            self.workspace_note.update(f"{self.workspace} is already as it was before the step.")
        elif rewind.foreign:
            self.workspace_note.update(
                f"{len(rewind.foreign)} file(s) changed after run {self.run_id}'s last"
                " checkpoint by someone else: fork into a worktree or a copy, or rewind first"
                " (w), which asks per file."
            )
        else:
            self.workspace_note.update(f"{self.workspace} is restored first: {rewind.summary()}")

    def action_fork(self) -> None:
        if self.plan is None or self.busy:
            return
        place = self._place()
        directory = Path(self.directory.value.strip()) if place is not ForkPlace.HERE else None
        if place is not ForkPlace.HERE and not self.directory.value.strip():
            self.note.update("Say where the fork works.")
            return
        self.busy = True
        self.go_button.disabled = True
        self.note.update("forking…")
        self.make(place, directory, self.instruction.value, self.provider.value, self.model.value)

    @work(group="fork", exclusive=True, exit_on_error=False)
    async def make(
        self, place: ForkPlace, directory: Path | None, task: str, provider: str, model: str
    ) -> None:
        try:
            plan = await plan_fork(self.store, self.run_id, self.step, place, directory)
            described = await self._provider(provider.strip(), model.strip())
            fork_id = await create_fork(self.store, plan, task=task, provider=described)
        except (ForkError, ValueError) as exc:
            self.post_message(self.Made(None, str(exc)))
            return
        self.post_message(self.Made(fork_id, None))

    async def _provider(self, name: str, model: str) -> dict[str, Any] | None:
        if not name and not model:
            return None
        request = NewRunRequest(task="", workspace=self.workspace, provider=name or None,
                                model=model or None)  # fmt: skip
        made = provider_for(run_settings_for(self.settings, request))
        try:
            return made.describe()
        finally:
            await made.aclose()

    @on_answer(Made)
    def _made(self, message: Made) -> None:
        self.busy = False
        if message.run_id is None:
            self.note.update(f"Not forked: {message.error}")
            self.go_button.disabled = False
            return
        self.dismiss(message.run_id)

    @on(Button.Pressed, "#fork-go")
    def _go(self) -> None:
        self.action_fork()

    @on(Button.Pressed, "#fork-cancel")
    def _cancel(self) -> None:
        self.action_cancel()

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)

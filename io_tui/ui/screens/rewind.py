"""Rewind a run's files to before a step (or undo its last rewind): the diff summary first, file
by file; the files someone else changed after the run's last checkpoint each need the
operator's word (``k`` keep it as it is, ``o`` overwrite it) before ``y`` rewinds.

The plan and the restore are the core's (``plan_rewind``, ``apply_rewind``), read and done in
a worker; the modal dismisses with the result (None: nothing was done). The run's history is
never touched: the rewind is an event in its trace, and it can itself be undone.
"""

from __future__ import annotations

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from io_tui.core import (
    FileChoice,
    RewindError,
    RewindPlan,
    RewindResult,
    Store,
    apply_rewind,
    describe_change,
    plan_rewind,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.widgets.table import Table


class RewindScreen(ModalScreen[RewindResult | None]):
    """Dismissed with the rewind's result, or None (nothing changed)."""

    CSS_PATH = "rewind.tcss"
    BINDINGS = [
        Binding("y", "rewind", "Rewind", id="rewind.go", tooltip="Restore the files as listed"),
        Binding("k", "choose('keep')", "Keep", id="rewind.keep", tooltip="Leave the highlighted file someone else changed as it is"),
        Binding("o", "choose('overwrite')", "Overwrite", id="rewind.overwrite", tooltip="Restore the highlighted file someone else changed too"),
        Binding("escape,n", "cancel", "Cancel", id="rewind.cancel", tooltip="Change nothing"),
    ]  # fmt: skip

    class Planned(Message):
        def __init__(self, plan: RewindPlan | None, error: str | None) -> None:
            super().__init__()
            self.plan = plan
            self.error = error

    class Done(Message):
        def __init__(self, result: RewindResult | None, error: str | None) -> None:
            super().__init__()
            self.result = result
            self.error = error

    dialog = query_one("#rewind", Vertical)
    head = query_one("#rewind-head", Static)
    files = query_one("#rewind-files", Table)
    foreign_head = query_one("#rewind-foreign-head", Static)
    foreign = query_one("#rewind-foreign", Table)
    note = query_one("#rewind-note", Static)
    go_button = query_one("#rewind-go", Button)

    def __init__(self, store: Store, run_id: int, step: int | None) -> None:
        """``step`` None: undo the run's last rewind."""
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.step = step
        self.plan: RewindPlan | None = None
        self.choices: dict[str, FileChoice] = {}
        self.busy = False

    def compose(self) -> ComposeResult:
        with Vertical(id="rewind"):
            yield Static("looking at the workspace…", id="rewind-head")
            yield Table(id="rewind-files", cursor_type="row")
            yield Static("", id="rewind-foreign-head")
            yield Table(id="rewind-foreign", cursor_type="row")
            yield Static("", id="rewind-note")
            with Horizontal(id="rewind-buttons"):
                yield Button("y  Rewind", id="rewind-go", variant="warning", disabled=True)
                yield Button("n  Cancel", id="rewind-cancel")

    def on_mount(self) -> None:
        what = "Undo the last rewind" if self.step is None else f"before step {self.step}"
        self.dialog.border_title = f"Rewind run {self.run_id}: {what}"
        self.files.add_column("", key="status", priority=3, shrink_to=None)
        self.files.add_column("file", key="path", priority=2, shrink_to=12)
        self.files.add_column("what happens", key="what", priority=1, shrink_to=10)
        self.foreign.add_column("changed by someone else", key="path", priority=2, shrink_to=12)
        self.foreign.add_column("your choice", key="choice", priority=3, shrink_to=None)
        self.foreign.display = False
        self.load()

    @work(group="rewind", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        try:
            plan = await plan_rewind(
                self.store, self.run_id, to_step=self.step, undo=self.step is None
            )
        except RewindError as exc:
            self.post_message(self.Planned(None, str(exc)))
            return
        self.post_message(self.Planned(plan, None))

    @on_answer(Planned)
    def _planned(self, message: Planned) -> None:
        if message.plan is None:
            self.head.update(f"Cannot rewind: {message.error}")
            self.files.display = False
            return
        plan = self.plan = message.plan
        target = plan.target
        which = (
            f"back to what the last rewind found (checkpoint {target.id})"
            if plan.undo
            else f"checkpoint {target.id}, taken {target.phase} step {target.step}"
        )
        self.head.update(f"{plan.summary()} — {which}")
        for change in plan.changes:
            self.files.add_row(change.status, change.path, describe_change(change), key=change.path)
        if plan.foreign:
            self.foreign_head.update(
                "Someone else (an editor, another run) changed these after the run's last"
                " checkpoint. Choose for each: k keep it as it is, o overwrite it."
            )
            self.foreign.display = True
            for change in plan.foreign:
                self.foreign.add_row(change.path, "choose: k / o", key=change.path)
        if plan.left_alone:
            left = ", ".join(s["path"] for s in plan.left_alone)
            self.note.update(f"Left alone (not in that checkpoint): {left}")
        self._refresh_go()

    def _refresh_go(self) -> None:
        plan = self.plan
        missing = [p for p in plan.needs_choices if p not in self.choices] if plan else []
        go = self.go_button
        go.disabled = plan is None or not plan.changes or bool(missing) or self.busy
        if plan is not None and not plan.changes:
            self.note.update("Nothing to do: the workspace is already as it was.")
        elif missing:
            self.note.update(f"{len(missing)} file(s) still need your choice (k or o).")

    def action_choose(self, choice: str) -> None:
        if self.plan is None or not self.plan.foreign or self.foreign.row_count == 0:
            return
        row = self.foreign.coordinate_to_cell_key(self.foreign.cursor_coordinate).row_key
        path = str(row.value)
        self.choices[path] = FileChoice(choice)
        said = "keep it as it is" if choice == "keep" else "overwrite it"
        self.foreign.update_cell(row, "choice", said)
        self._refresh_go()

    def action_rewind(self) -> None:
        go = self.go_button
        if go.disabled or self.plan is None:
            return
        self.busy = True
        go.disabled = True
        self.note.update("rewinding…")
        self.restore(self.plan)

    @work(group="rewind", exclusive=True, exit_on_error=False)
    async def restore(self, plan: RewindPlan) -> None:
        try:
            result = await apply_rewind(self.store, plan, self.choices)
        except RewindError as exc:
            self.post_message(self.Done(None, str(exc)))
            return
        self.post_message(self.Done(result, None))

    @on_answer(Done)
    def _done(self, message: Done) -> None:
        self.busy = False
        if message.result is None:
            self.note.update(f"Not rewound: {message.error}")
            self._refresh_go()
            return
        self.dismiss(message.result)

    @on(Button.Pressed, "#rewind-go")
    def _go(self) -> None:
        self.action_rewind()

    @on(Button.Pressed, "#rewind-cancel")
    def _cancel(self) -> None:
        self.action_cancel()

    def action_cancel(self) -> None:
        if not self.busy:
            self.dismiss(None)

"""Before resuming an interrupted run: its calls in flight at the crash, what is known about
each (the workspace diff since the intent, for files), and the operator's word for them:
re-run (through the approval gate), mark done, or skip."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from io_tui.core import InFlight


class ReconcileScreen(ModalScreen[str | None]):
    """Dismissed with ``rerun``, ``done``, ``skip``, or None (the run stays interrupted)."""

    DEFAULT_CSS = """
    ReconcileScreen { align: center middle; }
    ReconcileScreen #panel { width: 90%; max-width: 110; height: auto; max-height: 80%;
        border: round $warning; background: $surface; padding: 1 2; }
    ReconcileScreen #known { height: auto; max-height: 24; }
    ReconcileScreen #choices { height: auto; margin-top: 1; }
    ReconcileScreen Button { margin-right: 2; }
    """
    BINDINGS = [
        Binding("escape", "dismiss_none", "Cancel", id="reconcile.cancel", tooltip="Leave it interrupted"),
        Binding("r", "choose('rerun')", "Re-run", id="reconcile.rerun", tooltip="Re-run through the approval gate"),
        Binding("d", "choose('done')", "Mark done", id="reconcile.done", tooltip="It took effect; go on"),
        Binding("s", "choose('skip')", "Skip", id="reconcile.skip", tooltip="Do not re-run it"),
    ]  # fmt: skip

    def __init__(self, calls: Sequence[InFlight]) -> None:
        super().__init__()
        self.calls = calls

    def compose(self) -> ComposeResult:
        with Vertical(id="panel"):
            yield Static(
                f"Resume run {self.calls[0].run_id}: {len(self.calls)} call(s) were in flight "
                "when its process died",
                id="title",
            )
            with VerticalScroll(id="known"):
                for call in self.calls:
                    yield Static(call.known, markup=False)
            with Horizontal(id="choices"):
                yield Button("Re-run (r)", id="rerun", variant="warning")
                yield Button("Mark done (d)", id="done")
                yield Button("Skip (s)", id="skip")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id)

    def action_choose(self, choice: str) -> None:
        self.dismiss(choice)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

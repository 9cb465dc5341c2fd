"""What can be done from one step of a run: enter on a step's row in the run tree opens it.

Each item is a key of the main screen as well (the menu says which); the modal dismisses with
the chosen action's name, which the main screen runs, or None.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

ITEMS = (
    ("inspect", "i  Inspect this step's request"),
    ("whatif", "?  What if… send this step's request again, changed"),
    ("rewind", "w  Rewind files to before this step"),
    ("fork", "f  Fork from here"),
)


class StepMenu(ModalScreen[str | None]):
    """Dismissed with ``inspect``, ``whatif``, ``rewind``, ``fork``, or None."""

    DEFAULT_CSS = """
    StepMenu { align: center middle; background: $background 50%; }
    StepMenu > Vertical { width: 60; height: auto; border: round $primary; background: $surface; }
    StepMenu OptionList { height: auto; border: none; }
    """
    BINDINGS = [
        Binding("escape", "dismiss_none", "Back", id="step_menu.back", tooltip="Do nothing"),
        Binding("i", "pick('inspect')", "Inspect", id="step_menu.inspect", show=False, tooltip="Inspect the step's request"),
        Binding("question_mark", "pick('whatif')", "What if", id="step_menu.whatif", show=False, tooltip="Send the step's request again, changed"),
        Binding("w", "pick('rewind')", "Rewind", id="step_menu.rewind", show=False, tooltip="Rewind files to before the step"),
        Binding("f", "pick('fork')", "Fork", id="step_menu.fork", show=False, tooltip="Fork from the step"),
    ]  # fmt: skip

    def __init__(self, run_id: int, step: int) -> None:
        super().__init__()
        self.run_id = run_id
        self.step = step

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"Run {self.run_id}, step {self.step}"
            yield OptionList(*(Option(label, id=key) for key, label in ITEMS))

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_pick(self, action: str) -> None:
        self.dismiss(action)

    def action_dismiss_none(self) -> None:
        self.dismiss(None)

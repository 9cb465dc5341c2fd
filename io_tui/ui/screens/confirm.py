"""A yes/no question in a modal: the one confirmation every screen asks through.

Clearing or deleting memory notes, cancelling a run: each asks before it acts, and each asks
the same way (``y`` yes; ``n`` or escape no), so the keys never differ between screens.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from io_tui.ui.terminal_text import plain


class ConfirmScreen(ModalScreen[bool]):
    """Yes/no; escape and n are no."""

    CSS_PATH = "confirm.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes", tooltip="Yes, do it"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no", tooltip="No, keep everything"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm"):
            yield Static(Content(plain(self.question)), id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button("y  Yes", id="yes", variant="error")
                yield Button("n  No", id="no")

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

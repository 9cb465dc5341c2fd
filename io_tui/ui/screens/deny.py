"""The deny modal: an optional reason the model reads (opened from the approval modal)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from io_tui.core import ApprovalRequest
from io_tui.ui.terminal_text import plain


class DenyScreen(ModalScreen[str | None]):
    """An optional reason for a deny; dismisses with the reason ('' for none) or None to go back."""

    CSS_PATH = "approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Back", id="deny.cancel", tooltip="Back to the request"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="deny", classes="approval-dialog"):
            title = f"Deny {self.request.act.value} {self.request.target}"
            yield Static(Content(plain(title)), classes="dialog-title")
            yield Label("Reason (optional; the model reads it and adapts):")
            yield Input(placeholder="e.g. don't touch generated files", id="deny-reason")
            yield Static("enter denies · escape goes back", classes="dialog-hint")

    @on(Input.Submitted, "#deny-reason")
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)

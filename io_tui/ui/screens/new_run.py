"""The new-run dialog: task, workspace, provider, model and budgets → ``NewRunRequest``."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal, Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from io_tui.config import Settings
from io_tui.ui.messages import NewRunRequest
from io_tui.ui.terminal_text import plain


class NewRunScreen(ModalScreen[NewRunRequest | None]):
    CSS_PATH = "new_run.tcss"
    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="new_run.cancel", tooltip="Close without starting"),
        Binding("ctrl+s", "start", "Start", id="new_run.start", tooltip="Start the run"),
    ]  # fmt: skip

    def __init__(self, settings: Settings, workspace: Path, *, task: str = "") -> None:
        super().__init__()
        self.settings = settings
        self.workspace = workspace
        self.initial_task = task

    def compose(self) -> ComposeResult:
        s = self.settings
        with Vertical(id="dialog"):
            yield Static("New run", id="title")
            with Grid(id="fields"):
                yield Label("Task")
                yield Input(self.initial_task, placeholder="what the agent should do", id="task")
                yield Label("Workspace")
                yield Input(str(self.workspace), id="workspace")
                yield Label("Provider")
                yield Input(
                    s.provider,
                    placeholder="openai, anthropic, ollama, scripted:FILE…",
                    id="provider",
                )
                yield Label("Model")
                yield Input(s.model or "", placeholder="provider default", id="model")
                yield Label("Max steps")
                yield Input(str(s.max_steps), type="integer", id="max-steps")
                yield Label("Token budget")
                yield Input(
                    str(s.token_budget or ""), type="integer", placeholder="none", id="token-budget"
                )
                yield Label("Context max")
                yield Input(str(s.context_max_tokens), type="integer", id="context-max")
            yield Static("", id="error")
            with Horizontal(id="buttons"):
                yield Button("Start", variant="primary", id="start")
                yield Button("Cancel", id="cancel")

    def _value(self, widget_id: str) -> str:
        return self.query_one(f"#{widget_id}", Input).value.strip()

    def _int(self, widget_id: str) -> int | None:
        text = self._value(widget_id)
        return int(text) if text else None

    def request(self) -> NewRunRequest:
        task = self._value("task")
        if not task:
            raise ValueError("the task is empty")
        workspace = Path(self._value("workspace") or ".").expanduser()
        if not workspace.is_dir():
            raise ValueError(f"no such directory: {workspace}")
        return NewRunRequest(
            task=task,
            workspace=workspace,
            provider=self._value("provider") or None,
            model=self._value("model") or None,
            max_steps=self._int("max-steps"),
            token_budget=self._int("token-budget"),
            context_max_tokens=self._int("context-max"),
        )

    @on(Button.Pressed, "#start")
    @on(Input.Submitted)
    def action_start(self) -> None:
        try:
            request = self.request()
        except ValueError as exc:
            self.query_one("#error", Static).update(Content(plain(str(exc))))
            return
        self.dismiss(request)

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

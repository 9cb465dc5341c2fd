"""The rewrite modal: edit a request's action, checked with the tool's own arguments model and
the run's policy before it is performed (opened from the approval modal)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static, TextArea

from io_tui.core import ApprovalRequest, RewriteCheck, Store, check_rewrite
from io_tui.ui.answers import on_answer


class RewriteScreen(ModalScreen[dict[str, Any] | None]):
    """Edit the action. Submitting validates it with the tool's own arguments model and re-checks
    it against the run's policy; a refusal is shown inline and the editor stays open."""

    class Checked(Message):
        """The edited action, checked against the tool's model and the run's policy."""

        def __init__(self, result: RewriteCheck) -> None:
            super().__init__()
            self.result = result

    CSS_PATH = "approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "submit",
            "Check & perform",
            id="rewrite.submit",
            tooltip="Validate, re-check the policy, and perform the edit",
            priority=True,
        ),
        Binding("escape", "cancel", "Back", id="rewrite.cancel", tooltip="Back to the request"),
    ]

    path_input = query_one("#rewrite-path", Input)  # these two for write_file (split_fields)
    content_area = query_one("#rewrite-content", TextArea)
    json_area = query_one("#rewrite-json", TextArea)  # this one for every other tool
    error = query_one("#rewrite-error", Static)

    def __init__(self, request: ApprovalRequest, store: Store) -> None:
        super().__init__()
        self.request = request
        self.store = store

    @property
    def split_fields(self) -> bool:
        """write_file is edited as a path and a content editor; everything else as JSON."""
        return self.request.tool == "write_file"

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="rewrite", classes="approval-dialog"):
            yield Static(
                f"Rewrite {req.tool} (run {req.run_id} step {req.step})", classes="dialog-title"
            )
            if self.split_fields:
                yield Label("path")
                yield Input(str(req.arguments.get("path", req.target)), id="rewrite-path")
                yield Label("content")
                yield TextArea(
                    str(req.arguments.get("content", req.content)),
                    id="rewrite-content",
                    soft_wrap=False,
                )
            else:
                yield Label("arguments (JSON)")
                yield TextArea(
                    json.dumps(req.arguments, indent=2, ensure_ascii=False),
                    id="rewrite-json",
                    soft_wrap=False,
                )
            yield Static("", id="rewrite-error")
            yield Static("ctrl+s checks and performs · escape goes back", classes="dialog-hint")

    def edited(self) -> dict[str, Any] | str:
        """The edited arguments, or a message saying why they are not an object."""
        if self.split_fields:
            args = dict(self.request.arguments)
            args["path"] = self.path_input.value
            args["content"] = self.content_area.text
            return args
        raw = self.json_area.text
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            return f"not valid JSON: {exc}"
        return parsed if isinstance(parsed, dict) else "the arguments must be a JSON object"

    def action_submit(self) -> None:
        edited = self.edited()
        if isinstance(edited, str):
            self._show_problem(edited)
            return
        self._check(edited)

    @work(group="rewrite-check", exclusive=True, exit_on_error=False)
    async def _check(self, arguments: dict[str, Any]) -> None:
        self.post_message(self.Checked(await check_rewrite(self.store, self.request, arguments)))

    @on_answer(Checked)
    def _on_checked(self, message: Checked) -> None:
        result = message.result
        if result.ok:
            self.dismiss(result.arguments)
        else:
            self._show_problem(result.problem or "refused")

    def _show_problem(self, problem: str) -> None:
        error = self.error
        error.update(problem)
        error.add_class("-shown")

    def action_cancel(self) -> None:
        self.dismiss(None)

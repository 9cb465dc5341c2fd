"""An MCP server's elicitation as a form: one field per property of its requested schema.

Opened from the approval modal (and the inbox) when the operator approves an elicitation request:
text and numbers are inputs, a boolean a checkbox, a choice a select, several choices a selection
list, each prefilled with the schema's default. ``ctrl+s`` (or Send) checks the answer against the
schema and dismisses with it (the approval's ``Decision.arguments``: the server's ``accept``);
what does not match is shown and the form stays. ``escape`` goes back to the approval, where
deny declines and defer cancels.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.getters import query_one
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Checkbox, Input, Label, Select, SelectionList, Static

from io_tui.core import ApprovalRequest, FormField, form_fields, form_problems
from io_tui.ui.terminal_text import plain

INPUT_TYPES = {"integer": "integer", "number": "number"}


class ElicitScreen(ModalScreen[dict[str, Any] | None]):
    """Fill in a server's form; dismisses with the content, or None (back to the approval)."""

    CSS_PATH = "elicit.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "send", "Send", id="elicit.send", tooltip="Send the form to the server"),
        Binding("escape", "back", "Back", id="elicit.back", tooltip="Back to the approval"),
    ]

    form = query_one("#elicit", Vertical)
    problems_note = query_one("#elicit-problems", Static)

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request
        self.schema: dict[str, Any] = dict(request.arguments.get("requested_schema") or {})
        self.fields = form_fields(self.schema)

    def compose(self) -> ComposeResult:
        server = self.request.target.split("__")[1] if "__" in self.request.target else "?"
        with Vertical(id="elicit"):
            yield Static(
                Content.assemble(
                    Content.styled(f"MCP server '{server}' asks: ", "bold"),
                    plain(str(self.request.arguments.get("message") or "")),
                ),
                id="elicit-message",
            )
            with VerticalScroll(id="elicit-fields"):
                for field in self.fields:
                    yield Label(self._label(field), classes="elicit-label")
                    yield self._widget(field)
            yield Static("", id="elicit-problems")
            with Horizontal(id="elicit-buttons"):
                yield Button("Send (ctrl+s)", id="elicit-send", variant="success")
                yield Button("Back (escape)", id="elicit-back")

    def on_mount(self) -> None:
        self.form.border_title = "Form"

    @staticmethod
    def _label(field: FormField) -> Content:
        title = field.title + (" *" if field.required else "")
        name = f"({field.name})" if field.name != field.title else ""
        about = f" — {field.description}" if field.description else ""
        limits = ""
        if field.minimum is not None or field.maximum is not None:
            limits = f" ({_num(field.minimum)}…{_num(field.maximum)})"
        return Content.assemble(Content.styled(plain(title), "bold"), plain(name + about + limits))

    @staticmethod
    def _widget(field: FormField) -> Widget:
        wid = f"field-{field.name}"
        if field.kind == "boolean":
            return Checkbox(field.title, bool(field.default), id=wid, compact=True)
        if field.kind == "choice":
            options = [(label, value) for value, label in field.options]
            default = str(field.default) if field.default is not None else Select.BLANK
            return Select(
                options, value=default, allow_blank=not field.required, id=wid, compact=True
            )
        if field.kind == "choices":
            chosen = set(field.default or ())
            return SelectionList[str](
                *[(label, value, value in chosen) for value, label in field.options],
                id=wid,
                compact=True,
            )
        value = "" if field.default is None else str(field.default)
        return Input(
            value,
            placeholder=field.format or field.kind,
            type=INPUT_TYPES.get(field.kind, "text"),  # type: ignore[arg-type]
            id=wid,
            compact=True,
        )

    def content(self) -> dict[str, Any]:
        """The form's answer: each field that has a value, typed as its schema says."""
        out: dict[str, Any] = {}
        for field in self.fields:
            widget = self.query_one(f"#field-{field.name}")
            if isinstance(widget, Checkbox):
                out[field.name] = widget.value
            elif isinstance(widget, Select):
                if widget.value is not Select.BLANK:
                    out[field.name] = widget.value
            elif isinstance(widget, SelectionList):
                out[field.name] = list(widget.selected)
            elif isinstance(widget, Input) and widget.value.strip():
                out[field.name] = _typed(field.kind, widget.value.strip())
        return out

    def action_send(self) -> None:
        content = self.content()
        problems = form_problems(self.schema, content)
        if problems:
            self.problems_note.update(plain(problems))
            return
        self.dismiss(content)

    def action_back(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#elicit-send")
    def _send(self) -> None:
        self.action_send()

    @on(Button.Pressed, "#elicit-back")
    def _back(self) -> None:
        self.action_back()


def _typed(kind: str, text: str) -> Any:
    """An input's text as the schema's type (left as text when it is not one: the schema check
    then says so)."""
    try:
        if kind == "integer":
            return int(text)
        if kind == "number":
            return float(text)
    except ValueError:
        return text
    return text


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:g}"

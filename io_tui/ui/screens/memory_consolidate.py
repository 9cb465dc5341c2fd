"""The memory editor's consolidation dialogs (DESIGN §3.3): pick the note that supersedes or
absorbs another, write the merged value, and promote a daily-log line to a long-term note.

Each is a typed modal that dismisses with what the operator chose (None: nothing), so the editor
makes the change through ``NoteRepo`` and it is audited there. A dialog that writes a note under
a key the operator types (promote here, add in ``memory_editor``) asks the store whether the key
holds a note when ctrl+s is pressed: if so it says which, inside, and only a second ctrl+s on the
same key replaces it (the remember dialog's pattern), so nothing is overwritten unseen.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.getters import query_one
from textual.screen import ModalScreen
from textual.widgets import Input, OptionList, RadioButton, RadioSet, Static, TextArea
from textual.widgets.option_list import Option

from io_tui.core import (
    KINDS,
    SECTIONS,
    LogLine,
    MemoryNote,
    NoteKind,
    Scope,
    Section,
    check_key,
    check_value,
    merge_draft,
)
from io_tui.ui.terminal_text import plain

# the note a key holds in a scope (None: none), read from the store when a dialog saves
FindNote = Callable[[Scope, str], Awaitable[MemoryNote | None]]


def checked_note(key: Input, value: TextArea, error: Static) -> tuple[str, str] | None:
    """A dialog's key and value as a note takes them, or None with the problem said in
    ``error`` and the cursor on the field at fault (what was typed is kept)."""
    at_fault: Input | TextArea = key
    try:
        checked = check_key(key.value)
        at_fault = value
        check_value(value.text)
    except ValueError as exc:
        error.update(Content(str(exc)))
        at_fault.focus()
        return None
    return checked, value.text


def key_taken(note: MemoryNote) -> Content:
    """What a dialog says when its key already holds a note: which, and how to go on."""
    return Content(
        plain(
            f"'{note.key}' already holds a {note.scope} note ({note.label}, by {note.origin}): "
            f"{one_line(note.value, 40)} · ctrl+s again replaces it, or change the key"
        )
    )


SECTION_LABELS: dict[Section, str] = {
    "preferences": "Preferences",
    "project": "Project",
    "lessons": "Lessons",
}


class ChooseNoteScreen(ModalScreen[str | None]):
    """Pick one of ``notes`` by key (the note that supersedes, or absorbs, another)."""

    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="memory.choose.cancel", tooltip="Change nothing"),
    ]

    choices = query_one("#note-choices", OptionList)

    def __init__(self, title: str, notes: list[MemoryNote]) -> None:
        super().__init__()
        self.title_text = title
        self.notes = notes

    def compose(self) -> ComposeResult:
        with Vertical(classes="memory-dialog", id="choose-note"):
            yield Static(Content(plain(self.title_text)), classes="memory-dialog-title")
            yield OptionList(
                *(
                    Option(Content(plain(f"{n.key} — {one_line(n.value, 50)}")), id=n.key)
                    for n in self.notes
                ),
                id="note-choices",
            )
            yield Static("enter chooses · escape cancels", classes="memory-hint")

    def on_mount(self) -> None:
        self.choices.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class MergeScreen(ModalScreen[str | None]):
    """The merged value of two notes, prefilled with both; dismisses with it, or None."""

    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Merge", id="memory.merge.save", tooltip="Merge", priority=True),
        Binding("escape", "cancel", "Cancel", id="memory.merge.cancel", tooltip="Merge nothing"),
    ]

    value_area = query_one("#merge-value", TextArea)
    error = query_one("#merge-error", Static)

    def __init__(self, note: MemoryNote, into: MemoryNote) -> None:
        super().__init__()
        self.note = note
        self.into = into

    def compose(self) -> ComposeResult:
        with Vertical(classes="memory-dialog", id="merge-note"):
            title = (
                f"Merge '{self.note.key}' into '{self.into.key}' ('{self.note.key}' is superseded)"
            )
            yield Static(Content(plain(title)), classes="memory-dialog-title")
            yield TextArea(merge_draft(self.note, self.into), id="merge-value")
            with Vertical(classes="memory-foot"):
                yield Static("", id="merge-error")
                yield Static("ctrl+s merges · escape cancels", classes="memory-hint")

    def action_save(self) -> None:
        value = self.value_area.text
        try:
            check_value(value)
        except ValueError as exc:
            self.error.update(str(exc))
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True, slots=True)
class Promotion:
    key: str
    section: Section
    kind: NoteKind
    value: str
    replace: bool = False  # the key held a note and the operator confirmed replacing it


class PromoteScreen(ModalScreen[Promotion | None]):
    """A log line made a long-term note: key, section, type and value (the line's text to
    start); a bad key, an empty value or a key that holds a note (``find``) is said inside the
    dialog and nothing typed is lost; a second ctrl+s on a key that holds one replaces it."""

    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "save",
            "Promote",
            id="memory.promote.save",
            tooltip="Save the note",
            priority=True,
        ),
        Binding("escape", "cancel", "Cancel", id="memory.promote.cancel", tooltip="Write nothing"),
    ]

    key_input = query_one("#promote-key", Input)
    value_area = query_one("#promote-value", TextArea)
    error = query_one("#promote-error", Static)

    def __init__(self, line: LogLine, find: FindNote | None = None) -> None:
        super().__init__()
        self.line = line
        self.find = find
        self.confirming: str | None = None  # the key a ctrl+s found taken

    def compose(self) -> ComposeResult:
        with Vertical(classes="memory-dialog", id="promote-line"):
            title = f"Promote a line of {self.line.reference} to a note"
            yield Static(Content(plain(title)), classes="memory-dialog-title")
            yield Input(placeholder="key, e.g. test-command", id="promote-key")
            yield from note_choices("promote")
            yield TextArea(self.line.text, id="promote-value")
            yield Static("", id="promote-error")
            yield Static("ctrl+s saves (verified) · escape cancels", classes="memory-hint")

    def on_mount(self) -> None:
        self.key_input.focus()

    @on(Input.Changed, "#promote-key")
    def _key_changed(self) -> None:
        if self.confirming is not None:
            self.confirming = None
            self.error.update("")

    async def action_save(self) -> None:
        error = self.error
        checked = checked_note(self.key_input, self.value_area, error)
        if checked is None:
            return
        key, value = checked
        held = await self.find("workspace", key) if self.find is not None else None
        if held is not None and self.confirming != key:
            self.confirming = key  # a second ctrl+s on the same key replaces it
            error.update(key_taken(held))
            return
        section, kind = chosen_section_and_kind(self, "promote")
        promotion = Promotion(key, section, kind, value, held is not None)
        self.dismiss(promotion)

    def action_cancel(self) -> None:
        self.dismiss(None)


def note_choices(dialog: str) -> ComposeResult:
    """The section and type a dialog's note is written with, as two rows of radio buttons
    (Project and fact pressed), compact so a dialog keeps its rows at 80×24 and below: what
    ``chosen_section_and_kind`` reads back."""
    with RadioSet(id=f"{dialog}-section", classes="memory-choices", compact=True):
        for section in SECTIONS:
            yield RadioButton(
                SECTION_LABELS[section], value=section == "project", id=f"section-{section}"
            )
    with RadioSet(id=f"{dialog}-kind", classes="memory-choices", compact=True):
        for kind in KINDS:
            yield RadioButton(kind, value=kind == "fact", id=f"kind-{kind}")


def chosen_section_and_kind(screen: ModalScreen[Any], dialog: str) -> tuple[Section, NoteKind]:
    """The section and type pressed in ``note_choices(dialog)`` on ``screen``."""
    section = _pressed(screen.query_one(f"#{dialog}-section", RadioSet), "section-")
    kind = _pressed(screen.query_one(f"#{dialog}-kind", RadioSet), "kind-")
    return (
        next((s for s in SECTIONS if s == section), "project"),
        next((k for k in KINDS if k == kind), "fact"),
    )


def _pressed(radios: RadioSet, prefix: str) -> str:
    button = radios.pressed_button
    if button is None or button.id is None:
        return ""
    return button.id.removeprefix(prefix)


def one_line(value: str, limit: int = 60) -> str:
    """A value on one table line: newlines shown as ⏎, cut with … past ``limit``."""
    line = value.replace("\n", " ⏎ ")
    return line if len(line) <= limit else line[: limit - 1] + "…"

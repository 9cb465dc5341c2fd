"""The memory editor: a workspace's notes and the global notes, with provenance and recalls,
and the workspace's daily log (``l``), where the operator consolidates (DESIGN §3.3): promote a
log line to a note, verify a note, merge two, expire one, mark one superseded by another.

Every change goes through the store's operator API (``NoteRepo``; a promotion through
``DailyLogRepo``), which records it in the trace (``events`` with run 0). Caps are shown as
gauges; clearing asks for confirmation.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen, Screen
from textual.widgets import (
    DataTable,
    Input,
    Label,
    OptionList,
    RadioButton,
    RadioSet,
    Static,
    TextArea,
)
from textual.widgets.option_list import Option

from io_tui.core import (
    SECTION_TITLES,
    LogLine,
    MemoryLimits,
    MemoryNote,
    NoteKind,
    Provenance,
    Recall,
    Scope,
    Section,
    Store,
    check_value,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.screens.confirm import ConfirmScreen
from io_tui.ui.screens.inbox import format_time
from io_tui.ui.screens.memory_consolidate import (
    ChooseNoteScreen,
    FindNote,
    MergeScreen,
    PromoteScreen,
    Promotion,
    checked_note,
    chosen_section_and_kind,
    key_taken,
    note_choices,
    one_line,
)
from io_tui.ui.state import counted
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.gauges import Gauge
from io_tui.ui.widgets.table import Table

# (column, priority, elidable down to): a narrow table drops the least important first
NOTE_COLUMNS = (
    ("scope", 6, None),
    ("key", 6, 12),
    ("type", 5, None),
    ("state", 5, None),
    ("value", 4, 12),
    ("written by", 3, None),
    ("written at", 1, None),
    ("pinned", 5, None),
    ("recalls", 4, None),
    ("last recalled", 0, None),
)


LOG_COLUMNS = (
    ("day", 4, None),
    ("run", 5, None),
    ("field", 6, None),
    ("text", 3, 12),
    ("promoted to", 4, None),
)
# what each tier's bindings are: a notes action is hidden in the log, and the other way round
NOTE_ACTIONS = frozenset(
    {"add", "toggle_pin", "delete", "clear", "verify", "expire", "supersede", "merge"}
)
LOG_ACTIONS = frozenset({"promote"})


def note_key(note: MemoryNote) -> str:
    return f"{note.scope}\x1f{note.workspace}\x1f{note.key}"


def note_state(note: MemoryNote, now: float) -> str:
    """``active``, ``expired`` or ``→ KEY`` (superseded by KEY), for the state column."""
    if note.superseded_by is not None:
        return f"→ {note.superseded_by}"
    return note.state(now)


def provenance_line(note: MemoryNote, now: float) -> str:
    """The highlighted note's provenance, above its value."""
    bits = [note.label, SECTION_TITLES[note.section], f"by {note.origin}"]
    if note.source:
        bits.append(f"source: {note.source}")
    if note.superseded_by is not None:
        bits.append(f"superseded by '{note.superseded_by}', not recalled")
    elif note.expires_at is not None:
        verb = "expires" if note.active(now) else "expired, not recalled:"
        bits.append(f"{verb} {format_time(note.expires_at)}")
    return " · ".join(bits)


class EditValueScreen(ModalScreen[str | None]):
    """Edit one note's value; dismisses with the new value, or None. An empty value is said
    inside the dialog, which stays open (a note needs a value)."""

    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s", "save", "Save", id="memory.edit.save", tooltip="Save the value", priority=True
        ),
        Binding(
            "escape", "cancel", "Cancel", id="memory.edit.cancel", tooltip="Keep the old value"
        ),
    ]

    value_area = query_one("#memory-value", TextArea)
    error = query_one("#edit-error", Static)

    def __init__(self, note: MemoryNote) -> None:
        super().__init__()
        self.note = note

    def compose(self) -> ComposeResult:
        with Vertical(classes="memory-dialog"):
            title = f"Edit {self.note.scope} note '{self.note.key}'"
            yield Static(Content(plain(title)), classes="memory-dialog-title")
            yield TextArea(self.note.value, id="memory-value")
            with Vertical(classes="memory-foot"):
                yield Static("", id="edit-error")
                yield Static("ctrl+s saves · escape cancels", classes="memory-hint")

    def action_save(self) -> None:
        value = self.value_area.text
        try:
            check_value(value)
        except ValueError as exc:
            self.error.update(str(exc))
            self.value_area.focus()
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)


@dataclass(frozen=True, slots=True)
class NewNote:
    scope: Scope
    key: str
    value: str
    section: Section = "project"
    kind: NoteKind = "fact"
    replace: bool = False  # the key held a note and the operator confirmed replacing it


class AddNoteScreen(ModalScreen[NewNote | None]):
    """A new note: key, scope (this workspace or global), section, type (as promote asks) and
    value; a bad key, an empty value or
    a key that already holds a note of the scope (``find``) is said inside the dialog and nothing
    typed is lost; a second ctrl+s on a key that holds one replaces it."""

    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s", "save", "Save", id="memory.add.save", tooltip="Save the note", priority=True
        ),
        Binding("escape", "cancel", "Cancel", id="memory.add.cancel", tooltip="Write nothing"),
    ]

    key_input = query_one("#note-key", Input)
    scope_set = query_one("#note-scope", RadioSet)
    value_area = query_one("#note-value", TextArea)
    error = query_one("#note-error", Static)

    def __init__(self, workspace: str | None, find: FindNote | None = None) -> None:
        super().__init__()
        self.workspace = workspace
        self.find = find
        self.confirming: tuple[Scope, str] | None = None  # the scope and key ctrl+s found taken

    def compose(self) -> ComposeResult:
        with Vertical(classes="memory-dialog", id="add-note"):
            yield Static("New note", classes="memory-dialog-title")
            yield Input(placeholder="key, e.g. test-command", id="note-key")
            with RadioSet(id="note-scope", compact=True):
                yield RadioButton(
                    Content(plain(f"workspace {self.workspace}"))
                    if self.workspace
                    else "workspace (none chosen)",
                    value=self.workspace is not None,
                    disabled=self.workspace is None,
                    id="scope-workspace",
                )
                yield RadioButton(
                    "global (every workspace)", value=self.workspace is None, id="scope-global"
                )
            yield from note_choices("note")
            yield TextArea("", id="note-value")
            yield Static("", id="note-error")
            yield Static("ctrl+s saves (verified) · escape cancels", classes="memory-hint")

    @on(Input.Changed, "#note-key")
    @on(RadioSet.Changed, "#note-scope")
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
        pressed = self.scope_set.pressed_button
        scope: Scope = (
            "workspace" if pressed is not None and pressed.id == "scope-workspace" else "global"
        )
        held = await self.find(scope, key) if self.find is not None else None
        if held is not None and self.confirming != (scope, key):
            self.confirming = (scope, key)  # a second ctrl+s on the same key replaces it
            error.update(key_taken(held))
            self.key_input.focus()
            return
        section, kind = chosen_section_and_kind(self, "note")
        self.dismiss(NewNote(scope, key, value, section, kind, replace=held is not None))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChooseWorkspaceScreen(ModalScreen[str | None]):
    """Pick whose notes the editor shows: a workspace the store knows, or the global notes
    only (""); None: keep the current one."""

    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="memory.switch.cancel", tooltip="Keep this one"),
    ]

    workspace_list = query_one("#workspaces", OptionList)

    def __init__(self, workspaces: list[str], current: str | None) -> None:
        super().__init__()
        self.workspaces = workspaces
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="memory-dialog", id="choose-workspace"):
            yield Static("Show the notes of", classes="memory-dialog-title")
            options = [Option("global notes only", id="")]
            options += [Option(Content(plain(w)), id=w) for w in self.workspaces]
            yield OptionList(*options, id="workspaces")

    def on_mount(self) -> None:
        options = self.workspace_list
        current = self.current or ""
        index = next((i for i, w in enumerate(["", *self.workspaces]) if w == current), 0)
        options.highlighted = index
        options.focus()

    @on(OptionList.OptionSelected)
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id or "")

    def action_cancel(self) -> None:
        self.dismiss(None)


async def known_workspaces(store: Store) -> list[str]:
    """Every workspace the store knows: of its runs and of its workspace notes, sorted."""
    found = {run.workspace for run in await store.runs.all() if run.workspace}
    found |= {n.workspace for n in await store.notes.list() if n.scope == "workspace"}
    return sorted(found)


class MemoryEditorScreen(Screen[None]):
    CSS_PATH = "memory_editor.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter,e",
            "edit",
            "Edit value",
            id="memory.edit",
            tooltip="Edit the highlighted note's value",
        ),
        Binding(
            "enter,o",
            "promote",
            "Promote",
            id="memory.promote",
            tooltip="Make a long-term note of the highlighted log line",
        ),
        Binding("a", "add", "Add note", id="memory.add", tooltip="Write a new note"),
        Binding(
            "l",
            "toggle_log",
            "Log/notes",
            id="memory.log",
            tooltip="Show the workspace's daily log, or the notes again",
        ),
        Binding(
            "v",
            "verify",
            "Verify",
            id="memory.verify",
            tooltip="Mark the note verified (a fact) or confirmed (a preference); again to undo",
        ),
        Binding(
            "m",
            "merge",
            "Merge",
            id="memory.merge",
            tooltip="Merge the note into another, which supersedes it",
        ),
        Binding(
            "s",
            "supersede",
            "Supersede",
            id="memory.supersede",
            tooltip="Mark the note replaced by another (no longer recalled); again to undo",
        ),
        Binding(
            "t",
            "expire",
            "Expire",
            id="memory.expire",
            tooltip="Stop recalling the note from now; again to make it current",
        ),
        Binding(
            "w",
            "switch",
            "Workspace",
            id="memory.switch",
            tooltip="Show another workspace's notes, or only the global ones",
        ),
        Binding(
            "p",
            "toggle_pin",
            "Pin/unpin",
            id="memory.pin",
            tooltip="Pinned notes are never evicted",
        ),
        Binding(
            "x,delete",
            "delete",
            "Delete",
            id="memory.delete",
            tooltip="Delete the highlighted note",
        ),
        Binding(
            "c",
            "clear",
            "Clear scope",
            id="memory.clear",
            tooltip="Delete every unpinned note of this scope",
        ),
        Binding("r", "reload", "Refresh", id="memory.refresh", tooltip="Reload notes"),
        Binding("escape,q", "close", "Back", id="memory.close", tooltip="Back to the runs"),
    ]

    class Loaded(Message):
        """Notes, per-scope usage ``(entries, chars)`` and the workspace's log lines as read
        from the store."""

        def __init__(
            self,
            notes: list[MemoryNote],
            usage: dict[str, tuple[int, int]],
            log: list[LogLine],
        ) -> None:
            super().__init__()
            self.notes = notes
            self.usage = usage
            self.log = log

    class RecallsLoaded(Message):
        """Which requests carried ``note`` (None: no note highlighted)."""

        def __init__(self, note: MemoryNote | None, recalls: list[Recall]) -> None:
            super().__init__()
            self.note = note
            self.recalls = recalls

    memory_table = query_one("#memory-table", Table)
    log_table = query_one("#memory-log", Table)
    memory_title = query_one("#memory-title", Static)
    workspace_gauges = query_one("#gauges-workspace", Horizontal)
    value_view = query_one("#memory-value-view", Static)
    recalls_table = query_one("#memory-recalls", Table)

    def __init__(
        self, store: Store, workspace: str | None, limits: MemoryLimits | None = None
    ) -> None:
        super().__init__()
        self.store = store
        self.workspace = workspace
        self.limits = limits or MemoryLimits()
        self.notes: list[MemoryNote] = []
        self.log_lines: list[LogLine] = []
        self.showing_log = False

    def compose(self) -> ComposeResult:
        yield Static(id="memory-title")
        for scope in ("workspace", "global"):
            with Horizontal(classes="memory-gauges", id=f"gauges-{scope}"):
                yield Gauge(scope, unit="notes", id=f"gauge-{scope}-entries")
                yield Gauge("chars", unit="chars", id=f"gauge-{scope}-chars")
        yield Table(id="memory-table", cursor_type="row", zebra_stripes=True)
        yield Table(id="memory-log", cursor_type="row", zebra_stripes=True)
        yield Static("", id="memory-value-view")
        yield Label("Recalled by:", id="memory-recalls-label")
        yield Table(id="memory-recalls", cursor_type="row")
        yield ScreenFooter()

    def scopes(self) -> list[Scope]:
        return ["workspace", "global"] if self.workspace else ["global"]

    def _show_where(self) -> None:
        title = f"Memory — {self.workspace} + global" if self.workspace else "Memory — global"
        if self.showing_log:
            title = f"Daily log — {self.workspace or 'no workspace chosen'}"
        hint = "  l: notes" if self.showing_log else "  l: log · w: switch"
        self.memory_title.update(Content.assemble(plain(title), (hint, "dim")))
        self.workspace_gauges.display = self.workspace is not None and not self.showing_log

    def on_mount(self) -> None:
        table = self.memory_table
        for label, priority, shrink_to in NOTE_COLUMNS:
            table.add_column(label, key=label, priority=priority, shrink_to=shrink_to)
        for label, priority, shrink_to in LOG_COLUMNS:
            self.log_table.add_column(label, key=label, priority=priority, shrink_to=shrink_to)
        recalls = self.recalls_table
        for label in ("run", "step", "at"):  # `io-tui trace RUN --context STEP` shows it
            recalls.add_column(label, key=label)
        self._show_where()
        self.load()

    @work(group="memory", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        notes: list[MemoryNote] = []
        usage: dict[str, tuple[int, int]] = {}
        for scope in self.scopes():
            notes += await self.store.notes.list(scope, self.workspace)
            usage[scope] = await self.store.notes.usage(scope, self.workspace)
        log = await self.store.daily_log.lines(self.workspace) if self.workspace else []
        self.post_message(self.Loaded(notes, usage, log))

    @on_answer(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        for scope, (entries, chars) in message.usage.items():
            self.query_one(f"#gauge-{scope}-entries", Gauge).update(
                entries, self.limits.max_entries
            )
            self.query_one(f"#gauge-{scope}-chars", Gauge).update(chars, self.limits.max_chars)
        self.notes = message.notes
        self.log_lines = message.log
        self._apply()
        self._apply_log()
        self.refresh_bindings()  # edit / pin / delete apply to a highlighted note

    def _apply(self) -> None:
        table = self.memory_table
        wanted = {note_key(n): n for n in self.notes}
        for gone in [k for k in table.rows if k.value not in wanted]:
            table.remove_row(gone)
        have = {k.value for k in table.rows}
        now = time.time()
        for key, note in wanted.items():
            cells = {
                "scope": note.scope,
                "key": note.key,
                "type": note.label,
                "state": note_state(note, now),
                "value": one_line(note.value),
                "written by": note.origin,
                "written at": format_time(note.written_at),
                "pinned": "📌" if note.pinned else "",
                "recalls": str(note.recalls),
                "last recalled": format_time(note.last_recalled),
            }
            if key in have:
                for column, value in cells.items():
                    table.update_cell(key, column, value)
            else:
                table.add_row(*cells.values(), key=key)
        self._show_selected()

    def _apply_log(self) -> None:
        table = self.log_table
        wanted = {str(line.id): line for line in self.log_lines}
        for gone in [k for k in table.rows if k.value not in wanted]:
            table.remove_row(gone)
        have = {k.value for k in table.rows}
        for key, line in wanted.items():
            cells = {
                "day": line.day,
                "run": str(line.run_id) if line.run_id is not None else "-",
                "field": line.field,
                "text": one_line(line.text),
                "promoted to": line.promoted or "",
            }
            if key in have:
                for column, value in cells.items():
                    table.update_cell(key, column, value)
            else:
                table.add_row(*cells.values(), key=key)
        if self.showing_log:
            self._show_selected()

    @on(DataTable.RowSelected, "#memory-log")
    def _line_chosen(self) -> None:
        """enter on a log line (the table takes the key itself): promote it."""
        self.action_promote()

    def selected_line(self) -> LogLine | None:
        table = self.log_table
        if table.row_count == 0:
            return None
        key = table.ordered_rows[min(table.cursor_row, table.row_count - 1)].key.value
        return next((line for line in self.log_lines if str(line.id) == key), None)

    def selected(self) -> MemoryNote | None:
        table = self.memory_table
        if table.row_count == 0:
            return None
        key = table.ordered_rows[min(table.cursor_row, table.row_count - 1)].key.value
        return next((n for n in self.notes if note_key(n) == key), None)

    @on(DataTable.RowHighlighted, "#memory-table")
    @on(DataTable.RowHighlighted, "#memory-log")
    def _highlighted(self) -> None:
        self._show_selected()

    def _show_selected(self) -> None:
        view = self.value_view
        if self.showing_log:
            line = self.selected_line()
            if line is None:
                view.update(Content("no log lines yet: each run appends its own at its end"))
                return
            head = f"{line.reference} · {line.field}"
            if line.promoted:
                head += f" · promoted to '{line.promoted}'"
            view.update(Content.assemble((head, "dim"), "\n", plain(line.text)))
            return
        note = self.selected()
        if note is None:
            view.update(Content())
        else:  # the agent's text, under its provenance
            head = provenance_line(note, time.time())
            view.update(Content.assemble((plain(head), "dim"), "\n", plain(note.value)))
        self.load_recalls(note)

    @work(group="memory-recalls", exclusive=True, exit_on_error=False)
    async def load_recalls(self, note: MemoryNote | None) -> None:
        recalls = (
            []
            if note is None
            else await self.store.recalls.of_note(note.key, note.scope, note.workspace)
        )
        self.post_message(self.RecallsLoaded(note, recalls))

    @on_answer(RecallsLoaded)
    def _on_recalls_loaded(self, message: RecallsLoaded) -> None:
        table = self.recalls_table
        table.clear()
        for recall in message.recalls:
            table.add_row(
                str(recall.run_id),
                str(recall.step),
                format_time(recall.at),
            )

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "edit" or action in NOTE_ACTIONS:
            if self.showing_log:
                return False
            needs_note = action not in ("add", "clear")
            if needs_note and self.is_mounted and self.selected() is None:
                return None
        if action in LOG_ACTIONS:
            if not self.showing_log:
                return False
            if self.is_mounted and self.selected_line() is None:
                return None
        return True

    def action_toggle_log(self) -> None:
        self.showing_log = not self.showing_log
        self.set_class(self.showing_log, "-log")
        (self.log_table if self.showing_log else self.memory_table).focus()
        self._show_where()
        self._show_selected()
        self.refresh_bindings()

    def action_reload(self) -> None:
        self.load()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_edit(self) -> None:
        note = self.selected()
        if note is None:
            return

        def edited(value: str | None) -> None:
            if value is not None and value != note.value:
                self._change(self._set(note, value))

        self.app.push_screen(EditValueScreen(note), edited)

    async def _set(self, note: MemoryNote, value: str) -> str:
        """A new text for ``note``: what it says about itself (section, type, status, source,
        expiry) stays; verifying or expiring it is an action of its own."""
        try:
            result = await self.store.notes.set(
                note.key, value, note.scope, self._where(note), self.limits, Provenance.of(note)
            )
        except ValueError as exc:
            return f"not saved: {exc}"
        return f"saved '{note.key}'" if result.written else f"not saved: {result.status}"

    def action_add(self) -> None:
        def added(note: NewNote | None) -> None:
            if note is not None:
                self._change(self._add(note))

        self.app.push_screen(AddNoteScreen(self.workspace, self._find), added)

    async def _find(self, scope: Scope, key: str) -> MemoryNote | None:
        """The note ``key`` holds in ``scope`` (of the workspace shown), for the add and promote
        dialogs to say before they replace it."""
        if scope == "workspace" and self.workspace is None:
            return None
        return await self.store.notes.get(key, scope, self.workspace)

    async def _add(self, note: NewNote) -> str:
        where = self.workspace if note.scope == "workspace" else None
        try:
            result = await self.store.notes.set(
                note.key,
                note.value,
                note.scope,
                where,
                self.limits,
                Provenance(section=note.section, kind=note.kind, status="verified"),
                replace_existing=note.replace,
            )
        except ValueError as exc:
            return f"not saved: {exc}"
        if result.status == "exists":  # written since the dialog looked
            return f"not added: '{note.key}' was written meanwhile; add it again to replace it"
        if not result.written:
            return f"not saved: {result.status}"
        verb = "replaced" if result.replaced is not None else "added"
        return f"{verb} {note.scope} note '{result.note.key}'"

    @work(group="memory", exclusive=True, exit_on_error=False)
    async def action_switch(self) -> None:
        known = await known_workspaces(self.store)
        choice = await self.app.push_screen_wait(ChooseWorkspaceScreen(known, self.workspace))
        if choice is None:
            return
        self.workspace = choice or None
        self.memory_table.clear()  # other notes: rows in scope order
        self._show_where()
        self.load()

    def action_toggle_pin(self) -> None:
        note = self.selected()
        if note is not None:
            self._change(self._pin(note))

    async def _pin(self, note: MemoryNote) -> str:
        if note.pinned:
            await self.store.notes.unpin(note.key, note.scope, self._where(note))
            return f"unpinned '{note.key}'"
        await self.store.notes.pin(note.key, note.scope, self._where(note))
        return f"pinned '{note.key}'"

    def action_delete(self) -> None:
        note = self.selected()
        if note is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._change(self._delete(note))

        question = f"Delete {note.scope} note '{note.key}'?"
        superseded = [
            n.key
            for n in self.notes
            if n.superseded_by == note.key
            and (n.scope, n.workspace) == (note.scope, note.workspace)
        ]
        if superseded:
            keys = ", ".join(f"'{k}'" for k in superseded)
            they = "it becomes" if len(superseded) == 1 else "they become"
            question += f" It supersedes {keys}: {they} current again (recalled)."
        self.app.push_screen(ConfirmScreen(question), answered)

    async def _delete(self, note: MemoryNote) -> str:
        result = await self.store.notes.forget(
            key=note.key, scope=note.scope, workspace=self._where(note), operator=True
        )
        if result.status != "forgotten":
            return f"'{note.key}' is gone"
        said = f"deleted '{note.key}'"
        if result.revived:
            keys = ", ".join(f"'{n.key}'" for n in result.revived)
            said += f"; {keys} {'is' if len(result.revived) == 1 else 'are'} current again"
        return said

    def action_clear(self) -> None:
        note = self.selected()
        scope: Scope = note.scope if note else self.scopes()[0]

        def answered(yes: bool | None) -> None:
            if yes:
                self._change(self._clear(scope))

        where = "global" if scope == "global" else "this workspace's"
        self.app.push_screen(
            ConfirmScreen(f"Clear every unpinned {where} note? Pinned notes stay."), answered
        )

    async def _clear(self, scope: Scope) -> str:
        count = await self.store.notes.clear(
            scope, self.workspace if scope == "workspace" else None
        )
        return f"cleared {counted(count, f'{scope} note')}"

    # -- consolidation --------------------------------------------------------------------------

    def action_verify(self) -> None:
        note = self.selected()
        if note is not None:
            self._change(self._verify(note))

    async def _verify(self, note: MemoryNote) -> str:
        verified = note.status != "verified"
        done = await self.store.notes.verify(
            note.key, note.scope, self._where(note), verified=verified
        )
        return f"'{note.key}' is now {done.a_label}" if done else f"'{note.key}' is gone"

    def action_expire(self) -> None:
        note = self.selected()
        if note is not None:
            self._change(self._expire(note))

    async def _expire(self, note: MemoryNote) -> str:
        now = time.time()
        at = None if note.expires_at is not None and note.expires_at <= now else now
        await self.store.notes.expire(note.key, note.scope, self._where(note), at)
        return f"expired '{note.key}': no longer recalled" if at else f"'{note.key}' is current"

    def _others(self, note: MemoryNote) -> list[MemoryNote]:
        """The notes of the same scope that could supersede or absorb ``note``."""
        return [
            n
            for n in self.notes
            if n.scope == note.scope
            and n.workspace == note.workspace
            and n.key != note.key
            and n.superseded_by is None
        ]

    def action_supersede(self) -> None:
        note = self.selected()
        if note is None:
            return
        if note.superseded_by is not None:
            self._change(self._supersede(note, None))
            return
        others = self._others(note)
        if not others:
            self.notify(f"no other {note.scope} note to supersede it with", title="Memory")
            return

        def chosen(by: str | None) -> None:
            if by is not None:
                self._change(self._supersede(note, by))

        title = f"Which note supersedes '{note.key}'?"
        self.app.push_screen(ChooseNoteScreen(title, others), chosen)

    async def _supersede(self, note: MemoryNote, by: str | None) -> str:
        try:
            await self.store.notes.supersede(note.key, by, note.scope, self._where(note))
        except ValueError as exc:
            return f"not superseded: {exc}"
        return f"'{note.key}' superseded by '{by}'" if by else f"'{note.key}' is current again"

    def action_merge(self) -> None:
        note = self.selected()
        if note is None:
            return
        others = self._others(note)
        if not others:
            self.notify(f"no other {note.scope} note to merge it into", title="Memory")
            return

        def chosen(into_key: str | None) -> None:
            into = next((n for n in others if n.key == into_key), None)
            if into is None:
                return

            def merged(value: str | None) -> None:
                if value is not None:
                    self._change(self._merge(note, into, value))

            self.app.push_screen(MergeScreen(note, into), merged)

        self.app.push_screen(
            ChooseNoteScreen(f"Merge '{note.key}' into which note?", others), chosen
        )

    async def _merge(self, note: MemoryNote, into: MemoryNote, value: str) -> str:
        try:
            result = await self.store.notes.merge(
                note.key, into.key, value, note.scope, self._where(note), self.limits
            )
        except ValueError as exc:
            return f"not merged: {exc}"
        if not result.written:
            return f"not merged: {result.status}"
        return f"merged '{note.key}' into '{into.key}'"

    def action_promote(self) -> None:
        line = self.selected_line()
        if line is None or self.workspace is None:
            return

        def chosen(promotion: Promotion | None) -> None:
            if promotion is not None:
                self._change(self._promote(line, promotion))

        self.app.push_screen(PromoteScreen(line, self._find), chosen)

    async def _promote(self, line: LogLine, promotion: Promotion) -> str:
        provenance = Provenance(section=promotion.section, kind=promotion.kind, status="verified")
        try:
            result = await self.store.daily_log.promote(
                line.id,
                promotion.key,
                "workspace",
                self.workspace,
                provenance,
                promotion.value,
                self.limits,
                replace_existing=promotion.replace,
            )
        except ValueError as exc:
            return f"not promoted: {exc}"
        if result.status == "exists":  # written since the dialog looked
            return f"not promoted: '{promotion.key}' was written meanwhile; promote it again"
        if not result.written:
            return f"not promoted: {result.status}"
        verb = "replaced" if result.replaced is not None else "promoted to"
        return f"{verb} '{result.note.key}' ({SECTION_TITLES[result.note.section]})"

    def _where(self, note: MemoryNote) -> str | None:
        return note.workspace or None

    @work(group="memory", exit_on_error=False)
    async def _change(self, change: Awaitable[str]) -> None:
        self.notify(await change, title="Memory")
        self.load()

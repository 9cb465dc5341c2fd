"""The approval inbox: every pending request across all runs, oldest first (DESIGN §3.4, §5).

Below the list, a preview of the highlighted request: its diff for a write, argv and cwd for an
exec, the arguments for an MCP tool, and why a reviewer model escalated it if one did.
``enter`` opens the full approval modal for it; ``1``–``4`` decide it directly (letters
``y e a n`` with ``[ui] letter_shortcuts``), rewrite, remember and deny opening their editors
first. Deciding resumes the run exactly as the modal of a live ask
does — a live run in this process through its Future (a defer there pauses it), a paused one
(also from an earlier session) through the app's run host, in a ``runs`` worker.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import ClassVar, Protocol

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.coordinate import Coordinate
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from io_tui.core import (
    ApprovalRecord,
    ApprovalRequest,
    Decision,
    DecisionKind,
    Store,
    is_elicitation,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.request_view import is_file_write, read_current, request_body
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table

ACTIONS = {"approve", "rewrite", "remember", "deny", "defer"}


class Desk(Protocol):
    """What the inbox uses of the app's approval desk (``approver.ApprovalDesk``)."""

    @property
    def live(self) -> dict[int, asyncio.Future[Decision]]:
        """The asks a live run is waiting on now, by approval id."""
        ...

    @property
    def clock(self) -> Callable[[], float]: ...

    @property
    def arm_s(self) -> float:
        """How long an approval modal takes no decision key (``[ui] approval_arm_ms``)."""
        ...

    async def decide_pending(self, approval_id: int, decision: Decision) -> str: ...


def format_time(at: float | None) -> str:
    if not at:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


def short_time(at: float | None) -> str:
    return time.strftime("%m-%d %H:%M", time.localtime(at)) if at else ""


# (label, key, width); the target takes what the screen's width leaves (at least MIN_TARGET).
COLUMNS = (
    ("#", "id", 3),
    ("run", "run", 3),
    ("step", "step", 4),
    ("act", "act", 5),
    ("target", "target", 0),
    ("asked by", "rule", 16),
    ("asked at", "at", 11),
)
MIN_TARGET = 16
CELL_PADDING = 2  # DataTable pads each cell by one on either side


class InboxScreen(Screen[None]):
    CSS_PATH = "inbox.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="inbox.open", tooltip="Show the request in full"),
        Binding(
            "1",
            "decide('approve')",
            "Approve",
            id="inbox.approve",
            tooltip="Approve it and resume its run",
        ),
        Binding(
            "2",
            "decide('rewrite')",
            "Rewrite",
            id="inbox.rewrite",
            tooltip="Edit the action, then perform the edit",
        ),
        Binding(
            "3",
            "decide('remember')",
            "Remember",
            id="inbox.remember",
            tooltip="Approve and save a rule",
        ),
        Binding(
            "4",
            "decide('deny')",
            "Deny",
            id="inbox.deny",
            tooltip="Refuse, with an optional reason",
        ),
        Binding("5", "next", "Defer", id="inbox.defer", tooltip="Leave it pending; go to the next"),
        Binding(
            "r",
            "reload",
            "Refresh",
            id="inbox.refresh",
            tooltip="Reload pending requests",
            show=False,
        ),
        Binding("escape,q", "close", "Back", id="inbox.close", tooltip="Back to the runs"),
    ]

    class Loaded(Message):
        """The pending requests as read from the store (posted by the load worker)."""

        def __init__(self, records: list[ApprovalRecord]) -> None:
            super().__init__()
            self.records = records

    class CurrentLoaded(Message):
        """The file a previewed write would change, as it is now (read in a worker)."""

        def __init__(self, approval_id: int, current: str | None) -> None:
            super().__init__()
            self.approval_id = approval_id
            self.current = current

    inbox_title = query_one("#inbox-title", Static)
    inbox_table = query_one("#inbox-table", DataTable)
    inbox_detail = query_one("#inbox-detail", Static)
    inbox_preview = query_one("#inbox-preview", Vertical)

    def __init__(self, store: Store, desk: Desk, *, poll_interval: float | None = 2.0) -> None:
        super().__init__()
        self.store = store
        self.desk = desk
        self.poll_interval = poll_interval
        self.records: list[ApprovalRecord] = []
        self.deciding: set[int] = set()
        self.previewed: int | None = None  # the approval id the preview shows
        self._placed = False  # the cursor has been put on a live ask once

    def compose(self) -> ComposeResult:
        yield Static("Inbox", id="inbox-title")
        yield Table(id="inbox-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="inbox-detail")
        yield Vertical(id="inbox-preview")
        yield ScreenFooter()

    def on_mount(self) -> None:
        table = self.inbox_table
        # Fixed widths: columns that never jump as requests come and go (and render the same
        # however the rows arrive); the target's follows the screen's width.
        for label, key, width in COLUMNS:
            table.add_column(label, key=key, width=width or MIN_TARGET)
        self._fit_columns(self.app.size.width)
        self.load()
        if self.poll_interval:
            self.set_interval(self.poll_interval, self.load)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_columns(event.size.width)

    def _fit_columns(self, width: int) -> None:
        table = self.inbox_table
        fixed = sum(w for _, _, w in COLUMNS) + CELL_PADDING * len(COLUMNS) + 1
        column = table.columns.get("target")  # type: ignore[call-overload]
        if column is not None:
            column.width = max(MIN_TARGET, width - fixed)
            table.refresh(layout=True)

    @work(group="inbox", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.post_message(self.Loaded(await self.store.approvals.pending()))

    @on_answer(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        self._apply([r for r in message.records if r.request.id not in self.deciding])
        self.refresh_bindings()  # the decision keys apply once a request is highlighted

    def action_reload(self) -> None:
        self.load()

    def _apply(self, records: list[ApprovalRecord]) -> None:
        """Update the table by key (no clear): the cursor stays on its request."""
        table = self.inbox_table
        self.records = records
        wanted = {str(r.request.id) for r in records}
        for key in [k for k in table.rows if k.value not in wanted]:
            table.remove_row(key)
        have = {k.value for k in table.rows}
        for record in records:
            req = record.request
            if str(req.id) in have:
                continue
            table.add_row(
                str(req.id),
                str(req.run_id),
                str(req.step),
                req.act.value,
                req.target,
                req.rule,
                short_time(req.created_at),
                key=str(req.id),
            )
        self._place_cursor()
        self._show_position()

    def _place_cursor(self) -> None:
        """Once: on the oldest request a live run is waiting on right now (the ask whose banner
        sent the operator here), else the oldest."""
        if self._placed or not self.records:
            return
        self._placed = True
        live = self.desk.live
        table = self.inbox_table
        for index, record in enumerate(self.records):
            if record.request.id in live:
                table.move_cursor(row=index)
                return

    def selected(self) -> ApprovalRecord | None:
        table = self.inbox_table
        if not self.records or table.row_count == 0:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        return next((r for r in self.records if str(r.request.id) == key), None)

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._show_position()

    @on(DataTable.RowSelected)
    def _selected(self, event: DataTable.RowSelected) -> None:
        """enter (or a click) on a row: the DataTable takes the key, so open from here."""
        event.stop()
        self.action_open()

    def _show_position(self) -> None:
        title = self.inbox_title
        detail = self.inbox_detail
        table = self.inbox_table
        total = table.row_count
        if not total:
            title.update("Inbox — nothing waiting for a decision")
            detail.update("")
            self._preview(None)
            return
        row = min(max(table.cursor_row, 0), total - 1) + 1
        title.update(f"Inbox — {row} of {total} pending, oldest first · enter opens it")
        record = self.selected()
        if record is not None:
            req = record.request
            live = " · waiting now" if req.id in self.desk.live else ""
            line = f"run {req.run_id} step {req.step}: {req.tool} — {req.summary()}{live}"
            if record.reviews:  # why a reviewer model left it to a person
                line += "\n" + record.reviews[-1].describe()
            detail.update(Content(plain(line)))  # not markup: a command may hold "[/]"
        self._preview(record.request if record is not None else None)

    # -- the preview of the highlighted request --

    def _preview(self, request: ApprovalRequest | None) -> None:
        approval_id = request.id if request is not None else None
        if approval_id == self.previewed:
            return
        self.previewed = approval_id
        if request is not None and is_file_write(request):
            self._load_current(request)  # the diff needs the file as it is now
        else:
            self._show_preview(request, None)

    @work(group="inbox-preview", exclusive=True, exit_on_error=False)
    async def _load_current(self, request: ApprovalRequest) -> None:
        current = await asyncio.to_thread(read_current, request)
        self.post_message(self.CurrentLoaded(request.id, current))

    @on_answer(CurrentLoaded)
    def _on_current_loaded(self, message: CurrentLoaded) -> None:
        record = next((r for r in self.records if r.request.id == message.approval_id), None)
        if record is not None and message.approval_id == self.previewed:
            self._show_preview(record.request, message.current)

    def _show_preview(self, request: ApprovalRequest | None, current: str | None) -> None:
        pane = self.inbox_preview
        with self.app.batch_update():
            pane.remove_children()
            if request is not None:
                pane.mount_all(list(request_body(request, current)))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "decide", "next") and not self.records:
            return None
        return True

    def action_close(self) -> None:
        self.dismiss(None)

    def action_next(self) -> None:
        table = self.inbox_table
        if table.row_count:
            table.move_cursor(row=(table.cursor_row + 1) % table.row_count)

    def action_open(self) -> None:
        self._open(None)

    def action_decide(self, action: str) -> None:
        if action == "approve":
            record = self.selected()
            if record is not None and is_elicitation(record.request):
                self._open("approve")  # its form opens over the request
            elif record is not None:
                self.decide(record, Decision.approve())
            return
        self._open(action if action in ACTIONS else None)

    def _open(self, initial_action: str | None) -> None:
        record = self.selected()
        if record is None:
            return
        table = self.inbox_table
        position = f"{table.cursor_row + 1} of {table.row_count}"
        self._open_modal(record, position, initial_action)

    @work(group="inbox-open", exclusive=True, exit_on_error=False)
    async def _open_modal(
        self, record: ApprovalRecord, position: str, initial_action: str | None
    ) -> None:
        """The request's modal, its goal line and the file its diff is against read first."""
        screen = await ApprovalScreen.prepared(
            record.request,
            store=self.store,
            position=position,
            initial_action=initial_action,
            arm_s=self.desk.arm_s,
            clock=self.desk.clock,
        )
        if not self.is_current:  # the operator left the inbox meanwhile
            return

        def decided(decision: Decision | None) -> None:
            if decision is None:
                return
            live = record.request.id in self.desk.live
            if decision.kind is not DecisionKind.DEFER or live:  # a live run's defer pauses it
                self.decide(record, decision)

        self.app.push_screen(screen, decided)

    def decide(self, record: ApprovalRecord, decision: Decision) -> None:
        """Record the decision and resume the run in an app-level ``runs`` worker (it outlives
        this screen); the row leaves the inbox at once."""
        approval_id = record.request.id
        self.deciding.add(approval_id)
        self._apply([r for r in self.records if r.request.id != approval_id])
        self.app.run_worker(
            self._decide(approval_id, decision),
            name=f"decide-{approval_id}",
            group="runs",
            exit_on_error=False,
        )

    async def _decide(self, approval_id: int, decision: Decision) -> None:
        try:
            line = await self.desk.decide_pending(approval_id, decision)
        finally:
            self.deciding.discard(approval_id)
        self.app.notify(line, title="Inbox")
        if self.is_attached:
            self.load()

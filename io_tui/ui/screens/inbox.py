"""The approval inbox: every pending request across all runs, oldest first (DESIGN §3.4, §5).

Deciding here resumes the run — a live run in this process through its Future, a paused one
(also from an earlier session) through core ``decide()`` in a ``runs`` worker. ``enter`` opens the
full approval modal; ``1``–``5`` (``y e a n d``) decide the highlighted request directly, with
rewrite, remember and deny opening their editors first.
"""

from __future__ import annotations

import time
from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.coordinate import Coordinate
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from io_tui.core.approvals import Decision, DecisionKind
from io_tui.core.store import ApprovalRecord, Store
from io_tui.ui.approver import ApprovalDesk
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.table import Table

ACTIONS = {"approve", "rewrite", "remember", "deny", "defer"}


def format_time(at: float | None) -> str:
    if not at:
        return ""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


COLUMNS = (
    ("#", "id", 4),
    ("run", "run", 4),
    ("step", "step", 4),
    ("act", "act", 5),
    ("target", "target", 32),
    ("asked by", "rule", 28),
    ("asked at", "at", 16),
)


class InboxScreen(Screen[None]):
    CSS_PATH = "inbox.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", id="inbox.open", tooltip="Show the request in full"),
        Binding(
            "1,y",
            "decide('approve')",
            "Approve",
            id="inbox.approve",
            tooltip="Approve it and resume its run",
        ),
        Binding(
            "2,e",
            "decide('rewrite')",
            "Rewrite",
            id="inbox.rewrite",
            tooltip="Edit the action, then perform the edit",
        ),
        Binding(
            "3,a",
            "decide('remember')",
            "Remember",
            id="inbox.remember",
            tooltip="Approve and save a rule",
        ),
        Binding(
            "4,n",
            "decide('deny')",
            "Deny",
            id="inbox.deny",
            tooltip="Refuse, with an optional reason",
        ),
        Binding(
            "5,d", "next", "Later", id="inbox.defer", tooltip="Leave it pending; go to the next"
        ),
        Binding("r", "reload", "Refresh", id="inbox.refresh", tooltip="Reload pending requests"),
        Binding("escape,q", "close", "Back", id="inbox.close", tooltip="Back to the runs"),
    ]

    class Loaded(Message):
        """The pending requests as read from the store (posted by the load worker)."""

        def __init__(self, records: list[ApprovalRecord]) -> None:
            super().__init__()
            self.records = records

    def __init__(self, store: Store, *, poll_interval: float | None = 2.0) -> None:
        super().__init__()
        self.store = store
        self.poll_interval = poll_interval
        self.records: list[ApprovalRecord] = []
        self.deciding: set[int] = set()

    def compose(self) -> ComposeResult:
        yield Static("Inbox", id="inbox-title")
        yield Table(id="inbox-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="inbox-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#inbox-table", DataTable)
        # Fixed widths: columns that never jump as requests come and go (and render the same
        # however the rows arrive).
        for label, key, width in COLUMNS:
            table.add_column(label, key=key, width=width)
        self.load()
        if self.poll_interval:
            self.set_interval(self.poll_interval, self.load)

    @work(group="inbox", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.post_message(self.Loaded(await self.store.approvals.pending()))

    @on(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        self._apply([r for r in message.records if r.request.id not in self.deciding])
        self.refresh_bindings()  # the decision keys apply once a request is highlighted

    def action_reload(self) -> None:
        self.load()

    def _apply(self, records: list[ApprovalRecord]) -> None:
        """Update the table by key (no clear): the cursor stays on its request."""
        table = self.query_one("#inbox-table", DataTable)
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
                f"{req.rule} ({req.layer})",
                format_time(req.created_at),
                key=str(req.id),
            )
        self._show_position()

    def selected(self) -> ApprovalRecord | None:
        table = self.query_one("#inbox-table", DataTable)
        if not self.records or table.row_count == 0:
            return None
        row = min(max(table.cursor_row, 0), table.row_count - 1)
        key = table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value
        return next((r for r in self.records if str(r.request.id) == key), None)

    @on(DataTable.RowHighlighted)
    def _highlighted(self) -> None:
        self._show_position()

    def _show_position(self) -> None:
        title = self.query_one("#inbox-title", Static)
        detail = self.query_one("#inbox-detail", Static)
        table = self.query_one("#inbox-table", DataTable)
        total = table.row_count
        if not total:
            title.update("Inbox — nothing waiting for a decision")
            detail.update("")
            return
        row = min(max(table.cursor_row, 0), total - 1) + 1
        title.update(f"Inbox — {row} of {total} pending, oldest first")
        record = self.selected()
        if record is not None:
            req = record.request
            line = f"run {req.run_id} step {req.step}: {req.tool} — {req.summary()}"
            detail.update(Content(plain(line)))  # not markup: a command may hold "[/]"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("open", "decide", "next") and not self.records:
            return None
        return True

    def action_close(self) -> None:
        self.dismiss(None)

    def action_next(self) -> None:
        table = self.query_one("#inbox-table", DataTable)
        if table.row_count:
            table.move_cursor(row=(table.cursor_row + 1) % table.row_count)

    def action_open(self) -> None:
        self._open(None)

    def action_decide(self, action: str) -> None:
        if action == "approve":
            record = self.selected()
            if record is not None:
                self.decide(record, Decision.approve())
            return
        self._open(action if action in ACTIONS else None)

    def _open(self, initial_action: str | None) -> None:
        record = self.selected()
        if record is None:
            return
        table = self.query_one("#inbox-table", DataTable)
        position = f"{table.cursor_row + 1} of {table.row_count}"

        def decided(decision: Decision | None) -> None:
            if decision is not None and decision.kind is not DecisionKind.DEFER:
                self.decide(record, decision)

        self.app.push_screen(
            ApprovalScreen(
                record.request,
                store=self.store,
                position=position,
                initial_action=initial_action,
            ),
            decided,
        )

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
        desk = ApprovalDesk.of(self.app)
        try:
            line = await desk.decide_pending(approval_id, decision)
        finally:
            self.deciding.discard(approval_id)
        self.app.notify(line, title="Inbox")
        if self.is_attached:
            self.load()

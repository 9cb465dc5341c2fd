"""Audit: every approval decision — when, which rule asked, what a reviewer model said, who
decided, proposed and performed — with the approval rate and the median time to decide (as
``io-tui approvals --history`` prints)."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from io_tui.core import ApprovalRecord, Store, audit_row, audit_stats
from io_tui.ui.answers import on_answer
from io_tui.ui.screens.inbox import format_time
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table

# (column, priority, elidable down to): a narrow table drops the least important first
COLUMNS = (
    ("#", 8, None),
    ("run", 6, None),
    ("step", 3, None),
    ("asked", 1, None),
    ("decided", 2, None),
    ("act", 5, None),
    ("target", 7, 10),
    ("asked by", 1, 10),
    ("reviewer", 4, 8),
    ("decision", 9, 10),
    ("by", 3, 6),
    ("proposed", 0, 10),
    ("performed", 2, 8),
)


class AuditScreen(Screen[None]):
    CSS_PATH = "audit.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Refresh", id="audit.refresh", tooltip="Reload the history"),
        Binding("escape,q", "close", "Back", id="audit.close", tooltip="Back to the runs"),
    ]

    class Loaded(Message):
        """Every decided request, as read from the store (posted by the load worker)."""

        def __init__(self, records: list[ApprovalRecord]) -> None:
            super().__init__()
            self.records = records

    stats_line = query_one("#audit-stats", Static)
    audit_table = query_one("#audit-table", Table)
    detail_line = query_one("#audit-detail", Static)

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.details: dict[str, list[str]] = {}  # request id → its reviews, a line each

    def compose(self) -> ComposeResult:
        yield Static("Audit", id="audit-stats")
        yield Table(id="audit-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="audit-detail")
        yield ScreenFooter()

    def on_mount(self) -> None:
        table = self.audit_table
        for label, priority, shrink_to in COLUMNS:
            table.add_column(label, key=label, priority=priority, shrink_to=shrink_to)
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(group="audit", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.post_message(self.Loaded(await self.store.approvals.history()))

    @on_answer(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        records = message.records
        self.stats_line.update(audit_stats(records).summary())
        table = self.audit_table
        have = {k.value for k in table.rows}
        for record in records:
            row = audit_row(record)
            decision = row.decision + (f": {row.reason}" if row.reason else "")
            cells = (
                str(row.id),
                str(row.run_id),
                str(row.step),
                format_time(row.asked_at),
                format_time(row.decided_at),
                row.act,
                row.target,
                f"{row.rule} ({row.layer})",
                row.review or "—",
                decision,
                row.decided_by or "—",
                row.proposed,
                row.performed,
            )
            self.details[str(row.id)] = [review.describe() for review in row.reviews]
            if str(row.id) in have:
                for column, value in zip(
                    ("decided", "reviewer", "decision", "by", "performed"),
                    (cells[4], cells[8], cells[9], cells[10], cells[12]),
                    strict=True,
                ):
                    table.update_cell(str(row.id), column, value)
            else:
                table.add_row(*cells, key=str(row.id))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = self.audit_table.row_cells(event.row_key)
        reviews = self.details.get(str(event.row_key.value), [])
        detail = "\n".join(
            (
                f"#{row['#']} {row['act']} {row['target']} — asked by {row['asked by']}: "
                f"{row['decision']} (by {row['by']})",
                *reviews,
                f"proposed: {row['proposed']}",
                f"performed: {row['performed']}",
            )
        )
        self.detail_line.update(Content(detail))  # text, not markup

    def action_close(self) -> None:
        self.dismiss(None)

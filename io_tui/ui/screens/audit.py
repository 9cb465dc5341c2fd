"""Audit: every approval decision — when, which rule asked, proposed and performed — with the
approval rate and the median time to decide (as ``io-tui approvals --history`` prints)."""

from __future__ import annotations

from typing import ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from io_tui.core.rule_preview import audit_row, audit_stats
from io_tui.core.store import ApprovalRecord, Store
from io_tui.ui.screens.inbox import format_time
from io_tui.ui.widgets.table import Table


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

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store

    def compose(self) -> ComposeResult:
        yield Static("Audit", id="audit-stats")
        yield Table(id="audit-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="audit-detail")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#audit-table", DataTable)
        for label in (
            "#",
            "run",
            "step",
            "asked",
            "decided",
            "act",
            "target",
            "asked by",
            "decision",
            "proposed",
            "performed",
        ):
            table.add_column(label, key=label)
        self.load()

    def action_reload(self) -> None:
        self.load()

    @work(group="audit", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.post_message(self.Loaded(await self.store.approvals.history()))

    @on(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        records = message.records
        self.query_one("#audit-stats", Static).update(audit_stats(records).summary())
        table = self.query_one("#audit-table", DataTable)
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
                decision,
                row.proposed,
                row.performed,
            )
            if str(row.id) in have:
                for column, value in zip(
                    ("decided", "decision", "performed"),
                    (cells[4], cells[8], cells[10]),
                    strict=True,
                ):
                    table.update_cell(str(row.id), column, value)
            else:
                table.add_row(*cells, key=str(row.id))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        row = event.data_table.get_row(event.row_key)
        detail = f"#{row[0]} {row[5]} {row[6]} — asked by {row[7]}\nproposed: {row[9]}\nperformed: {row[10]}"
        self.query_one("#audit-detail", Static).update(Content(detail))  # text, not markup

    def action_close(self) -> None:
        self.dismiss(None)

"""Resources: what the configured MCP servers offer to read (resources and resource templates),
browsed by the operator, through the app's own MCP hub (``IoApp.mcp``, started the first time it
is needed and shared with the palette and the new-run dialog; the runs' servers live in the
harness worker). Leaving the screen leaves the servers running for the next visit.

``enter`` reads the highlighted resource into the pane below; a template is shown with its
fields, since it is read once they are filled in (the model does that through its
``read_resource`` tool). The operator's reads are not policy-checked: the policy governs the
agent."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table

if TYPE_CHECKING:
    from io_tui.core import McpHub
    from io_tui.ui.mcp_prompts import OperatorHub

COLUMNS = (("server", 5, None), ("kind", 4, None), ("uri", 6, 20), ("name", 3, 10), ("type", 1, 8))


class ResourcesScreen(Screen[None]):
    CSS_PATH = "resources.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "read", "Read", id="resources.read", tooltip="Read the resource"),
        Binding("r", "reload", "Refresh", id="resources.refresh", tooltip="List them again"),
        Binding("escape,q", "close", "Back", id="resources.close", tooltip="Back to the runs"),
    ]

    class Listed(Message):
        def __init__(self, rows: list[Any], problems: list[str]) -> None:
            super().__init__()
            self.rows = rows
            self.problems = problems

    class Read(Message):
        def __init__(self, title: str, text: str) -> None:
            super().__init__()
            self.title = title
            self.text = text

    def __init__(self, mcp: OperatorHub) -> None:
        super().__init__()
        self.mcp = mcp
        self.hub: McpHub | None = None
        self.rows: list[Any] = []
        self.shown = ""  # what the pane shows

    def compose(self) -> ComposeResult:
        yield Static("MCP resources · starting the servers…", id="resources-head")
        yield Table(id="resources-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="resources-pane"):
            yield Static("", id="resources-text")
        yield ScreenFooter()

    def on_mount(self) -> None:
        table = self.query_one(Table)
        for label, priority, shrink_to in COLUMNS:
            table.add_column(label, key=label, priority=priority, shrink_to=shrink_to)
        self.load()

    @work(group="resources", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.hub = await self.mcp.hub()
        rows = await self.hub.resources() if self.hub is not None else []
        self.post_message(self.Listed(rows, list(self.mcp.problems)))

    @on(Listed)
    def _on_listed(self, message: Listed) -> None:
        self.rows = message.rows
        table = self.query_one(Table)
        table.clear()
        for row in self.rows:
            table.add_row(row.server, row.kind, row.uri, row.name, row.mime_type or "")
        servers = len(self.hub.statuses()) if self.hub is not None else 0
        head = f"MCP resources · {len(self.rows)} from {servers} servers"
        if self.hub is None and not self.rows:
            head = "MCP resources · no MCP servers configured (see docs/MCP.md)"
        lines = [head, *(f"⚠ {problem}" for problem in message.problems)]
        self.query_one("#resources-head", Static).update(Content("\n".join(lines)))
        table.focus()

    def action_read(self) -> None:
        table = self.query_one(Table)
        if not self.rows or table.cursor_row >= len(self.rows):
            return
        row = self.rows[table.cursor_row]
        if row.kind != "resource":
            about = f"{row.name}: {row.description}" if row.description else row.name
            self._show(
                row.uri, f"{about}\n\nA template: the model reads it with its fields filled in."
            )
            return
        self.read(row.server, row.uri)

    @work(group="resources-read", exclusive=True, exit_on_error=False)
    async def read(self, server: str, uri: str) -> None:
        assert self.hub is not None
        try:
            text = await self.hub.read_resource(server, uri)
        except Exception as exc:  # shown in the pane: the screen stays usable
            text = f"✗ {exc}"
        self.post_message(self.Read(f"{server} · {uri}", text))

    @on(Read)
    def _on_read(self, message: Read) -> None:
        self._show(message.title, message.text)

    def _show(self, title: str, text: str) -> None:
        self.shown = f"{title}\n\n{text}"
        self.query_one("#resources-text", Static).update(Content(self.shown))

    @on(DataTable.RowSelected)
    def _selected(self) -> None:  # enter on the table
        self.action_read()

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        index = event.cursor_row
        if 0 <= index < len(self.rows) and self.rows[index].description:
            row = self.rows[index]
            self._show(row.uri, f"{row.description}\n\n(enter reads it)")

    def action_reload(self) -> None:
        self.load()

    def action_close(self) -> None:
        self.dismiss(None)

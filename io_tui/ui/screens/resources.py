"""Resources: what the MCP servers of a workspace offer to read (resources and resource
templates), browsed by the operator. The servers are the runs' own, asked through the app's run
host (``RunHost.mcp_resources``, ``mcp_read``): in the harness worker, or in the app's loop with
``[ui] harness = "inline"``; the app starts none of its own. A server that hangs makes the ask
fail after the host's timeout, said in the head; the screen stays usable.

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
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from io_tui.ui.answers import on_answer
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table

if TYPE_CHECKING:
    from pathlib import Path

    from io_tui.ui.hosts import RunHost

COLUMNS = (("server", 5, None), ("kind", 4, None), ("uri", 6, 20), ("name", 3, 10), ("type", 1, 8))


class ResourcesScreen(Screen[None]):
    CSS_PATH = "resources.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "read", "Read", id="resources.read", tooltip="Read the resource"),
        Binding("r", "reload", "Refresh", id="resources.refresh", tooltip="List them again"),
        Binding("escape,q", "close", "Back", id="resources.close", tooltip="Back to the runs"),
    ]

    class Listed(Message):
        """The rows (``ResourceRow``) of ``servers`` servers, and the problems met."""

        def __init__(self, rows: list[Any], servers: int, problems: list[str]) -> None:
            super().__init__()
            self.rows = rows
            self.servers = servers
            self.problems = problems

    class Read(Message):
        def __init__(self, title: str, text: str) -> None:
            super().__init__()
            self.title = title
            self.text = text

    head = query_one("#resources-head", Static)
    table = query_one(Table)
    text_view = query_one("#resources-text", Static)

    def __init__(self, host: RunHost, workspace: Path) -> None:
        """The resources of the servers a run in ``workspace`` gets, asked of ``host``."""
        super().__init__()
        self.host = host
        self.workspace = workspace
        self.rows: list[Any] = []
        self.shown = ""  # what the pane shows

    def compose(self) -> ComposeResult:
        yield Static("MCP resources · asking the servers…", id="resources-head")
        yield Table(id="resources-table", cursor_type="row", zebra_stripes=True)
        with VerticalScroll(id="resources-pane"):
            yield Static("", id="resources-text")
        yield ScreenFooter()

    def on_mount(self) -> None:
        table = self.table
        for label, priority, shrink_to in COLUMNS:
            table.add_column(label, key=label, priority=priority, shrink_to=shrink_to)
        self.load()

    @work(group="resources", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        try:
            offered = await self.host.mcp_resources(self.workspace)
        except Exception as exc:  # a server that hangs: the host's ask timed out
            self.post_message(self.Listed([], 0, [f"the resources were not listed: {exc}"]))
            return
        self.post_message(self.Listed(list(offered.rows), offered.servers, list(offered.problems)))

    @on_answer(Listed)
    def _on_listed(self, message: Listed) -> None:
        self.rows = message.rows
        table = self.table
        table.clear()
        for row in self.rows:
            table.add_row(row.server, row.kind, row.uri, row.name, row.mime_type or "")
        head = f"MCP resources · {len(self.rows)} from {message.servers} servers"
        if not message.servers and not message.problems:
            head = "MCP resources · no MCP servers configured (see docs/MCP.md)"
        lines = [head, *(f"⚠ {problem}" for problem in message.problems)]
        self.head.update(Content("\n".join(lines)))
        table.focus()

    def action_read(self) -> None:
        table = self.table
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
        try:
            text = await self.host.mcp_read(self.workspace, server, uri)
        except Exception as exc:  # shown in the pane: the screen stays usable
            text = f"✗ {exc}"
        self.post_message(self.Read(f"{server} · {uri}", text))

    @on_answer(Read)
    def _on_read(self, message: Read) -> None:
        self._show(message.title, message.text)

    def _show(self, title: str, text: str) -> None:
        self.shown = f"{title}\n\n{text}"
        self.text_view.update(Content(self.shown))

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

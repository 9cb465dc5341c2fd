"""``Table``: string cells are text, not markup; rows drawn before their columns were measured
are redrawn (a DataTable keeps them)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from io_tui.ui.widgets.table import Table


class OneTable(App[None]):
    CSS = "DataTable { height: 1fr; }"

    def __init__(self, table: DataTable[object]) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table

    def on_mount(self) -> None:
        self.table.add_columns("scope", "key")


async def _first_row_after_rows_arrive(table: DataTable[object]) -> str:
    app = OneTable(table)
    async with app.run_test(size=(60, 6)) as pilot:
        await pilot.pause()
        table.add_row("workspace", "test-command")
        table.render_lines(table.region.reset_offset)  # drawn before the idle measure
        await pilot.pause()
        await pilot.pause()
        return table.render_lines(table.region.reset_offset)[1].text


async def test_rows_are_redrawn_at_their_measured_widths() -> None:
    assert "workspace  test-command" in await _first_row_after_rows_arrive(Table())


async def test_the_stock_table_keeps_the_stale_row() -> None:
    """The Textual behaviour ``Table`` works around; when this fails, ``Table`` can go."""
    assert "workspace" not in await _first_row_after_rows_arrive(DataTable())


async def test_string_cells_are_text_not_markup() -> None:
    """A stock DataTable raises on "[/]" (a command's argument, a path) and passes escape
    sequences to the terminal; ``Table`` shows both as text."""
    table = Table()
    app = OneTable(table)
    async with app.run_test(size=(60, 6)) as pilot:
        await pilot.pause()
        table.add_row("rm [/] x", "\x1b[2J[bold]key", key="r")
        table.update_cell("r", next(iter(table.columns)), "[/]y")
        await pilot.pause()
        row = " ".join(strip.text for strip in table.render_lines(table.region.reset_offset))
        assert "[/]y" in row and "[bold]key" in row and "\x1b" not in row

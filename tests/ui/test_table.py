"""``Table``: string cells are text, not markup; rows drawn before their columns were measured
are redrawn (a DataTable keeps them)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult
from textual.widgets import DataTable

from io_tui.ui.widgets.table import ColumnSpec, Table, fit_columns


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


def _spec(key: str, natural: int, priority: int = 0, shrink_to: int | None = None) -> ColumnSpec:
    return ColumnSpec(key, key, priority, shrink_to, natural)


def test_the_least_important_columns_are_dropped_first() -> None:
    specs = [_spec("a", 10, 3), _spec("b", 10, 1), _spec("c", 10, 2)]
    assert fit_columns(specs, 30, padding=1).keys == ("a", "c")  # 12 + 12 fit, b does not
    assert fit_columns(specs, 100, padding=1).keys == ("a", "b", "c")  # declared order


def test_an_elidable_column_shrinks_before_anything_is_dropped() -> None:
    specs = [_spec("key", 8, 3), _spec("value", 60, 2, shrink_to=10), _spec("at", 8, 1)]
    fit = fit_columns(specs, 50, padding=1)
    assert fit.keys == ("key", "value", "at")
    assert dict(fit.widths) == {"key": 8, "value": 50 - 10 - 10 - 2, "at": 8}


class FittedTable(App[None]):
    CSS = "Table { height: 1fr; scrollbar-size-vertical: 1; }"

    def __init__(self) -> None:
        super().__init__()
        self.table = Table(cursor_type="row")

    def compose(self) -> ComposeResult:
        yield self.table

    def on_mount(self) -> None:
        self.table.add_column("state", key="state", priority=5)
        self.table.add_column("target", key="target", priority=3, shrink_to=8)
        self.table.add_column("note", key="note", priority=1)
        self.table.add_column("tokens", key="tokens", priority=4)


async def test_a_narrow_table_keeps_its_important_columns_and_cursor() -> None:
    app = FittedTable()
    async with app.run_test(size=(40, 8)) as pilot:
        table = app.table
        for n in range(4):
            table.add_row(
                "full",
                f"src/module_{n}/a_long_file_name.py",
                "a rather longer note",
                f"{n},000",
                key=f"r{n}",
            )
        await pilot.pause()
        table.move_cursor(row=2)
        await pilot.pause()
        assert table.shown_columns == ("state", "target", "tokens")
        lines = [strip.text for strip in table.render_lines(table.region.reset_offset)]
        assert "…" in lines[3] and "2,000" in lines[3]
        assert table.cell("r2", "note") == Text("a rather longer note")  # kept though not shown
        table.update_cell("r2", "note", "changed")
        await pilot.resize_terminal(120, 8)
        await pilot.pause()
        await pilot.pause()
        assert table.shown_columns == ("state", "target", "note", "tokens")
        assert table.cursor_row == 2
        assert "changed" in table.render_lines(table.region.reset_offset)[3].text

"""``Table``: the app's DataTable: string cells are text, not markup, and rows are redrawn once
their columns have been measured."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, ColumnKey, RowKey

from io_tui.ui.terminal_text import styled


class Table(DataTable[Any]):
    """A DataTable for text from runs, whose rows are redrawn after new cells are measured.

    DataTable reads a string cell as markup: a target such as ``rm [/]`` raises and takes the
    app down, and escape sequences would reach the terminal. Here a string cell is plain text
    (``terminal_text.styled``); cells that are already ``Text`` are kept as they are.

    Textual 8's DataTable measures the columns of new rows (and updated cells) when it goes
    idle, but keeps each row it drew before that in a cache whose key does not include the
    column widths: a row drawn in between keeps the header's narrow widths ("works  tes  pytho")
    until something else repaints it. After each measure, every cached row is dropped.
    """

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: Any = None,
    ) -> RowKey:
        return super().add_row(*map(_text, cells), height=height, key=key, label=label)

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        super().update_cell(row_key, column_key, _text(value), update_width=update_width)

    async def _on_idle(self, event: events.Idle) -> None:
        measuring = bool(
            getattr(self, "_require_update_dimensions", False)
            or getattr(self, "_updated_cells", None)
        )
        await super()._on_idle(event)
        if measuring:
            self.notify_style_update()  # clears the render caches and repaints


def _text(cell: Any) -> Any:
    return styled(cell) if isinstance(cell, str) else cell

"""``Table``: the app's DataTable: string cells are text, not markup; rows are redrawn once their
columns have been measured; columns given a priority fit the table's width (the least important
are dropped, elidable ones are cut with "…").

``DataTable`` measures new cells in its private idle handler (``_on_idle``, reading
``_require_update_dimensions`` and ``_updated_cells``) and keeps the rows it rendered before
measuring; the override repaints them once measured (``tests/ui/test_textual_private.py``
checks the three names).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text, TextType
from textual import events
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, ColumnKey, RowKey

from io_tui.ui.terminal_text import styled


@dataclass(slots=True)
class ColumnSpec:
    """A declared column: shown when the width allows, in declared order."""

    key: str
    label: TextType
    priority: int  # the higher, the longer it stays when the table is narrow
    shrink_to: int | None  # elidable down to this many cells; None: shown whole or not at all
    natural: int  # the widest cell (or the label), in cells


@dataclass(frozen=True, slots=True)
class Fit:
    """The columns shown, each with its width (declared order)."""

    widths: tuple[tuple[str, int], ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(key for key, _ in self.widths)


def fit_columns(specs: list[ColumnSpec], available: int, padding: int) -> Fit:
    """Which columns fit in ``available`` cells, and how wide.

    In priority order (ties: declared order) each column takes its whole width if that fits;
    else an elidable one takes what is left (if at least ``shrink_to``), cut with "…"; else it
    is dropped. So the least important columns go first, and an elidable column given a low
    priority takes the room the others leave.
    """
    widths: dict[int, int] = {}
    left = available
    for i in sorted(range(len(specs)), key=lambda i: (-specs[i].priority, i)):
        spec = specs[i]
        if spec.natural + 2 * padding <= left:
            widths[i] = spec.natural
        elif spec.shrink_to is not None and spec.shrink_to + 2 * padding <= left:
            widths[i] = left - 2 * padding
        else:
            continue
        left -= widths[i] + 2 * padding
    return Fit(tuple((specs[i].key, widths[i]) for i in sorted(widths)))


class Table(DataTable[Any]):
    """A DataTable for text from runs, whose rows are redrawn after new cells are measured.

    DataTable reads a string cell as markup: a target such as ``rm [/]`` raises and takes the
    app down, and escape sequences would reach the terminal. Here a string cell is plain text
    (``terminal_text.styled``); cells that are already ``Text`` are kept as they are.

    Textual 8's DataTable measures the columns of new rows (and updated cells) when it goes
    idle, but keeps each row it drew before that in a cache whose key does not include the
    column widths: a row drawn in between keeps the header's narrow widths ("works  tes  pytho")
    until something else repaints it. After each measure, every cached row is dropped.

    Columns added with a ``priority`` (or ``shrink_to``) make the table fit its width: it keeps
    every row's cells of every column (``cell``, ``row_cells``) and shows the columns that fit
    (``fit_columns``); when that choice changes (a resize, a wider cell) the shown columns are
    rebuilt, keeping the rows' order and the cursor's row. Without priorities it is a plain
    DataTable that scrolls sideways.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._specs: list[ColumnSpec] = []
        self._cells: dict[str, dict[str, Any]] = {}  # row key → column key → cell (all columns)
        self._fitting = False
        self._fit: Fit | None = None
        self._refit_queued = False

    # -- declaring columns and rows ------------------------------------------------------------

    def add_column(
        self,
        label: TextType,
        *,
        width: int | None = None,
        key: str | None = None,
        default: CellType | None = None,
        priority: int | None = None,
        shrink_to: int | None = None,
    ) -> ColumnKey:
        if priority is not None or shrink_to is not None:
            self._fitting = True
        if not self._fitting:
            return super().add_column(label, width=width, key=key, default=default)
        name = key or str(label)
        if any(spec.key == name for spec in self._specs):
            raise ValueError(f"the column key {name!r} already exists")
        width_of_label = Text(label).cell_len if isinstance(label, str) else label.cell_len
        self._specs.append(ColumnSpec(name, label, priority or 0, shrink_to, width_of_label))
        for row in self._cells.values():
            row[name] = _text(default) if default is not None else Text("")
        self._queue_refit()
        return ColumnKey(name)

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: Any = None,
    ) -> RowKey:
        texts = list(map(_text, cells))
        if not self._fitting:
            return super().add_row(*texts, height=height, key=key, label=label)
        row_key = key if key is not None else f"row-{len(self._cells)}-{id(texts)}"
        if row_key in self._cells:
            raise ValueError(f"the row key {row_key!r} already exists")
        row = {spec.key: cell for spec, cell in zip(self._specs, texts, strict=False)}
        for spec in self._specs[len(texts) :]:
            row[spec.key] = Text("")
        self._cells[row_key] = row
        for spec in self._specs:
            self._measure(spec, row[spec.key])
        shown = self._fit.keys if self._fit is not None else ()
        return super().add_row(*(row[k] for k in shown), height=height, key=row_key, label=label)

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        value = _text(value)
        if self._fitting:
            row = _name(row_key)
            column = _name(column_key)
            self._cells[row][column] = value
            self._measure(next(s for s in self._specs if s.key == column), value)
            if self._fit is None or column not in self._fit.keys:
                return  # kept for when the column is shown
        super().update_cell(row_key, column_key, value, update_width=update_width)

    def remove_row(self, row_key: RowKey | str) -> None:
        self._cells.pop(_name(row_key), None)
        super().remove_row(row_key)

    def clear(self, columns: bool = False) -> Table:
        self._cells.clear()
        if columns:
            self._specs.clear()
            self._fit, self._fitting = None, False
        super().clear(columns)
        return self

    def cell(self, row_key: RowKey | str, column_key: str) -> Any:
        """A cell of any column, shown or not."""
        if not self._fitting:
            return self.get_cell(row_key, column_key)
        return self._cells[_name(row_key)][column_key]

    def row_cells(self, row_key: RowKey | str) -> dict[str, Any]:
        """Every cell of a row by column key, shown or not."""
        if not self._fitting:
            keys = [str(column.key.value) for column in self.ordered_columns]
            return dict(zip(keys, self.get_row(row_key), strict=True))
        return dict(self._cells[_name(row_key)])

    @property
    def shown_columns(self) -> tuple[str, ...]:
        return tuple(str(column.key.value) for column in self.ordered_columns)

    # -- fitting -------------------------------------------------------------------------------

    def _measure(self, spec: ColumnSpec, cell: Any) -> None:
        width = _cell_width(cell)
        if width > spec.natural:
            spec.natural = width
            self._queue_refit()

    def _queue_refit(self) -> None:
        if not self._refit_queued:
            self._refit_queued = True
            self.call_after_refresh(self._refit)

    def on_resize(self, event: events.Resize) -> None:
        if self._fitting:
            self._refit()

    def _available(self) -> int:
        return max(0, self.size.width - self.styles.scrollbar_size_vertical)

    def _refit(self) -> None:
        self._refit_queued = False
        if not self._fitting or not self.is_attached or self.size.width == 0:
            return
        fit = fit_columns(self._specs, self._available(), self.cell_padding)
        if fit != self._fit:
            self._show(fit)

    def _show(self, fit: Fit) -> None:
        """Rebuild the shown columns for ``fit``: same rows, same order, cursor on its row."""
        order = [str(row.key.value) for row in self.ordered_rows]
        order += [key for key in self._cells if key not in set(order)]
        cursor = order[self.cursor_row] if 0 <= self.cursor_row < len(self.rows) else None
        scroll_y = self.scroll_y
        self._fit = fit
        super().clear(columns=True)
        labels = {spec.key: spec.label for spec in self._specs}
        for key, width in fit.widths:
            super().add_column(labels[key], width=width, key=key)
        for row_key in order:
            row = self._cells[row_key]
            super().add_row(*(row[k] for k in fit.keys), key=row_key)
        if cursor is not None:
            self.move_cursor(row=order.index(cursor), animate=False, scroll=False)
        self.scroll_to(y=scroll_y, animate=False, immediate=True)

    async def _on_idle(self, event: events.Idle) -> None:
        measuring = bool(
            getattr(self, "_require_update_dimensions", False)
            or getattr(self, "_updated_cells", None)
        )
        await super()._on_idle(event)
        if measuring:
            self.notify_style_update()  # clears the render caches and repaints


def _name(key: RowKey | ColumnKey | str) -> str:
    return str(key.value if isinstance(key, RowKey | ColumnKey) else key)


def _text(cell: Any) -> Any:
    if isinstance(cell, str):
        cell = styled(cell)
    if isinstance(cell, Text) and cell.overflow is None:
        cell.overflow = "ellipsis"  # a cell cut to its column's width ends in "…"
    return cell


def _cell_width(cell: Any) -> int:
    if isinstance(cell, Text):
        return max((line.cell_len for line in cell.split("\n")), default=0)
    return Text(str(cell)).cell_len

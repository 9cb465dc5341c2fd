"""``Table``: the app's DataTable, with rows redrawn once their columns have been measured."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.widgets import DataTable


class Table(DataTable[Any]):
    """A DataTable whose rows are redrawn after new cells are measured.

    Textual 8's DataTable measures the columns of new rows (and updated cells) when it goes
    idle, but keeps each row it drew before that in a cache whose key does not include the
    column widths: a row drawn in between keeps the header's narrow widths ("works  tes  pytho")
    until something else repaints it. After each measure, every cached row is dropped.
    """

    async def _on_idle(self, event: events.Idle) -> None:
        measuring = bool(
            getattr(self, "_require_update_dimensions", False)
            or getattr(self, "_updated_cells", None)
        )
        await super()._on_idle(event)
        if measuring:
            self.notify_style_update()  # clears the render caches and repaints

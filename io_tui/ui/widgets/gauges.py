"""Budget gauges: one line each, drawn with a cheap text bar (no per-token repaint).

The screen sets ``Gauge.value``/``maximum`` at most ~10×/s (the app coalesces events).
"""

from __future__ import annotations

from rich.text import Text
from textual.reactive import reactive
from textual.widget import Widget


class Gauge(Widget):
    """``label  ███████░░░░  value / maximum  note``; turns warning past 80%, error past 100%."""

    DEFAULT_CSS = """
    Gauge { height: 1; width: 1fr; }
    Gauge.-warn { color: $warning; }
    Gauge.-over { color: $error; }
    """

    value: reactive[int | None] = reactive(None)
    maximum: reactive[int | None] = reactive(None)
    note: reactive[str] = reactive("")

    def __init__(self, label: str, *, unit: str = "tok", id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.unit = unit

    def update(self, value: int | None, maximum: int | None, note: str = "") -> None:
        if (value, maximum, note) == (self.value, self.maximum, self.note):
            return
        self.value, self.maximum, self.note = value, maximum, note
        ratio = (value or 0) / maximum if maximum else 0.0
        self.set_class(0.8 <= ratio <= 1.0, "-warn")
        self.set_class(ratio > 1.0, "-over")

    @property
    def ratio(self) -> float | None:
        if self.value is None or not self.maximum:
            return None
        return self.value / self.maximum

    def render(self) -> Text:
        width = max(8, min(30, self.size.width - 52))
        ratio = self.ratio
        filled = 0 if ratio is None else min(width, round(ratio * width))
        bar = "█" * filled + "░" * (width - filled)
        if self.value is None:
            figures = "—"
        elif self.maximum:
            figures = f"{self.value:,} / {self.maximum:,} {self.unit}"
        else:
            figures = f"{self.value:,} {self.unit} (no cap)"
        return Text.assemble(
            (f"{self.label:<10}", "bold"), bar, f"  {figures}", (f"  {self.note}", "dim")
        )

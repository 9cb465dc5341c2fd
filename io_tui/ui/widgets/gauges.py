"""Budget gauges: one line each, drawn with a cheap text bar (no per-token repaint), and the
context breakdown of one request (what filled its window, as Claude Code's ``/context`` shows).

The screen sets the figures at most ~10×/s (the app coalesces events).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from textual.content import Content
from textual.reactive import reactive
from textual.widget import Widget

LABEL_WIDTH = 9
MAX_BAR = 30
MIN_BAR = 4
NOTE_CUT = 14  # a note is cut with "…" only if this much of it shows; else it is left out


class Gauge(Widget):
    """``label  ███████░░░░  figures  note``; turns warning past 80%, error past 100%.

    The bar is a fifth of the width (4 to 30 cells), the same on every gauge; the figures
    take their short form when the long one (or the note beside it) does not fit, and the note
    is cut with "…" if enough of it shows, else left out.
    """

    DEFAULT_CSS = """
    Gauge { height: 1; width: 1fr; }
    Gauge.-warn { color: $warning; }
    Gauge.-over { color: $error; }
    """

    value: reactive[int | None] = reactive(None)
    maximum: reactive[int | None] = reactive(None)
    note: reactive[str] = reactive("")
    figures: reactive[str | None] = reactive(None)

    def __init__(self, label: str, *, unit: str = "tok", id: str | None = None) -> None:
        super().__init__(id=id)
        self.label = label
        self.unit = unit
        self._ratio: float | None = None
        self._short: str | None = None

    def update(
        self,
        value: int | None,
        maximum: int | None,
        note: str = "",
        *,
        figures: str | None = None,
        short: str | None = None,
        ratio: float | None = None,
        alarm: bool = True,
    ) -> None:
        """``figures`` replaces "value / maximum unit" (``short``: what is shown instead when
        they do not fit); ``ratio`` the bar's value / maximum; ``alarm=False``: a full bar is
        not a warning (a cache hit rate, an agreement)."""
        self._ratio = ratio
        self._short = short
        if (value, maximum, note, figures) == (self.value, self.maximum, self.note, self.figures):
            return
        self.value, self.maximum, self.note, self.figures = value, maximum, note, figures
        shown = self.ratio or 0.0
        self.set_class(alarm and 0.8 <= shown <= 1.0, "-warn")
        self.set_class(alarm and shown > 1.0, "-over")

    @property
    def ratio(self) -> float | None:
        if self._ratio is not None:
            return self._ratio
        if self.value is None or not self.maximum:
            return None
        return self.value / self.maximum

    def describe(self) -> str:
        if self.figures is not None:
            return self.figures
        if self.value is None:
            return "—"
        if self.maximum:
            return f"{self.value:,} / {self.maximum:,} {self.unit}"
        return f"{self.value:,} {self.unit} (no cap)"

    def render(self) -> Content:
        width = max(MIN_BAR, min(MAX_BAR, self.size.width // 5))  # every gauge alike
        room = self.size.width - LABEL_WIDTH - 1 - width - 2
        note = f"  {self.note}" if self.note else ""
        figures = self.describe()
        short = self._short
        if short is not None and (
            len(figures) > room or (len(figures + note) > room >= len(short + note))
        ):
            figures = short  # the short form, if the long one (or the note beside it) is cut
        figures = _cut(figures, room)  # never cut mid-word without a mark
        left = room - len(figures)
        note = note if len(note) <= left else _cut(note, left) if left >= NOTE_CUT else ""
        ratio = self.ratio
        filled = 0 if ratio is None else min(width, round(ratio * width))
        return Content.assemble(
            (f"{self.label:<{LABEL_WIDTH}} ", "bold"),
            "█" * filled + "░" * (width - filled),
            f"  {figures}",
            (note, "dim"),
        )


# -- the context breakdown ---------------------------------------------------------------------

PARTS = ("system", "tools", "instructions", "memory", "history", "free")
PART_STYLES = {
    "system": "$primary",
    "tools": "$secondary",
    "instructions": "$accent",
    "memory": "$warning",
    "history": "$success",
    "free": "$foreground 25%",
}
SHORT = {"instructions": "instr.", "history": "history"}


@dataclass(frozen=True, slots=True)
class Breakdown:
    """What one request's window held, in estimated tokens, by part (``PARTS`` order)."""

    step: int
    parts: tuple[tuple[str, int], ...]

    @property
    def total(self) -> int:
        return sum(tokens for _, tokens in self.parts)


def context_breakdown(
    step: int,
    sections: Sequence[Mapping[str, Any]],
    est_tokens: int,
    frame_tokens: int,
    ceiling_tokens: int,
    calibration: Mapping[str, Any] | None = None,
) -> Breakdown:
    """A request's window by part, from its stored manifest sections and totals.

    The fixed sections are the frame, sent on every request beside the ceiling: ``system``
    and the task contract are *system*, ``tools`` the tool schemas, any other fixed section
    (AGENTS.md, skills) *instructions*. Inside the ceiling: the recalled *memory* block, and
    *history* (the observations and the assistant turns: everything else the estimate holds).
    *Free* is what the ceiling has left.

    The totals are calibrated (the provider's tokens), the sections the engine's raw estimate:
    the sections are scaled by the request's ``calibration`` so that the parts add up to the
    totals, the frame's exactly; tool schemas the server is seen dropping count 0, as they do
    in the frame.
    """
    factor = float((calibration or {}).get("factor") or 1.0)
    tools_counted = bool((calibration or {}).get("tools_counted", True))
    frame = dict.fromkeys(("system", "tools", "instructions"), 0)
    memory = 0
    for section in sections:
        name, tokens = str(section.get("name", "")), int(section.get("est_tokens") or 0)
        if not section.get("fixed", True):
            memory += tokens if name == "memory" else 0
            continue
        if name in ("system", "contract"):
            frame["system"] += tokens
        elif name == "tools":
            frame["tools"] += tokens if tools_counted else 0
        else:
            frame["instructions"] += tokens
    inside = max(0, est_tokens - frame_tokens)
    totals = _scaled_to(frame, frame_tokens)
    totals["memory"] = min(inside, round(memory * factor))
    totals["history"] = inside - totals["memory"]
    totals["free"] = max(0, ceiling_tokens - inside)
    return Breakdown(step, tuple((part, totals[part]) for part in PARTS))


def _scaled_to(parts: Mapping[str, int], total: int) -> dict[str, int]:
    """``parts`` scaled to add up to ``total`` exactly (the largest remainders rounded up)."""
    raw = sum(parts.values())
    if raw == 0:
        return dict.fromkeys(parts, 0)
    shares = {name: tokens * total / raw for name, tokens in parts.items()}
    out = {name: int(share) for name, share in shares.items()}
    by_remainder = sorted(shares, key=lambda name: shares[name] - out[name], reverse=True)
    for name in by_remainder[: total - sum(out.values())]:
        out[name] += 1
    return out


class ContextBar(Widget):
    """A request's window as one stacked bar, and a legend of its parts in two lines."""

    DEFAULT_CSS = """
    ContextBar { height: 3; width: 1fr; }
    """

    breakdown: reactive[Breakdown | None] = reactive(None)
    # a request sent and not answered yet, before any is recorded: what it says of itself
    sent: reactive[str] = reactive("")

    def render(self) -> Content:
        breakdown = self.breakdown
        if breakdown is None or breakdown.total == 0:
            said = self.sent or "no request recorded yet"
            return Content.assemble((f"{'context':<{LABEL_WIDTH}} ", "bold"), (said, "dim"))
        width = max(MIN_BAR, self.size.width - LABEL_WIDTH - 1)
        bar = [(f"{'context':<{LABEL_WIDTH}} ", "bold")]
        bar += [
            ("█" * cells, PART_STYLES[part])
            for part, cells in zip(PARTS, _cells(breakdown, width), strict=True)
        ]
        items = [_legend_item(part, tokens, breakdown.total) for part, tokens in breakdown.parts]
        half = (len(items) + 1) // 2
        legend: list[Content | tuple[str, str] | str] = []
        for line in (items[:half], items[half:]):
            legend += ["\n", _fit_items(line, self.size.width)]
        return Content.assemble(*bar, *legend)


def _cells(breakdown: Breakdown, width: int) -> list[int]:
    """Bar cells per part, summing to ``width``; a part with tokens gets at least one."""
    total = breakdown.total
    raw = [tokens * width / total for _, tokens in breakdown.parts]
    cells = [max(1, round(r)) if r > 0 else 0 for r in raw]
    while sum(cells) > width:  # take from the widest
        cells[cells.index(max(cells))] -= 1
    while sum(cells) < width:
        cells[raw.index(max(raw))] += 1
    return cells


def _legend_item(part: str, tokens: int, total: int) -> tuple[str, Content, Content]:
    share = f" {tokens / total:.0%}" if total else ""
    return (
        part,
        Content.assemble(("■ ", PART_STYLES[part]), f"{part} {_short(tokens)}{share}"),
        Content.assemble(("■ ", PART_STYLES[part]), f"{SHORT.get(part, part)} {_short(tokens)}"),
    )


def _fit_items(items: list[tuple[str, Content, Content]], width: int) -> Content:
    """One legend line under the bar: in full words with shares if they fit, else shorter,
    else under the label too, else cut."""
    indent = Content(" " * (LABEL_WIDTH + 1))
    for pad, pick in ((indent, 1), (indent, 2), (Content(), 2)):
        line = pad + Content("  ").join(item[pick] for item in items)
        if line.cell_length <= width:
            return line
    return line.truncate(max(0, width), ellipsis=True)


def _short(tokens: int) -> str:
    return f"{tokens / 1000:.1f}k" if tokens >= 10_000 else f"{tokens:,}"


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(0, width - 1)] + "…" if width > 2 else ""

"""The main screen's first frame: its layout, drawn as lines by the screen itself.

Before Textual can paint a widget it styles it against every CSS rule, lays it out and renders
it: the main screen's widgets (header, run tree, gauges, transcript, prompt) took ~7× an empty
app's first frame to paint. ``Skeleton`` draws the same layout (title bar, the Runs, Budgets
and Transcript boxes with their titles, the prompt box with its placeholder) as the screen's
own lines (Textual's Line API), at the cost of the blank screen an empty app paints; the main
screen mounts its panes a frame later, in the same places (``main_layout`` mirrors main.tcss,
and a test holds the two together).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.geometry import Region, Size
from textual.strip import Strip

from io_tui.ui.widgets.title_bar import title_parts

RUNS_WIDTH = 0.42  # of the screen, and at least RUNS_MIN_WIDTH (main.tcss: #runs)
RUNS_MIN_WIDTH = 30
GAUGE_LINES = (
    8  # main.tcss: #gauges is as tall as its gauges (5 lines, the context bar 3), plus its border
)
PROMPT_HEIGHT = 3


@dataclass(frozen=True, slots=True)
class Layout:
    """Where main.tcss puts the main screen's parts on a screen of a given size."""

    header: Region
    runs: Region
    gauges: Region
    transcript: Region
    prompt: Region
    footer: Region


@lru_cache(maxsize=8)
def main_layout(size: Size) -> Layout:
    width, height = size
    body_height = max(0, height - 2 - PROMPT_HEIGHT)  # header and footer take a line each
    runs_width = min(width, max(RUNS_MIN_WIDTH, int(width * RUNS_WIDTH)))
    gauges_height = min(body_height, GAUGE_LINES + 2)
    side = width - runs_width
    return Layout(
        header=Region(0, 0, width, 1),
        runs=Region(0, 1, runs_width, body_height),
        gauges=Region(runs_width, 1, side, gauges_height),
        transcript=Region(runs_width, 1 + gauges_height, side, body_height - gauges_height),
        prompt=Region(0, 1 + body_height, width, PROMPT_HEIGHT),
        footer=Region(0, height - 1, width, 1),
    )


@dataclass(frozen=True, slots=True)
class BoxStyle:
    edge: Style
    title: Style
    fill: Style


@dataclass(frozen=True, slots=True)
class Palette:
    header: Style
    runs: BoxStyle  # the run tree is focused when the panes mount
    pane: BoxStyle
    prompt: Style
    placeholder: Style
    footer: Style

    @classmethod
    def of(cls, variables: dict[str, str]) -> Palette:
        """The theme's colours for each part, from the app's CSS variables (no stylesheet rules:
        parsing even a few costs this frame ~3 ms)."""

        def color(name: str) -> Any:  # a Rich colour
            return Color.parse(variables[name]).rich_color

        surface, background = color("surface"), color("background")
        placeholder = Color.parse(variables["surface"]) + Color.parse(variables["foreground-muted"])
        return cls(
            header=Style(color=color("foreground"), bgcolor=color("panel")),
            runs=BoxStyle(
                edge=Style(color=color("primary"), bgcolor=surface),
                title=Style(color=color("primary"), bgcolor=surface),
                fill=Style(bgcolor=surface),
            ),
            pane=BoxStyle(
                edge=Style(color=color("panel"), bgcolor=background),
                title=Style(color=color("primary"), bgcolor=background),
                fill=Style(bgcolor=background),
            ),
            prompt=Style(color=color("border-blurred"), bgcolor=surface),
            placeholder=Style(color=placeholder.rich_color, bgcolor=surface),
            footer=Style(bgcolor=color("footer-background")),
        )


class Skeleton:
    """The main screen's layout with nothing in it yet, a line at a time."""

    def __init__(self, title: str, sub_title: str, placeholder: str, palette: Palette) -> None:
        self.title = title
        self.sub_title = sub_title
        self.placeholder = placeholder
        self.palette = palette
        self._strips: dict[tuple[str | int, ...], Strip] = {}

    def render_line(self, size: Size, y: int) -> Strip:
        # Most rows are alike ("│ … ││ … │"): each distinct row is built once, and kept.
        layout = main_layout(size)
        key = self._row_key(layout, y)
        strip = self._strips.get(key)
        if strip is None:
            strip = self._strips[key] = self._build_row(layout, key)
        return strip

    @staticmethod
    def _row_key(layout: Layout, y: int) -> tuple[str | int, ...]:
        """What row ``y`` shows: a part's name, or the row of each box it crosses."""
        width = layout.header.width
        if y == layout.header.y:
            return ("header", width)
        if y == layout.footer.y:
            return ("footer", width)
        if layout.prompt.contains(0, y):
            return ("prompt", width, y - layout.prompt.y)
        rows: list[int] = [width]
        for region in (layout.runs, layout.gauges, layout.transcript):
            if region.contains(region.x, y):
                row = y - region.y
                rows.append(0 if row == 0 else 2 if row == region.height - 1 else 1)
            else:
                rows.append(-1)
        return ("body", *rows)

    def _build_row(self, layout: Layout, key: tuple[str | int, ...]) -> Strip:
        width = layout.header.width
        palette = self.palette
        part = key[0]
        if part == "header":
            header, dim = palette.header, palette.header + Style(dim=True)
            parts = title_parts(self.title, self.sub_title, width)
            line = [Segment(text, dim if faint else header) for text, faint in parts]
            return Strip(line).crop_extend(0, width, None)
        if part == "footer":
            return Strip([Segment(" " * width, palette.footer)], width)
        if part == "prompt":
            return self._prompt_line(int(key[2]), width)
        segments: list[Segment] = []
        boxes = (
            ("Runs", layout.runs, palette.runs),
            ("Budgets", layout.gauges, palette.pane),
            ("Transcript", layout.transcript, palette.pane),
        )
        for (title, region, style), row in zip(boxes, key[2:], strict=True):
            if row != -1:
                segments.extend(self._box_line(title, region.width, int(row), style))
        return Strip(segments).crop_extend(0, width, None)

    @staticmethod
    def _box_line(title: str, width: int, row: int, style: BoxStyle) -> list[Segment]:
        """A round box's top (0), middle (1) or bottom (2) row, ``title`` in its top edge, as
        main.tcss draws the panes."""
        edge = style.edge
        inner = max(0, width - 2)
        if row == 0:
            label = f" {title} "[: max(0, inner - 1)]
            return [
                Segment("╭─", edge),
                Segment(label, style.title),
                Segment("─" * max(0, inner - 1 - len(label)) + "╮", edge),
            ]
        if row == 2:
            return [Segment("╰" + "─" * inner + "╯", edge)]
        return [Segment("│", edge), Segment(" " * inner, style.fill), Segment("│", edge)]

    def _prompt_line(self, row: int, width: int) -> Strip:
        """The prompt box: a tall border round the placeholder, as Textual draws an Input."""
        edge = self.palette.prompt
        inner = max(0, width - 2)
        if row == 1:
            text = f"  {self.placeholder}"[:inner].ljust(inner)
            middle = Segment(text, self.palette.placeholder)
        else:
            middle = Segment(("▔" if row == 0 else "▁") * inner, edge)
        return Strip([Segment("▊", edge), middle, Segment("▎", edge)], width)

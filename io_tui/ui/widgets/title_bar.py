"""The title bar: the screen's title and subtitle (the app's, unless the screen sets its own)
centred on one line, the command palette's icon at its left (click it to open the palette).

What Textual's ``Header`` shows, drawn by one widget: the Header mounts three (icon, title, clock
space), which cost the main screen's first full frame, and its title watcher raised NoMatches
when the app closed while the Header was mounting.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widget import Widget

# U+2261: in every common monospace font (DejaVu Sans Mono, Menlo, Monaco, Courier New: WGL4).
# Textual's "⭘" (U+2B58) is in none of them, and the browser (textual-serve: Roboto Mono, then
# the system's) drew it as a missing-glyph box.
ICON = "≡"


def title_parts(title: str, sub_title: str, width: int) -> list[tuple[str, bool]]:
    """The line as ``(text, dim)`` parts filling ``width`` cells: the icon, then ``title —
    sub_title`` centred, the dash and subtitle dim. (The skeleton draws the same line.)"""
    head = f" {ICON} "
    parts = [(title, False)] + ([(f" — {sub_title}", True)] if sub_title else [])
    length = sum(len(text) for text, _ in parts)
    left = max(len(head), (width - length) // 2)
    line = [(head.ljust(left), False), *parts]
    used = left + length
    if used < width:
        line.append((" " * (width - used), False))
    return line


class TitleBar(Widget):
    DEFAULT_CSS = """
    TitleBar { dock: top; height: 1; background: $panel; color: $foreground; }
    """

    def on_mount(self) -> None:
        for node in (self.app, self.screen):
            self.watch(node, "title", self._retitle, init=False)
            self.watch(node, "sub_title", self._retitle, init=False)

    def _retitle(self) -> None:
        self.refresh()

    def render(self) -> Text:
        screen, app = self.screen, self.app
        title = screen.title if screen.title is not None else app.title
        sub_title = screen.sub_title if screen.sub_title is not None else app.sub_title
        parts = title_parts(title, sub_title, self.size.width)
        text = Text.assemble(*((part, "dim") if dim else part for part, dim in parts))
        text.truncate(self.size.width)
        return text

    async def on_click(self, event: events.Click) -> None:
        if event.x < 3 and self.app.ENABLE_COMMAND_PALETTE:
            event.stop()
            await self.run_action("app.command_palette")

"""``SkeletonScreen``: a screen that shows the main screen's layout, drawn as lines, until its
widgets are mounted.

It imports Textual and the skeleton's drawing only, so the CLI's app paints it as its first
frame before the settings, the store and the core are imported (``IoApp`` boots on it); the
main screen is one too, and draws the same frame until its panes take their places.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.strip import Strip

from io_tui.ui.widgets.skeleton import Palette, Skeleton

PROMPT_PLACEHOLDER = "Message the selected run, or follow up on a finished one (m)"


class SkeletonScreen(Screen[None]):
    """The main screen's layout with nothing in it, in the app's theme, until ``drop_skeleton``."""

    class Painted(Message):
        """The screen's frame is drawn (Textual lays a screen out and paints it as it resumes)."""

    def __init__(self) -> None:
        super().__init__()
        self._skeleton: Skeleton | None = None

    def on_screen_resume(self) -> None:
        if self._skeleton is not None:  # the main screen, once its panes are up, is not one
            self.post_message(self.Painted())

    def compose(self) -> ComposeResult:
        # The layout alone, drawn by the screen (``render_line``): the panes' widgets cost ~7×
        # an empty app's first frame.
        self._skeleton = Skeleton(
            self.app.title,
            self.app.sub_title,
            PROMPT_PLACEHOLDER,
            Palette.of(self.app.theme_variables),
        )
        return []

    def render_line(self, y: int) -> Strip:
        if self._skeleton is not None:
            return self._skeleton.render_line(self.size, y)
        return super().render_line(y)

    def drop_skeleton(self) -> None:
        """The widgets are mounted: the screen draws them from now on."""
        self._skeleton = None
        self.refresh()

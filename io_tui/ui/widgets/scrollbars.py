"""Scrollbars that follow growing content at most a few times a second.

While a run is live, the run tree and the transcript grow by a fraction of a screen several times
a second; their thumbs would shrink by a fraction of a cell each time, and drawing a scrollbar
costs as much as the widget's own changed lines (~2-3 ms a frame). They follow at most every
``SCROLLBAR_INTERVAL`` instead.

Textual updates scrollbars only in a layout of the screen; without one, this calls the two
private steps that layout takes, ``Widget._refresh_scrollbars`` and ``Widget._scroll_update``
(checked by ``tests/ui/test_textual_private.py``).
"""

from __future__ import annotations

from time import monotonic
from typing import TYPE_CHECKING

from textual.timer import Timer
from textual.widget import Widget

if TYPE_CHECKING:
    _Base = Widget
else:  # a plain mixin at runtime: as a Widget subclass it would put Widget's default CSS
    _Base = object  # ahead of the ScrollView's (overflow: hidden) where it is mixed in

SCROLLBAR_INTERVAL = 0.25  # seconds: the thumb follows growing content at most 4×/s


class ThrottledScrollbars(_Base):
    """A mixin for line widgets that set their ``virtual_size`` without a layout of the screen:
    ``follow_virtual_size`` moves the thumbs as a layout would, at most every
    ``SCROLLBAR_INTERVAL``, and lays out the widget when a scrollbar appears or goes."""

    _scrollbar_timer: Timer | None = None
    _scrollbar_at = 0.0

    def follow_virtual_size(self) -> None:
        before = self.show_vertical_scrollbar, self.show_horizontal_scrollbar
        self._refresh_scrollbars()  # a bar appears or goes at once: scrolling needs it shown
        if (self.show_vertical_scrollbar, self.show_horizontal_scrollbar) != before:
            Widget.refresh(self, layout=True)  # past any override that skips layouts
            self._follow_now()
        elif self._scrollbar_timer is None:  # else the pending update reads the size then
            wait = self._scrollbar_at + SCROLLBAR_INTERVAL - monotonic()
            if wait > 0:
                self._scrollbar_timer = self.set_timer(wait, self._follow_now)
            else:
                self._follow_now()

    def _follow_now(self) -> None:
        if self._scrollbar_timer is not None:
            self._scrollbar_timer.stop()
            self._scrollbar_timer = None
        self._scrollbar_at = monotonic()
        self._scroll_update(self.virtual_size)

"""The footer a full screen shows its keys in, out of sight while a modal covers the screen:
the keys it lists do nothing then (the modal has them all), and the modal says its own; a
dimmed "i Inspect  t Trace  x Interrupt" under an approval would offer keys that do not answer."""

from __future__ import annotations

from textual.screen import ModalScreen, Screen
from textual.widgets import Footer


class ScreenFooter(Footer):
    """Textual's footer, hidden while a modal is on top of its screen."""

    def on_mount(self) -> None:
        self.app.screen_change_signal.subscribe(self, self._follow)
        self._follow(self.app.screen)  # a modal pushed before this footer mounted covers it too

    def _follow(self, top: Screen[object]) -> None:
        self.display = top is self.screen or not isinstance(top, ModalScreen)

"""The footer a full screen shows its keys in, out of sight while a modal covers the screen:
the keys it lists do nothing then (the modal has them all), and the modal says its own; a
dimmed "i Inspect  t Trace  x Interrupt" under an approval would offer keys that do not answer.

Textual's footer rebuilds all its keys (~15-65 widgets) whenever its screen's bindings may have
changed: each focus move, each selection; and each key it builds is restyled twice more as it
mounts (its ``compact`` starts True, then is bound to the footer's). This one rebuilds only when
the keys it would show changed, and only when it is in sight, and builds each key with the
footer's ``compact`` already set. For that it reaches past Textual's public API:
``FooterKey`` (only in the private ``textual.widgets._footer``) and ``Footer._bindings_ready``
(``tests/ui/test_textual_private.py`` fails first if Textual renames one).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.screen import ModalScreen, Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

if TYPE_CHECKING:
    from textual.app import ComposeResult

Shown = tuple[tuple[object, ...], ...]


class ScreenFooter(Footer):
    """Textual's footer, hidden while a modal is on top of its screen."""

    _shown: Shown | None = None  # the keys it lists (or is about to)
    _stale = False  # its keys changed while it was out of sight

    def on_mount(self) -> None:
        self.app.screen_change_signal.subscribe(self, self._follow)
        self._follow(self.app.screen)  # a modal pushed before this footer mounted covers it too

    def _follow(self, top: Screen[object]) -> None:
        self.display = top is self.screen or not isinstance(top, ModalScreen)
        if self.display and self._stale:
            self._stale = False
            self.bindings_changed(self.screen)

    def _keys(self) -> Shown:
        """What the footer would list now."""
        return tuple(
            (binding.key, binding.description, binding.action, binding.group, enabled, tooltip)
            for _node, binding, enabled, tooltip in self.screen.active_bindings.values()
            if binding.show
        )

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen and self.app.app_focus:
            if self._bindings_ready and not self.display:
                self._stale = True  # rebuilt once a modal no longer covers it
                return
            keys = self._keys()
            if self._bindings_ready and keys == self._shown:
                return  # listed already, or about to be
            self._shown = keys
        super().bindings_changed(screen)

    def compose(self) -> ComposeResult:
        compact = self.compact
        for widget in super().compose():
            # each key but the palette's is bound to the footer's compact: set it so, no restyles
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                widget.set_reactive(FooterKey.compact, compact)
            yield widget

"""When the app's garbage is collected: between the operator's keys, not during them.

A screen that closes leaves its widgets behind as reference cycles (10,000–25,000 objects:
each line a widget drew is a ``Strip`` holding seven caches). Only the collector's full pass
frees them, and Python starts that pass by itself once enough has piled up, wherever the app
happens to be: usually in the middle of the next key's work, where a pass over everything
the app holds (~150,000 objects at 50 runs: 100–250 ms) made 1 press in 50 miss the 0.3 s
an operator's key has (``benchmarks/key_open.py``). So once the operator is back on the main
screen and its frame is drawn, the app runs that pass itself, while they read; the next key
meets a collector with nothing pending.
"""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen
    from textual.timer import Timer

# seconds on the main screen before the pass: after the close's frame, before a human's next key
COLLECT_AFTER_S = 0.15


class Collector:
    """Runs a full collection shortly after each return to the main screen."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self.timer: Timer | None = None
        self.passes = 0  # full passes run here (tests read it)
        app.screen_change_signal.subscribe(app, self._screen_changed)

    def _screen_changed(self, screen: Screen[Any]) -> None:
        if len(self.app.screen_stack) != 1:
            return  # a screen opened: the pass waits for the operator to come back
        if self.timer is None:
            self.timer = self.app.set_timer(COLLECT_AFTER_S, self._collect, name="collect")
        else:
            self.timer.reset()

    def _collect(self) -> None:
        self.timer = None
        if len(self.app.screen_stack) != 1:
            return  # another screen opened meanwhile: its close schedules the pass again
        gc.collect()
        self.passes += 1

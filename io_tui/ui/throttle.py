"""``Throttle``: call an action at most once per interval, always with the latest state.

A request when the last call is older than the interval runs the action on the next loop turn
(requests in the same turn fold into it); a request sooner runs it once at the end of the
interval. ``now=True`` skips the wait (a finished run's transcript, say).
"""

from __future__ import annotations

from collections.abc import Callable
from time import monotonic

from textual.message_pump import MessagePump
from textual.timer import Timer


class Throttle:
    def __init__(self, owner: MessagePump, interval: float, action: Callable[[], object]) -> None:
        self.owner = owner
        self.interval = interval
        self.action = action
        self._pending = False
        self._timer: Timer | None = None
        self._last = float("-inf")

    def __call__(self, *, now: bool = False) -> None:
        if self._pending and not now:
            return
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._pending = True
        wait = 0.0 if now else self._last + self.interval - monotonic()
        if wait > 0:
            self._timer = self.owner.set_timer(wait, self._fire)
        else:
            self.owner.call_later(self._fire)

    def _fire(self) -> None:
        if not self._pending:
            return  # a call already ran it (``now`` after a scheduled turn)
        self._pending = False
        self._timer = None
        self._last = monotonic()
        self.action()

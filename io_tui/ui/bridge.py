"""The seam between the harness and the app: events become batched messages, asks become Futures.

``BridgeSink.emit`` is synchronous and never blocks: it appends the event to the app's
``EventPump``, which posts everything gathered since its last post as one immutable
``RunEventsReceived`` batch, at most once per ``interval`` (leading edge: the first event after a
quiet spell goes out on the next loop turn). One message per tick, not one per event: the message
pump's per-message cost was the first bottleneck at thousands of events a second.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Any

from textual.app import App

from io_tui.core.events import RunEvent
from io_tui.ui.messages import RunEventsReceived

DEFAULT_INTERVAL = 0.1  # seconds: at most ~10 batches (and repaints) a second


class EventPump:
    """Gathers the events of every run in the app; posts them in batches (``RunEventsReceived``).

    Producers only append to a list and maybe arm one timer; the app's handler receives a tuple
    it owns. A producer in another thread hands its event to the app's loop.
    """

    def __init__(self, app: App[Any], interval: float = DEFAULT_INTERVAL) -> None:
        self.app = app
        self.interval = interval
        self._buffer: list[RunEvent] = []
        self._armed = False
        self._last_post = float("-inf")

    def put(self, event: RunEvent) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a producer in another thread: hand the event to the app's loop
            self.app.call_from_thread(self.put, event)
            return
        self._buffer.append(event)
        if self._armed:
            return
        self._armed = True
        wait = self._last_post + self.interval - loop.time()
        if wait > 0:
            loop.call_later(wait, self._post, loop)
        else:
            loop.call_soon(self._post, loop)

    def _post(self, loop: asyncio.AbstractEventLoop) -> None:
        self._armed = False
        events, self._buffer = tuple(self._buffer), []
        if events:
            self._last_post = loop.time()
            self.app.post_message(RunEventsReceived(events))


_PUMPS: weakref.WeakKeyDictionary[App[Any], EventPump] = weakref.WeakKeyDictionary()


def pump_of(app: App[Any]) -> EventPump:
    """The app's one pump (``IoApp.event_pump``; any other app gets one on first use)."""
    pump = getattr(app, "event_pump", None)
    if isinstance(pump, EventPump):
        return pump
    if app not in _PUMPS:
        _PUMPS[app] = EventPump(app)
    return _PUMPS[app]


class BridgeSink:
    """An EventSink that hands every event to the app's ``EventPump`` (batched messages)."""

    def __init__(self, app: App[Any], on_run_id: Callable[[int], None] | None = None) -> None:
        self.app = app
        self.pump = pump_of(app)
        self.run_id: int | None = None
        self._on_run_id = on_run_id

    def emit(self, event: RunEvent) -> None:
        if self.run_id is None:
            self.run_id = event.run_id
            if self._on_run_id is not None:
                self._on_run_id(event.run_id)
        self.pump.put(event)

"""The seam between the harness and the app: events become batched messages, asks become Futures.

``BridgeSink.emit`` is synchronous and never blocks: it appends the event to the app's
``EventPump``, which posts everything gathered so far as one immutable ``RunEventsReceived``
batch. One batch is in flight at a time: the next goes out when the app reports the previous one
applied and painted (``delivered``). A quiet app shows an event on the next loop turn; a busy one
gets bigger batches, not a longer queue — the batch size follows what the app can paint, so an
event waits at most for the frame in progress and its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.app import App

from io_tui.core.events import RunEvent
from io_tui.ui.messages import RunEventsReceived


class EventPump:
    """Gathers the events of every run in the app; posts them in batches (``RunEventsReceived``).

    Producers only append to a list and maybe schedule one post; the app's handler receives a
    tuple it owns and calls ``delivered`` once the batch is on screen. A producer in another
    thread hands its event to the app's loop.
    """

    def __init__(self, app: App[Any]) -> None:
        self.app = app
        self._buffer: list[RunEvent] = []
        self._scheduled = False
        self._in_flight = False

    def put(self, event: RunEvent) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a producer in another thread: hand the event to the app's loop
            self.app.call_from_thread(self.put, event)
            return
        self._buffer.append(event)
        self._schedule(loop)

    def delivered(self) -> None:
        """The app has applied and painted the batch in flight: the next one may go."""
        self._in_flight = False
        if self._buffer:
            self._schedule(asyncio.get_running_loop())

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._scheduled or self._in_flight:
            return
        self._scheduled = True
        loop.call_soon(self._post)

    def _post(self) -> None:
        self._scheduled = False
        events, self._buffer = tuple(self._buffer), []
        if events:
            self._in_flight = True
            self.app.post_message(RunEventsReceived(events))


class BridgeSink:
    """An EventSink that hands every event to the app's ``EventPump`` (batched messages)."""

    def __init__(self, pump: EventPump, on_run_id: Callable[[int], None] | None = None) -> None:
        self.pump = pump
        self.run_id: int | None = None
        self._on_run_id = on_run_id

    def emit(self, event: RunEvent) -> None:
        if self.run_id is None:
            self.run_id = event.run_id
            if self._on_run_id is not None:
                self._on_run_id(event.run_id)
        self.pump.put(event)

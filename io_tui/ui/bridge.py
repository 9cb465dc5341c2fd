"""The seam between the harness and the app: events become batched messages, asks become Futures.

``BridgeSink.emit`` is synchronous and never blocks: it appends the event to the app's
``EventPump``, which posts everything gathered so far as one immutable ``RunEventsReceived``
batch. One batch is in flight at a time: the next goes out when the app reports the previous one
applied (``applied``), and no sooner than ``HOLD`` after it. A quiet app shows an event at its
next frame; a busy one gets bigger batches, not a longer queue. Events that come while a frame
is awaited are applied before it and painted with it (waiting for the previous batch's paint
held them a whole frame longer), and the hold keeps a flood to a few batches a frame rather than
one per loop turn, each with its repaint bookkeeping (``benchmarks/ui_load.py``: ingestion
~5,000 events/s without it, 15,000-46,000 with it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol

from textual.app import App

from io_tui.core import RunEvent
from io_tui.ui.messages import RunEventsReceived

HOLD = 0.004  # seconds: batches go out at most this often (a quarter of a 60 Hz frame)


class Clock(Protocol):
    """The time and the timers the pump posts by: the running loop's (``asyncio``), or a test's."""

    def time(self) -> float: ...

    def call_soon(self, callback: Callable[[], object]) -> object: ...

    def call_later(self, delay: float, callback: Callable[[], object]) -> object: ...


class EventPump:
    """Gathers the events of every run in the app; posts them in batches (``RunEventsReceived``).

    Producers only append to a list and maybe schedule one post; the app's handler receives a
    tuple it owns and calls ``applied`` once the batch is folded into its views. A producer in
    another thread hands its event to the app's loop. ``clock``: the loop's by default.
    """

    def __init__(self, app: App[Any], clock: Clock | None = None) -> None:
        self.app = app
        self.clock = clock
        self._buffer: list[RunEvent] = []
        self._scheduled = False
        self._in_flight = False
        self._posted_at = -HOLD
        # run id → the time of the newest event a run host here gave (not the store's copies):
        # what the store follower (``ui.live``) must not show a second time
        self.hosted_at: dict[int, float] = {}

    def put(self, event: RunEvent, *, stored: bool = False) -> None:
        """``stored``: read back from the store (another process's run), not from a host."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a producer in another thread: hand the event to the app's loop
            self.app.call_from_thread(self.put, event)
            return
        if not stored and event.at > self.hosted_at.get(event.run_id, 0.0):
            self.hosted_at[event.run_id] = event.at
        self._buffer.append(event)
        self._schedule(self.clock or loop)

    def applied(self) -> None:
        """The app has applied the batch in flight: the next one may go."""
        self._in_flight = False
        if self._buffer:
            self._schedule(self.clock or asyncio.get_running_loop())

    def _schedule(self, clock: Clock) -> None:
        if self._scheduled or self._in_flight:
            return
        self._scheduled = True
        wait = self._posted_at + HOLD - clock.time()
        if wait > 0:
            clock.call_later(wait, self._post)
        else:
            clock.call_soon(self._post)

    def _post(self) -> None:
        self._scheduled = False
        self._posted_at = (self.clock or asyncio.get_running_loop()).time()
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

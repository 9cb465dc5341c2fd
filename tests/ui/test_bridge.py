"""The event pump: one batch in flight, held apart; the next carries all that came meanwhile.
A fake clock stands for the loop's time and timers: time passes only when the test says so."""

from __future__ import annotations

from collections.abc import Callable

from io_tui.core.events import EventKind, RunEvent
from io_tui.ui.bridge import HOLD, BridgeSink, EventPump
from io_tui.ui.messages import RunEventsReceived


class PostBox:
    """Stands in for the app: records what the pump posts."""

    def __init__(self) -> None:
        self.posted: list[RunEventsReceived] = []

    def post_message(self, message: RunEventsReceived) -> bool:
        self.posted.append(message)
        return True


class FakeClock:
    """The loop's ``time``, ``call_soon`` and ``call_later``; ``turn`` runs what is due."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[tuple[float, Callable[[], object]]] = []

    def time(self) -> float:
        return self.now

    def call_soon(self, callback: Callable[[], object]) -> object:
        return self.call_later(0.0, callback)

    def call_later(self, delay: float, callback: Callable[[], object]) -> object:
        self.timers.append((self.now + delay, callback))
        return None

    def turn(self, seconds: float = 0.0) -> None:
        """Let ``seconds`` pass, running every callback due by then, in order."""
        self.now += seconds
        due = sorted((t for t in self.timers if t[0] <= self.now), key=lambda t: t[0])
        self.timers = [t for t in self.timers if t[0] > self.now]
        for _, callback in due:
            callback()


def _event(run_id: int, step: int) -> RunEvent:
    return RunEvent(run_id=run_id, kind=EventKind.TEXT_DELTA, step=step, detail={})


def _batches(box: PostBox) -> list[list[int]]:
    return [[e.step for e in m.events] for m in box.posted]


async def test_one_batch_in_flight_held_apart_and_nothing_lost() -> None:
    box, clock = PostBox(), FakeClock()
    pump = EventPump(box, clock)  # type: ignore[arg-type]
    seen: list[int] = []
    sink = BridgeSink(pump, on_run_id=seen.append)
    for step in (1, 2, 3):
        sink.emit(_event(7, step))
    assert box.posted == []  # posted on the next loop turn, not from inside emit
    clock.turn()
    assert _batches(box) == [[1, 2, 3]]
    assert seen == [7]

    for step in (4, 5):  # the app has not applied the first batch yet
        sink.emit(_event(7, step))
    pump.applied()  # now it has, at once
    clock.turn()
    assert len(box.posted) == 1  # applied, but within the hold of the first post
    clock.turn(HOLD)
    assert _batches(box) == [[1, 2, 3], [4, 5]]

    sink.emit(_event(7, 6))  # while [4, 5] is in flight, however long it takes
    clock.turn(HOLD * 10)
    assert len(box.posted) == 2
    pump.applied()
    clock.turn()
    assert _batches(box)[-1] == [6]

    pump.applied()  # nothing waiting: nothing posted
    clock.turn(HOLD * 2)
    assert len(box.posted) == 3
    sink.emit(_event(7, 7))  # a quiet pump posts on the next loop turn
    clock.turn()
    assert _batches(box)[-1] == [7]

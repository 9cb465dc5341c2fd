"""The event pump: one batch in flight, held apart; the next carries all that came meanwhile."""

from __future__ import annotations

import asyncio

from io_tui.core.events import EventKind, RunEvent
from io_tui.ui import bridge
from io_tui.ui.bridge import BridgeSink, EventPump
from io_tui.ui.messages import RunEventsReceived


class PostBox:
    """Stands in for the app: records what the pump posts."""

    def __init__(self) -> None:
        self.posted: list[RunEventsReceived] = []

    def post_message(self, message: RunEventsReceived) -> bool:
        self.posted.append(message)
        return True


def _event(run_id: int, step: int) -> RunEvent:
    return RunEvent(run_id=run_id, kind=EventKind.TEXT_DELTA, step=step, detail={})


async def test_one_batch_in_flight_held_apart_and_nothing_lost(monkeypatch) -> None:
    hold = 0.05  # long enough that the steps below cannot outlast it on a slow machine
    monkeypatch.setattr(bridge, "HOLD", hold)
    box = PostBox()
    pump = EventPump(box)  # type: ignore[arg-type]
    seen: list[int] = []
    sink = BridgeSink(pump, on_run_id=seen.append)
    for step in (1, 2, 3):
        sink.emit(_event(7, step))
    await asyncio.sleep(0)
    assert [[e.step for e in m.events] for m in box.posted] == [[1, 2, 3]]
    assert seen == [7]

    for step in (4, 5):  # the app has not applied the first batch yet
        sink.emit(_event(7, step))
    await asyncio.sleep(0)
    assert len(box.posted) == 1

    pump.applied()
    await asyncio.sleep(0)
    assert len(box.posted) == 1  # applied, but within the hold of the first post
    await asyncio.sleep(hold * 2)
    assert [[e.step for e in m.events] for m in box.posted] == [[1, 2, 3], [4, 5]]

    pump.applied()  # nothing waiting: nothing posted
    await asyncio.sleep(hold * 2)
    assert len(box.posted) == 2
    sink.emit(_event(7, 6))  # a quiet pump posts on the next loop turn
    await asyncio.sleep(0)
    assert [e.step for e in box.posted[-1].events] == [6]

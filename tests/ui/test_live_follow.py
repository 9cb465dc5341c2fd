"""``ui.live.StoreFollower`` on a real store: another process's events reach the app's event pump
once each, in order, past the follower's cursor; a run a host here drives is shown from its
host only, also for the copies that reach the store as it ends; a batch whose read failed (the
server away a moment) is read with the next; a followed run's start does not take the selection
(it is scrolled to: ``test_runs_from_elsewhere``), its ask does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from io_tui.core import Changed, EventKind, RunEvent, Store
from io_tui.ui.bridge import EventPump
from io_tui.ui.live import StoreFollower
from io_tui.ui.messages import RunEventsReceived
from io_tui.ui.run_board import RunBoard


class Posted:
    """Where the pump posts its batches (the app, in the cockpit)."""

    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def post_message(self, message: Any) -> bool:
        assert isinstance(message, RunEventsReceived)
        self.events.extend(message.events)
        return True


async def drained(pump: EventPump) -> None:
    for _ in range(5):  # the pump posts on the loop's next turns
        await asyncio.sleep(0.01)
        pump.applied()


async def follower(tmp_path, live: set[int]):
    store = await Store.open(tmp_path / "store.db")
    posted = Posted()
    pump = EventPump(posted)  # type: ignore[arg-type]
    board = RunBoard()

    async def changed(run_ids: list[int] | None) -> None:
        return None

    return store, posted, pump, board, StoreFollower(store, pump, board, live.__contains__, changed)


async def run_with(store: Store, *kinds: EventKind, at: float = 100.0) -> int:
    run_id = await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})
    await store.runs.add_events(
        [RunEvent(run_id, 1, kind, {}, at + n) for n, kind in enumerate(kinds)]
    )
    return run_id


async def test_another_process_events_are_taken_once_in_order(tmp_path) -> None:
    store, posted, pump, board, follow = await follower(tmp_path, live=set())
    try:
        run_id = await run_with(store, EventKind.RUN_STARTED, EventKind.TOOL_CALLED)
        batch = Changed(await store.live.moved_since(0))
        assert await follow.take_events(batch) == 2
        assert await follow.take_events(batch) == 0  # the cursor is past them
        await store.runs.add_events([RunEvent(run_id, 1, EventKind.STEP_COMMITTED, {}, 200.0)])
        assert await follow.take_events(Changed(await store.live.moved_since(0))) == 1
        await drained(pump)
        assert [e.kind for e in posted.events] == [
            EventKind.RUN_STARTED, EventKind.TOOL_CALLED, EventKind.STEP_COMMITTED,
        ]  # fmt: skip
        assert board.followed == {run_id}
    finally:
        await store.close()


async def test_the_operators_audit_is_not_a_run(tmp_path) -> None:
    """Events of run 0 (a memory edit, a cancel: the operator's audit) are no run's: the board
    never gets a run 0 (the palette listed "#0", a run without goal or row)."""
    store, posted, pump, board, follow = await follower(tmp_path, live=set())
    try:
        await store.runs.add_events(
            [
                RunEvent(0, 0, EventKind.MEMORY, {"op": "set", "actor": "operator"}, 100.0),
                RunEvent(0, 0, EventKind.RUN_CANCELLED, {"op": "cancel"}, 101.0),
            ]
        )
        run_id = await run_with(store, EventKind.RUN_STARTED)
        assert await follow.take_events(Changed(await store.live.moved_since(0))) == 1
        await drained(pump)
        assert [e.run_id for e in posted.events] == [run_id]
        assert board.followed == {run_id}
    finally:
        await store.close()


async def test_a_run_a_host_here_drives_is_never_shown_from_the_store(tmp_path) -> None:
    hosted: set[int] = set()
    store, posted, pump, _board, follow = await follower(tmp_path, live=hosted)
    try:
        run_id = await run_with(store, EventKind.RUN_STARTED, at=100.0)
        hosted.add(run_id)
        pump.put(RunEvent(run_id, 1, EventKind.RUN_STARTED, {}, 100.0))  # from its host
        assert await follow.take_events(Changed(await store.live.moved_since(0))) == 0
        # the last events reach the store as the host lets the run go: shown by the host
        pump.put(RunEvent(run_id, 1, EventKind.RUN_FINISHED, {}, 150.0))
        await store.runs.add_events([RunEvent(run_id, 1, EventKind.RUN_FINISHED, {}, 150.0)])
        hosted.discard(run_id)
        assert await follow.take_events(Changed(await store.live.moved_since(0))) == 0
        # a later resume by another process: shown from the store
        await store.runs.add_events([RunEvent(run_id, 2, EventKind.RUN_RESUMED, {}, 300.0)])
        assert await follow.take_events(Changed(await store.live.moved_since(0))) == 1
        await drained(pump)
        kinds = [e.kind for e in posted.events]
        assert kinds == [EventKind.RUN_STARTED, EventKind.RUN_FINISHED, EventKind.RUN_RESUMED]
    finally:
        await store.close()


def test_a_followed_run_start_takes_no_selection_its_ask_does() -> None:
    board = RunBoard()
    board.followed.add(1)
    board.apply([RunEvent(1, 0, EventKind.RUN_STARTED, {"goal": "g"})])
    board.apply([RunEvent(2, 0, EventKind.RUN_STARTED, {"goal": "mine"})])
    assert not board.runs[1].wants_attention
    assert board.runs[1].wants_sight  # scrolled into view once the operator is idle
    assert board.runs[2].wants_attention and not board.runs[2].wants_sight  # started here
    board.apply([RunEvent(1, 1, EventKind.APPROVAL_REQUESTED, {})])
    assert board.runs[1].wants_attention


async def test_a_batch_whose_read_failed_is_read_with_the_next(tmp_path) -> None:
    from io_tui.core import StoreError

    store, *_, follow = await follower(tmp_path, live=set())
    try:
        await run_with(store, EventKind.RUN_STARTED, EventKind.TOOL_CALLED)
        batch = Changed(await store.live.moved_since(0))
        read = follow._read

        async def away(cursors):  # the server gone a moment (a restart, a failover)
            raise StoreError("store: server closed the connection")

        follow._read = away
        with pytest.raises(StoreError):
            await follow.take_events(batch)
        follow._read = read
        assert await follow.take_events(Changed()) == 2  # nothing new announced: still read
        assert await follow.take_events(Changed()) == 0
    finally:
        await store.close()

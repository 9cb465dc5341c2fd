"""The store's listen API (``store.live``) on both backends: on PostgreSQL a write by another
connection is heard through LISTEN/NOTIFY (run id and newest event id) and its events read back
from their table; a listener whose connection is cut catches up in its fallback sweep and
listens again; a queue insert or a decision wakes a waiting worker. On SQLite the same API is a
poll."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from io_tui.core import Decision, EventKind, RunEvent, Store
from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.authority.policy import Act
from io_tui.core.store.live import Changed, Follow

WAIT = 30  # seconds a test waits for what it is owed before failing (never a measurement)


@pytest.fixture
async def two(store_on_both):
    """Two stores on one location: ``listener`` follows, ``writer`` writes (another process's
    connection, as far as the server can tell)."""
    listener = await Store.open(store_on_both)
    writer = await Store.open(store_on_both)
    try:
        yield listener, writer
    finally:
        await writer.close()
        await listener.close()


async def new_run(store: Store, goal: str = "g") -> int:
    return await store.runs.create(goal=goal, workspace="/w", contract={}, provider={}, policy={})


async def add(store: Store, run_id: int, *kinds: EventKind) -> None:
    await store.runs.add_events(
        [RunEvent(run_id, 1, kind, {"n": i}) for i, kind in enumerate(kinds)]
    )


async def next_with(follow: Follow, run_id: int, seq: int) -> Changed:
    """The batches until one says ``run_id`` reached ``seq``."""
    async with asyncio.timeout(WAIT):
        while True:
            changed = await follow.next()
            if changed.runs.get(run_id, 0) >= seq:
                return changed


async def newest_of(store: Store, run_id: int) -> int:
    row = await store.db.fetchone("SELECT MAX(id) FROM events WHERE run_id = ?", (run_id,))
    assert row is not None
    return int(row[0])


async def test_events_written_elsewhere_are_announced_and_read_from_their_table(two) -> None:
    listener, writer = two
    pg = listener.live.notifies
    # on PostgreSQL the sweep is far off: what arrives came by NOTIFY; SQLite has only the poll
    async with listener.live.follow(0.05, fallback_s=600 if pg else None) as follow:
        assert follow.baseline == 0
        run_id = await new_run(writer)
        await add(writer, run_id, EventKind.RUN_STARTED, EventKind.TOOL_CALLED)
        seq = await newest_of(writer, run_id)
        changed = await next_with(follow, run_id, seq)
        assert changed.everything is not pg
        assert changed.runs[run_id] == seq
        read = await listener.live.events_after({run_id: follow.baseline})
        assert [row.kind for _, row in read] == ["run_started", "tool_called"]
        assert read[-1][0] == seq
        # the same, read on the listening connection (PostgreSQL) or the store's (SQLite)
        assert await follow.events_after({run_id: follow.baseline}) == read
        # a cursor past them reads nothing twice
        assert await listener.live.events_after({run_id: seq}) == []


async def test_a_status_change_and_an_ask_are_announced(two) -> None:
    listener, writer = two
    if not listener.live.notifies:
        pytest.skip("SQLite announces nothing: its poll reads the rows")
    run_id = await new_run(writer)
    async with listener.live.follow(fallback_s=600) as follow:
        await writer.runs.set_status(run_id, "paused", "awaiting_approval")
        assert (await next_with(follow, run_id, 0)).runs == {run_id: 0}
        await writer.approvals.create(_request(run_id))
        assert (await next_with(follow, run_id, 0)).runs == {run_id: 0}


async def test_a_listener_cut_off_catches_up_in_its_sweep_and_listens_again(
    two, pg_cluster
) -> None:
    listener, writer = two
    if not listener.live.notifies:
        pytest.skip("PostgreSQL only: a listening connection")
    run_id = await new_run(writer)
    async with listener.live.follow(fallback_s=600) as follow:
        conn = follow._listener.conn
        assert conn is not None
        # the server drops the listening connection; an event is written meanwhile
        await writer.db.fetchone("SELECT pg_terminate_backend(?)", (conn.info.backend_pid,))
        await add(writer, run_id, EventKind.RUN_STARTED)
        first = await newest_of(writer, run_id)
        changed = await next_with(follow, run_id, first)
        assert changed.everything  # found by the sweep the lost connection set off
        # the next event: by the sweep made on listening again, or by NOTIFY once listening
        await add(writer, run_id, EventKind.STEP_COMMITTED)
        await next_with(follow, run_id, await newest_of(writer, run_id))
        # listening again now: this one comes by NOTIFY
        await add(writer, run_id, EventKind.RUN_FINISHED)
        changed = await next_with(follow, run_id, await newest_of(writer, run_id))
        assert not changed.everything


async def test_a_queue_insert_and_a_decision_wake_a_waiting_worker(two, tmp_path: Path) -> None:
    listener, writer = two
    pg = listener.live.notifies
    async with listener.live.queue_wakeups() as wakeup:
        assert await wakeup.wait(0.01) is False  # nothing yet (and SQLite: never)
        await writer.queue.enqueue(
            goal="q", workspace=str(tmp_path), contract={}, provider={}, policy={}
        )
        assert await wakeup.wait(WAIT if pg else 0.01) is pg
        run_id = await new_run(writer)
        request = await writer.approvals.create(_request(run_id))
        assert await wakeup.wait(0.01) is False  # an ask is nothing to claim
        assert await writer.approvals.record_decision(request.id, Decision.approve())
        assert await wakeup.wait(WAIT if pg else 0.01) is pg
        # a second decider changes nothing and wakes nobody
        assert not await writer.approvals.record_decision(request.id, Decision.deny())
        assert await wakeup.wait(0.01) is False


def _request(run_id: int) -> ApprovalRequest:
    return ApprovalRequest(
        id=0, run_id=run_id, step=1, call_id="c1", tool="write_file", arguments={},
        act=Act.WRITE, target="a.txt", content="x", rule="r", layer="l", workspace="/w",
    )  # fmt: skip

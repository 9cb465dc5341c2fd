"""A wait for a request's decision (``store.approvals.wait_decided``), made in another process,
on both backends: PostgreSQL announces the decision and the wait hears it (its reads are far
apart, so only the announcement can end it in time); SQLite reads again every ``poll_s``. A
request decided before the wait began ends it at its first read; a timeout ends it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from io_tui.core import Decision, Store
from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.authority.policy import Act

WAIT = 30  # seconds a test waits for what it is owed before failing (never a measurement)
FAR = 600.0  # a read interval no test lives to see


@pytest.fixture
async def two(store_on_both):
    """Two stores on one location: ``waiter`` waits, ``decider`` decides (another process's
    connection, as far as the database can tell)."""
    waiter = await Store.open(store_on_both)
    decider = await Store.open(store_on_both)
    try:
        yield waiter, decider
    finally:
        await decider.close()
        await waiter.close()


async def asked(store: Store) -> int:
    """A pending request of a new run (its id)."""
    run_id = await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})
    request = await store.approvals.create(
        ApprovalRequest(
            id=0, run_id=run_id, step=1, call_id="c1", tool="write_file", arguments={},
            act=Act.WRITE, target="a.txt", content="x", rule="", layer="", workspace="/w",
        )
    )  # fmt: skip
    return request.id


class Reads:
    """Counts ``store.approvals.get`` calls (each of the wait's reads) and says when the first
    has been made."""

    def __init__(self, store: Store) -> None:
        self.count = 0
        self.first = asyncio.Event()
        read = store.approvals.get

        async def counted(approval_id: int) -> Any:
            record = await read(approval_id)
            self.count += 1
            self.first.set()
            return record

        store.approvals.get = counted  # type: ignore[method-assign]


def slow_reads(store: Store) -> dict[str, float]:
    """The wait's read intervals: on PostgreSQL far apart (an announcement must end it), on
    SQLite short (its polling is what ends it)."""
    if store.live.notifies:
        return {"poll_s": FAR, "fallback_s": FAR}
    return {"poll_s": 0.05, "fallback_s": FAR}


async def test_a_decision_made_elsewhere_ends_the_wait(two) -> None:
    waiter, decider = two
    approval_id = await asked(decider)
    reads = Reads(waiter)
    waiting = asyncio.create_task(waiter.approvals.wait_decided(approval_id, **slow_reads(waiter)))
    async with asyncio.timeout(WAIT):
        await reads.first.wait()  # listening, and the request read pending
        assert not waiting.done()
        decision = Decision.deny("not that file", decided_by="bob")
        assert await decider.approvals.record_decision(approval_id, decision)
        heard = await waiting
    assert heard == decision
    if waiter.live.notifies:
        assert reads.count == 2  # the first read, and one at the announcement: no poll round


async def test_a_request_decided_before_the_wait_began_ends_it_at_once(two) -> None:
    waiter, decider = two
    approval_id = await asked(decider)
    decision = Decision.approve(decided_by="bob")
    assert await decider.approvals.record_decision(approval_id, decision)
    reads = Reads(waiter)
    async with asyncio.timeout(WAIT):
        heard = await waiter.approvals.wait_decided(approval_id, poll_s=FAR, fallback_s=FAR)
    assert heard == decision and reads.count == 1


async def test_a_wait_bounded_by_a_timeout_ends_with_it(two) -> None:
    waiter, decider = two
    approval_id = await asked(decider)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await waiter.approvals.wait_decided(approval_id, poll_s=0.05)
    record = await waiter.approvals.get(approval_id)
    assert record is not None and record.status == "pending"


async def test_a_cancel_that_denies_the_request_ends_the_wait(two) -> None:
    """The operator cancels the paused run: its pending request is denied, which ends a wait for
    it as any decision does."""
    waiter, decider = two
    approval_id = await asked(decider)
    record = await decider.approvals.get(approval_id)
    assert record is not None
    await decider.runs.set_status(record.request.run_id, "paused")
    reads = Reads(waiter)
    waiting = asyncio.create_task(waiter.approvals.wait_decided(approval_id, **slow_reads(waiter)))
    async with asyncio.timeout(WAIT):
        await reads.first.wait()
        await decider.cancels.cancel_stopped(
            [record.request.run_id], decided_by="alice", reason="the run was cancelled",
            error=lambda run_id, was: "cancelled", audit={},
        )  # fmt: skip
        heard = await waiting
    assert (heard.kind.value, heard.reason, heard.decided_by) == (
        "deny", "the run was cancelled", "alice")  # fmt: skip


async def test_a_wait_for_no_request_is_refused(store: Store) -> None:
    with pytest.raises(LookupError, match="no approval request 42"):
        await store.approvals.wait_decided(42)

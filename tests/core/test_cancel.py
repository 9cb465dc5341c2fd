"""Cancelling a run no process drives (``core/steering/cancel.py``): a paused run (its ask deferred) or an
interrupted one ends ``cancelled`` and its pending requests are denied, in one transaction, or
nothing changes; on a SQLite file and on a PostgreSQL database."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from io_tui.core.authority.approvals import Decision, DecisionKind, DeferAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.progress.keeper import ledger_of
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.run.outcome import Outcome
from io_tui.core.run.reconcile import FixedReconciler, ReconcileChoice
from io_tui.core.steering.cancel import CancelRefused, cancel_run, plan_cancel
from io_tui.core.steering.decisions import DecideError, decide, resume
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.store.cancel import NotCancellable

BY = "alice@laptop (test)"
EDIT = {
    "id": "e1",
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    return store_on_both


def spawn(call_id: str, goal: str) -> dict[str, object]:
    return {"id": call_id, "name": "spawn_agent", "arguments": {"goal": goal}}


async def paused(store: Store, workspace: Path, write_script, turns=None) -> int:
    """A run whose write was deferred: paused, awaiting approval, its request pending."""
    script = write_script(turns or [{"text": "fixing", "tool_calls": [EDIT]}, {"text": "done"}])
    harness = Harness(store=store, provider=ScriptedProvider.from_file(script),
                      approver=DeferAll(), policy=Policy())  # fmt: skip
    result = await start_run(harness, TaskContract("fix it", workspace))
    assert result.status == "paused", result
    return result.run_id


async def rows(store: Store) -> list[tuple[int, str, str | None]]:
    return [(r.id, r.status, r.outcome) for r in await store.runs.all()]


async def test_a_paused_run_is_cancelled_and_its_request_leaves_the_inbox(
    store, workspace, write_script
):
    run_id = await paused(store, workspace, write_script)
    (pending,) = await store.approvals.pending()
    log_before = await store.daily_log.lines(str(workspace))
    assert ("outcome", "awaiting_approval") in {(x.field, x.text.split(" ")[0]) for x in log_before}

    done = await cancel_run(store, run_id, by=BY)

    assert done.approvals == (pending.request.id,) and done.notes == ()
    assert done.to_json()["was"] == "paused"
    row = await store.runs.get(run_id)
    assert row is not None
    assert (row.status, row.outcome) == ("cancelled", "cancelled")
    assert row.error == "cancelled by the operator while paused"
    assert row.finished_at is not None
    assert await store.leases.holder(run_id) is None
    assert await store.approvals.pending() == []  # out of every inbox
    record = await store.approvals.get(pending.request.id)
    assert record is not None and record.decision is not None
    assert (record.status, record.decision.kind) == ("decided", DecisionKind.DENY)
    assert (record.decision.reason, record.decision.decided_by) == ("the run was cancelled", BY)
    assert record.performed == {"performed": False}
    assert (workspace / "src/app.py").read_text().endswith("return a\n")  # never written

    # the run's own events say so, and the trace and ledger read them
    trace = await build_trace(store, run_id)
    assert (trace["run"]["status"], trace["run"]["outcome"]) == ("cancelled", "cancelled")
    kinds = [(e["kind"], e["detail"].get("decision")) for e in trace["events"]]
    assert kinds[-2:] == [("approval_decided", "deny"), ("run_finished", None)]
    finished = trace["events"][-1]["detail"]
    assert finished["error"] == "cancelled by the operator while paused"
    assert (finished["was"], finished["cancelled_by"]) == ("paused", BY)
    ledger = await ledger_of(store, run_id)
    assert ledger.approvals == () and ledger.outcome == "cancelled"
    assert [(d.decision, d.reason) for d in ledger.decisions] == [("deny", "the run was cancelled")]
    # the operator's audit (run 0)
    (audit,) = [e for e in await store.trace.events(0) if e.kind == "run_cancelled"]
    assert audit.detail["by"] == BY and audit.detail["run_id"] == run_id
    assert audit.detail["runs"] == [
        {"id": run_id, "was": "paused", "approvals": [pending.request.id]}
    ]
    # the daily log: the run's one entry, now saying how it ended
    (outcome,) = [
        x.text for x in await store.daily_log.lines(str(workspace)) if x.field == "outcome"
    ]
    assert outcome.startswith("cancelled after 1 step, ")
    assert outcome.endswith(" tokens: cancelled by the operator while paused")


async def test_a_cancelled_run_is_neither_cancelled_again_nor_resumed_nor_decided(
    store, workspace, write_script
):
    run_id = await paused(store, workspace, write_script)
    (pending,) = await store.approvals.pending()
    await cancel_run(store, run_id, by=BY)
    events = len(await store.trace.events(run_id))

    with pytest.raises(CancelRefused, match=f"run {run_id} was already cancelled"):
        await cancel_run(store, run_id, by=BY)
    with pytest.raises(DecideError, match="only an interrupted or paused run resumes"):
        await resume(store, run_id, reconciler=FixedReconciler(ReconcileChoice.SKIP))
    with pytest.raises(DecideError, match=re.escape(f"already decided: denied by {BY}")):
        await decide(store, pending.request.id, Decision.approve())
    assert len(await store.trace.events(run_id)) == events
    assert await rows(store) == [(run_id, "cancelled", "cancelled")]
    with pytest.raises(CancelRefused, match="no run 9 in the store"):
        await cancel_run(store, 9, by=BY)


async def test_a_run_resumed_meanwhile_is_refused_and_nothing_changes(
    store, workspace, write_script
):
    """Between the operator's look and the cancel's transaction, someone resumed the run
    (``resume`` and a decision take its lease first): the transaction refuses it, naming who
    drives it; so does a cancel asked for after."""
    run_id = await paused(store, workspace, write_script)
    plan = await plan_cancel(store, run_id)  # what a cockpit confirms
    assert [r.id for r in plan.runs] == [run_id] and len(plan.pending) == 1
    await store.leases.acquire(run_id)  # what resume_run does first
    events = len(await store.trace.events(run_id))
    with pytest.raises(NotCancellable, match=f"run {run_id} is running, driven by pid"):
        await store.cancels.cancel_stopped(
            [run_id], decided_by=BY, reason="r", error=lambda run, was: "e", audit={}
        )
    with pytest.raises(CancelRefused, match=f"run {run_id} is running, driven by pid"):
        await cancel_run(store, run_id, by=BY)
    assert len(await store.approvals.pending()) == 1
    assert len(await store.trace.events(run_id)) == events
    assert (await store.runs.get(run_id)).status == "running"  # type: ignore[union-attr]
    assert [e for e in await store.trace.events(0) if e.kind == "run_cancelled"] == []


async def test_two_operators_cancelling_at_once_one_wins(store, workspace, write_script):
    run_id = await paused(store, workspace, write_script)
    results = await asyncio.gather(
        cancel_run(store, run_id, by="alice@a (cli)"),
        cancel_run(store, run_id, by="bob@b (io-tui)"),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, CancelRefused)]
    assert len(refused) == 1 and "already cancelled" in str(refused[0])
    finished = [e for e in await store.trace.events(run_id) if e.kind == "run_finished"]
    assert [e.detail["status"] for e in finished] == ["paused", "cancelled"]


async def test_an_interrupted_run_is_cancelled(store, workspace, write_script):
    run_id = await paused(store, workspace, write_script)
    (pending,) = await store.approvals.pending()
    await store.runs.set_status(run_id, "interrupted", "interrupted")  # as the reaper leaves it
    done = await cancel_run(store, run_id, by=BY)
    assert done.to_json()["error"] == "cancelled by the operator while interrupted"
    assert done.approvals == (pending.request.id,)
    assert await rows(store) == [(run_id, "cancelled", "cancelled")]


async def test_a_live_or_finished_run_is_not_cancelled(store, workspace, write_script):
    script = write_script([{"text": "done"}])
    harness = Harness(store=store, provider=ScriptedProvider.from_file(script),
                      approver=DeferAll(), policy=Policy())  # fmt: skip
    finished = await start_run(harness, TaskContract("say done", workspace))
    with pytest.raises(CancelRefused, match="has already ended \\(finished\\)"):
        await cancel_run(store, finished.run_id, by=BY)
    live = await store.runs.create(goal="g", workspace=str(workspace), contract={},
                                   provider={}, policy={})  # fmt: skip
    with pytest.raises(CancelRefused, match=f"run {live} is running"):
        await cancel_run(store, live, by=BY)


async def test_a_queued_run_is_cancelled_and_no_worker_takes_it(store, workspace):
    """Queued by mistake: no worker has taken it yet, so it is cancelled, and a worker's claim
    then finds nothing; it never ran, so it has no ledger and no daily log entry."""
    run_id = await store.queue.enqueue(
        goal="g", workspace=str(workspace), contract={}, provider={}, policy={}
    )
    done = await cancel_run(store, run_id, by=BY)
    assert [(r.id, r.was) for r in done.runs] == [(run_id, "queued")] and done.notes == ()
    row = await store.runs.get(run_id)
    assert row is not None and (row.status, row.outcome) == ("cancelled", "cancelled")
    assert row.error == "cancelled by the operator while queued"
    assert await store.queue.claim([]) is None
    assert await store.daily_log.lines(str(workspace)) == []


async def test_a_queue_run_a_worker_claimed_is_not_cancelled(store, workspace):
    """An interrupted queue run is a worker's to take over: once claimed it is live."""
    run_id = await store.queue.enqueue(
        goal="g", workspace=str(workspace), contract={}, provider={}, policy={}
    )
    await store.runs.set_status(run_id, "interrupted", "interrupted")
    claim = await store.queue.claim([])
    assert claim is not None and claim.entry.run_id == run_id
    with pytest.raises(CancelRefused, match="is running, driven by"):
        await cancel_run(store, run_id, by=BY)
    assert (await store.runs.get(run_id)).status == "running"  # type: ignore[union-attr]


CHAIN = [
    {"tool_calls": [spawn("s1", "fix parse")]},
    {"tool_calls": [EDIT]},  # the child's ask, deferred
    {"text": "child: fixed"},
    {"text": "parent: done"},
]


@pytest.mark.parametrize("asked", [1, 2])
async def test_a_sub_agent_chain_is_cancelled_together(store, workspace, write_script, asked):
    """Parent 1 waits on child 2, whose ask is deferred: cancelling either cancels both (they
    stop and resume together), and the child's request is denied."""
    await paused(store, workspace, write_script, CHAIN)
    assert await rows(store) == [
        (1, "paused", Outcome.AWAITING_SUB_AGENT.value),
        (2, "paused", Outcome.AWAITING_APPROVAL.value),
    ]
    (pending,) = await store.approvals.pending()
    done = await cancel_run(store, asked, by=BY)
    assert [r.id for r in done.runs] == [1, 2] and done.approvals == (pending.request.id,)
    assert await rows(store) == [(1, "cancelled", "cancelled"), (2, "cancelled", "cancelled")]
    other = 2 if asked == 1 else 1
    errors = {r.id: r.error for r in await store.runs.all()}
    assert errors[asked] == "cancelled by the operator while paused"
    assert errors[other] == f"cancelled by the operator while paused, with run {asked}"
    assert await store.approvals.pending() == []


async def test_a_chain_with_a_run_resumed_meanwhile_is_refused_whole(
    store, workspace, write_script
):
    await paused(store, workspace, write_script, CHAIN)
    await store.leases.acquire(2)
    with pytest.raises(CancelRefused, match=r"run 2 is running.*runs 1, 2 wait on each other"):
        await cancel_run(store, 1, by=BY)
    assert [s for _, s, _ in await rows(store)] == ["paused", "running"]
    assert len(await store.approvals.pending()) == 1

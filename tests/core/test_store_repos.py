"""Approvals, rules, intents and leases as the store keeps them, on both backends: what the run
loop, the inbox and resume rely on, checked repo by repo (each test runs on a SQLite file and on
a PostgreSQL database)."""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path

import pytest

from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.authority.policy import Act, Effect
from io_tui.core.contract import MemoryLimits
from io_tui.core.ledger import Observation, ObsKind
from io_tui.core.store import LeaseLost, Store
from io_tui.core.store.approvals import remembered_layer
from io_tui.core.store.intents import Intent
from io_tui.core.store.leases import LEASE_TTL_S, OWNER, Fence, RunBusy
from io_tui.core.store.notes import recalled
from io_tui.core.store.runs import StepCommit


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    return store_on_both


async def new_run(store: Store) -> int:
    return await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})


def asked(run_id: int, call_id: str = "c1") -> ApprovalRequest:
    return ApprovalRequest(
        0, run_id, 1, call_id, "write_file", {"path": "a.py", "content": "x"}, Act.WRITE,
        "a.py", "x", "ask writes", "workspace", "/w",
    )  # fmt: skip


async def test_the_first_decision_wins_and_what_was_done_is_recorded(store: Store) -> None:
    run_id = await new_run(store)
    request = await store.approvals.create(asked(run_id))
    assert request.id == 1 and request.created_at > 0
    assert [r.request.id for r in await store.approvals.pending()] == [1]
    assert await store.approvals.record_decision(1, Decision.approve("alice"))
    assert not await store.approvals.record_decision(1, Decision.deny("late", "bob"))
    await store.approvals.record_performed(1, {"wrote": 1})
    record = await store.approvals.get(1)
    assert record is not None and record.status == "decided"
    assert record.decision == Decision.approve("alice") and record.performed == {"wrote": 1}
    assert await store.approvals.pending() == []
    assert [r.request.arguments for r in await store.approvals.for_run(run_id)] == [
        {"path": "a.py", "content": "x"}
    ]


async def test_rules_are_remembered_scoped_and_revoked(store: Store) -> None:
    run_id = await new_run(store)
    kept = await store.rules.add(act=Act.READ, pattern="docs/*", scope="global", workspace=None,
                                 run_id=None)  # fmt: skip
    other = await store.rules.add(
        act=Act.WRITE, pattern="src/*", scope="workspace", workspace="/elsewhere", run_id=None
    )
    mine = await store.rules.add(act=Act.EXEC, pattern="pytest *", scope="run", workspace="/w",
                                 run_id=run_id, effect=Effect.DENY)  # fmt: skip
    layer = await store.rules.layer_for(workspace="/w", run_id=run_id)
    assert [(r.act, r.effect, r.pattern) for r in layer.rules] == [
        (Act.READ, Effect.ALLOW, "docs/*"),
        (Act.EXEC, Effect.DENY, "pytest *"),
    ]
    assert await store.rules.revoke(kept) and not await store.rules.revoke(kept)
    assert [r.id for r in await store.rules.list()] == [other, mine]
    assert [r.revoked_at is not None for r in await store.rules.list(include_revoked=True)] == [
        True, False, False,
    ]  # fmt: skip


async def test_reads_made_along_with_a_step_s_hand_offs_are_the_repos_own(store: Store) -> None:
    """A step reads its notes with its operator messages, and its calls' remembered rules in
    the transaction that commits the model's answer: each as its repo reads it alone."""
    run_id = await new_run(store)
    await store.rules.add(act=Act.READ, pattern="docs/*", scope="global", workspace=None,
                          run_id=None)  # fmt: skip
    await store.rules.add(act=Act.EXEC, pattern="make *", scope="run", workspace="/w",
                          run_id=run_id, effect=Effect.DENY)  # fmt: skip
    await store.notes.write(key="k", value="v", scope="workspace", workspace="/w", run_id=None,
                            step=None, limits=MemoryLimits())  # fmt: skip
    await store.runs.add_operator_message(run_id, "stop soon")
    taken, notes = await store.runs.take_operator_messages_with(run_id, 1, partial(recalled, "/w"))
    assert taken == ["stop soon"] and notes == await store.notes.recalled_for("/w")
    assert [n.key for n in notes[0]] == ["k"]
    assert await store.runs.take_operator_messages_with(run_id, 2, partial(recalled, "/w")) == (
        [], notes,
    )  # fmt: skip
    commit = StepCommit(1, "", (), {}, (), (), (), 1)
    done = await store.runs.commit_step(
        run_id, commit, read=partial(remembered_layer, "/w", run_id)
    )
    assert done.read == await store.rules.layer_for(workspace="/w", run_id=run_id)
    assert [r.pattern for r in done.read.rules] == ["docs/*", "make *"]


async def test_an_intent_is_open_until_its_observation_commits(store: Store) -> None:
    run_id = await new_run(store)
    first = await store.intents.begin(Intent(run_id, 1, "c1", "write_file", {"path": "a.py"},
                                             "write", "a.py",
                                             before={"exists": False, "text": None}))  # fmt: skip
    second = await store.intents.begin(Intent(run_id, 1, "c2", "read_file", {"path": "b.py"}))
    latest = await store.intents.latest(run_id, "c1")
    assert latest is not None and latest.in_flight and latest.before == {"exists": False,
                                                                         "text": None}  # fmt: skip
    observation = Observation(1, "c1", "write_file", ObsKind.WRITE, "a.py", "ok")
    commit = StepCommit(1, "", (), {}, [(observation, "ok")], [], [], 1,
                        closed_intents=[(second, "skipped")])  # fmt: skip
    await store.runs.commit_step(run_id, commit)
    rows = await store.intents.for_run(run_id)
    assert [(r.id, r.status) for r in rows] == [(first, "done"), (second, "skipped")]
    assert all(r.ended_at is not None for r in rows)


async def test_a_live_lease_refuses_a_second_driver_and_an_expired_one_is_reaped(
    store: Store,
) -> None:
    run_id = await new_run(store)
    holder = await store.leases.holder(run_id)
    assert holder is not None and holder.owner == OWNER.id
    await store.leases.renew(Fence(run_id, OWNER.id, holder.epoch))
    # another machine's process holds it, its heartbeat fresh
    await store.db.write(
        lambda conn: conn.execute(
            "UPDATE runs SET lease_owner = 'elsewhere', lease_host = 'other-host', lease_pid = 1,"
            " lease_heartbeat = ? WHERE id = ?",
            (time.time(), run_id),
        )
    )
    with pytest.raises(RunBusy, match="other-host"):
        await store.leases.acquire(run_id)
    assert await store.leases.reap() == []
    # its heartbeat stops: the lease expires and the run is interrupted
    await store.db.write(
        lambda conn: conn.execute(
            "UPDATE runs SET lease_renewed = lease_renewed - ? WHERE id = ?",
            (LEASE_TTL_S + 1, run_id),
        )
    )
    assert await store.leases.reap() == [run_id]
    run = await store.runs.get(run_id)
    assert run is not None and run.status == "interrupted"
    assert await store.leases.holder(run_id) is None
    await store.leases.acquire(run_id)
    await store.runs.set_status(run_id, "finished", "success")
    assert await store.leases.holder(run_id) is None  # a run that ends gives its lease up


async def test_the_runs_of_an_acp_session_are_found_by_their_origin(store: Store) -> None:
    def origin(session: str | None) -> dict[str, object]:
        return {"settings": {"provider": "scripted"}, "session": session}

    async def run(session: str | None, parent: int | None = None) -> int:
        return await store.runs.create(goal="g", workspace="/w", contract={}, provider={},
                                       policy={}, origin=origin(session), parent_run_id=parent)  # fmt: skip

    first = await run("io-tui-a")
    await run("io-tui-b")
    await run(None)
    await new_run(store)  # no origin at all
    await run("io-tui-a", parent=first)  # a sub-agent: not one of the session's turns
    second = await run("io-tui-a")
    assert [r.id for r in await store.runs.of_session("io-tui-a")] == [first, second]
    assert [r.origin["session"] for r in await store.runs.of_session()] == [
        "io-tui-a", "io-tui-b", "io-tui-a",
    ]  # fmt: skip


async def test_the_latest_runs_are_the_newest_top_level_ones(store: Store) -> None:
    """What the new-run dialog offers to continue from: the newest, however many the store
    holds (it read the oldest 500 and missed the ones a user wants)."""
    first = await new_run(store)
    second = await new_run(store)
    await store.runs.create(
        goal="g", workspace="/w", contract={}, provider={}, policy={}, parent_run_id=second
    )  # a sub-agent is never continued from
    third = await new_run(store)
    assert [r.id for r in await store.runs.latest(2)] == [third, second]
    assert [r.id for r in await store.runs.latest(10)] == [third, second, first]


async def test_a_take_fences_out_every_write_of_the_driver_before_it(store: Store) -> None:
    """A resume or a claim takes the next epoch: the driver that held the run before finds its
    renewal, its step commit, its intent and its status refused (``LeaseLost``), with nothing
    written, and the new owner's run as it was."""
    run_id = await new_run(store)
    first = Fence(run_id, OWNER.id, 1)
    await store.leases.renew(first)
    second = await store.leases.acquire(run_id)  # this process again: a takeover all the same
    assert second.epoch == first.epoch + 1
    commit = StepCommit(1, "late", (), {}, (), (), (), 5)
    stale = [
        store.leases.renew(first),
        store.runs.commit_step(run_id, commit, fence=first),
        store.intents.begin(Intent(run_id, 1, "c1", "run_command", {}), fence=first),
        store.runs.set_status(run_id, "failed", "failed", error="late", fence=first),
        # the ledger's revision goes in the step's transaction: refused with it
        store.runs.commit_step(run_id, commit, fence=first, progress=(1, "d1", {"n": 1})),
    ]  # fmt: skip
    for write in stale:
        with pytest.raises(LeaseLost, match=f"run {run_id}: this process no longer holds"):
            await write
    run = await store.runs.get(run_id)
    assert run is not None and (run.status, run.steps, run.error) == ("running", 0, None)
    assert await store.intents.for_run(run_id) == []
    assert await store.progress.latest(run_id) is None
    assert await store.runs.commit_step(run_id, commit, fence=second) == (None, None)
    revision, _ = await store.runs.commit_step(
        run_id, commit, fence=second, progress=(1, "d1", {"n": 1})
    )
    latest = await store.progress.latest(run_id)
    assert revision == 1 and latest is not None
    assert (latest.revision, latest.step, latest.digest, latest.ledger) == (
        1, 1, "d1", {"n": 1, "revision": 1},
    )  # fmt: skip
    # the same digest again: no new revision, the newest one's number
    committed = await store.runs.commit_step(run_id, commit, fence=second, progress=(1, "d1", {}))
    assert committed.revision == 1
    await store.runs.set_status(run_id, "finished", "success", fence=second)
    run = await store.runs.get(run_id)
    assert run is not None and (run.status, run.steps) == ("finished", 1)
    # the run ended: nobody holds it, and the old fence says so
    with pytest.raises(LeaseLost, match="nobody holds it"):
        await store.leases.renew(second)

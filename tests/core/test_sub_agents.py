"""A sub-agent that pauses pauses its parent with it; deciding, or resuming either, continues
both, the child first, under the same run ids (the run loop and ``decide`` on a real store)."""

from __future__ import annotations

from pathlib import Path

import pytest

from io_tui.core.authority.approvals import ApproveAll, Decision, DeferAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.run.outcome import Outcome
from io_tui.core.run.reconcile import FixedReconciler, ReconcileChoice
from io_tui.core.steering.decisions import DecideError, decide, resume
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

EDIT = {
    "id": "e1",
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


def spawn(call_id: str, goal: str, **arguments: object) -> dict[str, object]:
    return {"id": call_id, "name": "spawn_agent", "arguments": {"goal": goal, **arguments}}


def harness(store: Store, script: Path, approver=None) -> Harness:
    return Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=approver or DeferAll(),
        policy=Policy(),  # write asks
    )


async def statuses(store: Store) -> list[tuple[int, str, str | None]]:
    return [(r.id, r.status, r.outcome) for r in await store.runs.all()]


async def test_a_deferred_ask_in_a_child_pauses_its_parent_and_decide_resumes_both(
    store, workspace, write_script
):
    script = write_script(
        [
            {"tool_calls": [spawn("s1", "fix parse")]},
            {"tool_calls": [EDIT]},  # the child's ask, deferred
            {"text": "child: fixed parse"},
            {"text": "parent: done"},
        ]
    )
    first = await start_run(harness(store, script), TaskContract("x", workspace))
    assert (first.status, first.outcome, first.waiting_on) == (
        "paused",
        Outcome.AWAITING_SUB_AGENT,
        2,
    )
    assert await statuses(store) == [
        (1, "paused", "awaiting_sub_agent"),
        (2, "paused", "awaiting_approval"),
    ]
    trace = await build_trace(store, 1)
    assert trace["run"]["waiting_on"] == 2
    (step,) = trace["steps"]  # the parent took no further step
    assert step["observations"] == []  # no failed tool result
    assert step["decision"]["awaiting_sub_agent"] == 2
    assert step["sub_agents"] == {"s1": 2}
    finished = [e for e in trace["events"] if e["kind"] == "run_finished"]
    assert finished[-1]["detail"]["waiting_on"] == 2

    (pending,) = await store.approvals.pending()
    assert pending.request.run_id == 2
    decided = await decide(store, pending.request.id, Decision.approve())
    assert decided.result is not None
    assert (decided.result.run_id, decided.result.outcome) == (1, Outcome.FINISHED)
    assert await statuses(store) == [(1, "finished", "finished"), (2, "finished", "finished")]
    assert (workspace / "src/app.py").read_text().endswith("return x\n")
    trace = await build_trace(store, 1)
    (obs,) = trace["steps"][0]["observations"]
    assert not obs["is_error"] and "child: fixed parse" in obs["text"]
    assert trace["steps"][0]["decision"]["awaiting_sub_agent"] is None
    assert trace["run"]["waiting_on"] is None
    assert trace["steps"][-1]["text"] == "parent: done"
    child = [e["kind"] for e in (await build_trace(store, 2))["events"]]
    assert child.count("run_resumed") == 1 and child.count("run_finished") == 2  # the same run


async def test_resuming_the_parent_of_an_undecided_child_leaves_both_paused(
    store, workspace, write_script
):
    script = write_script([{"tool_calls": [spawn("s1", "fix")]}, {"tool_calls": [EDIT]}])
    await start_run(harness(store, script), TaskContract("x", workspace))
    again = await resume(store, 1, reconciler=FixedReconciler(ReconcileChoice.SKIP))
    assert (again.run_id, again.outcome, again.waiting_on) == (1, Outcome.AWAITING_SUB_AGENT, 2)
    assert await statuses(store) == [
        (1, "paused", "awaiting_sub_agent"),
        (2, "paused", "awaiting_approval"),
    ]
    assert len(await store.approvals.pending()) == 1
    assert len(await store.runs.all()) == 2  # no second child for the same call


async def test_a_grandchild_pauses_and_resumes_its_whole_chain(store, workspace, write_script):
    script = write_script(
        [
            {"tool_calls": [spawn("s1", "delegate the fix")]},
            {"tool_calls": [spawn("s2", "fix parse")]},
            {"tool_calls": [EDIT]},
            {"text": "grandchild: fixed"},
            {"text": "child: the grandchild fixed it"},
            {"text": "root: done"},
        ]
    )
    await start_run(harness(store, script), TaskContract("x", workspace))
    assert await statuses(store) == [
        (1, "paused", "awaiting_sub_agent"),
        (2, "paused", "awaiting_sub_agent"),
        (3, "paused", "awaiting_approval"),
    ]
    assert [(await build_trace(store, i))["run"]["waiting_on"] for i in (1, 2, 3)] == [2, 3, None]
    # resuming the middle run resumes the chain from its outermost run, deepest first
    (pending,) = await store.approvals.pending()
    await store.approvals.record_decision(pending.request.id, Decision.approve())
    result = await resume(store, 2, reconciler=FixedReconciler(ReconcileChoice.SKIP))
    assert (result.run_id, result.outcome) == (1, Outcome.FINISHED)
    assert [s for _, s, _ in await statuses(store)] == ["finished"] * 3
    root = await build_trace(store, 1)
    assert "the grandchild fixed it" in root["steps"][0]["observations"][0]["text"]
    assert root["steps"][-1]["text"] == "root: done"


async def test_a_grandchild_keeps_its_parents_narrowing(store, workspace, write_script):
    read_only = [{"act": "write", "effect": "deny", "pattern": "*"}]
    script = write_script(
        [
            {"tool_calls": [spawn("s1", "look", rules=read_only)]},
            {"tool_calls": [spawn("s2", "look deeper")]},
            {"tool_calls": [EDIT]},
            {"text": "could not write"},
        ]
    )
    await start_run(harness(store, script, ApproveAll()), TaskContract("x", workspace))
    assert (workspace / "src/app.py").read_text().endswith("return a\n")
    grandchild = await build_trace(store, 3)
    assert "spawn-narrowing-1" in grandchild["steps"][0]["observations"][0]["text"]


async def test_a_chain_whose_child_is_driven_elsewhere_is_refused_with_the_owner_named(
    store, workspace, write_script
):
    script = write_script([{"tool_calls": [spawn("s1", "fix")]}, {"tool_calls": [EDIT]}])
    await start_run(harness(store, script), TaskContract("x", workspace))
    await store.leases.acquire(2)  # as a live process driving the child would
    with pytest.raises(
        DecideError, match=r"run 2, the sub-agent run 1 resumes with, is driven by pid"
    ):
        await resume(store, 1, reconciler=FixedReconciler(ReconcileChoice.SKIP))
    assert (await store.runs.get(1)).status == "paused"  # untouched

"""A sub-agent and the run that waits on it: which child run carries out a ``spawn_agent`` call,
and the chain of runs waiting on each other through such calls.

A parent's ``spawn_agent`` call is carried out by a child run. The link is a ``sub_agent`` event
of the parent (its step, the call's id, the child's run id), written as the child is created,
before it takes a step. While the child has not ended, the call has no observation: a child
that pauses (a deferred ask) or is interrupted (its process died) leaves its parent paused or
interrupted on that call, and resuming any run of such a chain resumes its outermost run, which
hands the call to the child again: the child goes on first, its final answer becomes the call's
result, then the parent goes on (``run.spawn``).
"""

from __future__ import annotations

from io_tui.core.events import EventKind
from io_tui.core.providers.messages import ToolCall
from io_tui.core.store import Store
from io_tui.core.store.runs import RunRow

WAITING = frozenset({"paused", "interrupted"})  # a run that stopped short and resumes
ENDED = frozenset({"finished", "failed", "cancelled"})


async def child_of_call(store: Store, run_id: int, step: int, call_id: str) -> RunRow | None:
    """The child run carrying out call ``call_id`` of step ``step`` of run ``run_id``, if one
    was created. A process that died between creating the child and linking it leaves the
    parent's one unlinked child created after the call's intent: that one is it."""
    links = await store.trace.events(run_id, kinds=[EventKind.SUB_AGENT.value])
    mine = [
        int(e.detail["run_id"])
        for e in links
        if e.step == step and e.detail.get("call_id") == call_id
    ]
    if mine:
        return await store.runs.get(mine[-1])
    intent = await store.intents.latest(run_id, call_id)
    if intent is None or intent.step != step:
        return None
    linked = {int(e.detail["run_id"]) for e in links}
    unlinked = [
        child
        for child in await store.runs.children(run_id)
        if child.id not in linked and child.created_at >= intent.started_at
    ]
    return unlinked[-1] if unlinked else None


async def pending_call(store: Store, run: RunRow) -> tuple[int, ToolCall] | None:
    """The first call of the run's last step that has no observation yet, with its step."""
    rows = await store.trace.steps_after(run.id, max(0, run.steps - 1), limit=1)
    if not rows:
        return None
    last = rows[-1]
    observed = {o.call_id for o in await store.trace.observations(run.id, last.step)}
    return next(((last.step, c) for c in last.tool_calls if c.id not in observed), None)


async def pending_child(store: Store, run: RunRow) -> RunRow | None:
    """The child run of the run's pending ``spawn_agent`` call, if it has one."""
    # here, not at the top: the trace and the inbox ask this without loading the tools
    from io_tui.core.tools.agent import SpawnAgent

    pending = await pending_call(store, run)
    if pending is None or pending[1].name != SpawnAgent.name:
        return None
    return await child_of_call(store, run.id, pending[0], pending[1].id)


async def waiting_on(store: Store, run: RunRow) -> RunRow | None:
    """The sub-agent a paused or interrupted run waits on: the child of its pending
    ``spawn_agent`` call, while that child has not ended."""
    if run.status not in WAITING:
        return None
    child = await pending_child(store, run)
    return child if child is not None and child.status not in ENDED else None


async def waiting_chain(store: Store, run: RunRow) -> list[RunRow]:
    """The runs that resume together with ``run``, outermost first: the ancestors that wait on
    it through their sub-agent calls, ``run``, and the sub-agents it waits on."""
    chain = [run]
    while chain[0].parent_run_id is not None:
        parent = await store.runs.get(chain[0].parent_run_id)
        if parent is None:
            break
        child = await waiting_on(store, parent)
        if child is None or child.id != chain[0].id:
            break
        chain.insert(0, parent)
    while (child := await waiting_on(store, chain[-1])) is not None:
        chain.append(child)
    return chain


async def last_active(store: Store, run: RunRow) -> RunRow:
    """Down ``run``'s pending sub-agent calls, the run that went last (the others waited on
    it): its recorded provider is where the one they share left off (a script's turns)."""
    while (child := await pending_child(store, run)) is not None:
        run = child
    return run

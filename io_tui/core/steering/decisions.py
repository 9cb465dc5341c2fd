"""Decide a pending approval and resume its run, in this process or any other (DESIGN §3.4);
resume an interrupted run (its process died) the same way, from the store alone.

Both are crash-safe: the decision is recorded before the run resumes, the resumed run holds
its lease while it goes, so a killed ``decide`` or ``resume`` leaves a run that turns
``interrupted`` and resumes again.

A sub-agent and the runs waiting on it resume together (``sub_agents.waiting_chain``): deciding
a child's request, or resuming the child or any run of its chain, resumes the outermost run,
which continues the child first and then goes on with the child's answer."""

from __future__ import annotations

from dataclasses import dataclass, replace

from io_tui.core.authority.approvals import Approver, Decision, DecisionKind, DeferAll
from io_tui.core.authority.policy import Policy
from io_tui.core.events import EventSink, NullSink
from io_tui.core.mcp.asks import is_server_ask
from io_tui.core.providers.factory import provider_from_description
from io_tui.core.run.harness import Harness, harness_registry
from io_tui.core.run.loop import resume_run
from io_tui.core.run.origin import RunOrigin
from io_tui.core.run.outcome import RunResult
from io_tui.core.run.reconcile import Reconciler
from io_tui.core.run.server_asks import expire_server_asks
from io_tui.core.run.sub_agents import last_active, waiting_chain
from io_tui.core.store import Store
from io_tui.core.store.leases import LIVE_STATUSES, RunBusy
from io_tui.core.store.runs import RunRow
from io_tui.core.tools.registry import ToolRegistry


class DecideError(LookupError):
    """The request does not exist, was already decided, or its run cannot be resumed."""


RESUMABLE = frozenset({"interrupted", "paused"})


@dataclass(frozen=True, slots=True)
class Decided:
    approval_id: int
    run_id: int
    result: RunResult | None  # None when the decision was a defer (nothing resumes)


async def harness_for_run(
    store: Store,
    run_id: int,
    approver: Approver | None = None,
    sink: EventSink | None = None,
    registry: ToolRegistry | None = None,
) -> Harness:
    """Recreate the provider (with the timeout and retries of its ``RunOrigin``) and policy a
    run recorded, so it continues exactly where it was.

    ``registry`` carries tools that live outside the harness: the MCP servers the caller
    started, the run's own (``origin.servers_to_resume``).
    """
    row = await store.runs.get(run_id)
    if row is None:
        raise DecideError(f"no run {run_id} in the store")
    origin = RunOrigin.from_json(row.origin)
    return Harness(
        store=store,
        provider=provider_from_description(
            row.provider, settings=origin.settings if origin is not None else None
        ),
        approver=approver or DeferAll(),
        sink=sink or NullSink(),
        registry=registry or harness_registry(),
        policy=Policy.from_json(row.policy, source=f"run {run_id} policy"),
        origin=origin,
    )


async def decide(
    store: Store,
    approval_id: int,
    decision: Decision,
    *,
    approver: Approver | None = None,
    sink: EventSink | None = None,
    registry: ToolRegistry | None = None,
    resume: bool = True,
) -> Decided:
    record = await store.approvals.get(approval_id)
    if record is None:
        raise DecideError(f"no approval request {approval_id}")
    run_id = record.request.run_id
    run = await store.runs.get(run_id)
    if record.status != "pending":
        kind = _decided(record.decision)
        hint = (
            f"; its run {run_id} is {run.status}: continue it with `io-tui resume {run_id}`"
            if run is not None and run.status in RESUMABLE
            else ""
        )
        raise DecideError(f"request {approval_id} was already decided: {kind}{hint}")
    if is_server_ask(record.request) and (run is None or run.status != "running"):
        await expire_server_asks(store, run_id)
        raise DecideError(
            f"request {approval_id} was an MCP server's request inside a call that ended with "
            "the process that asked; it can no longer be answered (it leaves the inbox)"
        )
    if decision.kind is DecisionKind.DEFER:
        return Decided(approval_id, run_id, None)
    if not await store.approvals.record_decision(approval_id, decision):
        first = await store.approvals.get(approval_id)
        kind = _decided(first.decision if first is not None else None)
        raise DecideError(f"request {approval_id} was already decided: {kind}")
    if not resume:
        return Decided(approval_id, run_id, None)
    # read again now the decision is recorded: a run that paused meanwhile is resumed here
    run = await store.runs.get(run_id)
    if run is None or run.status not in RESUMABLE:
        # The run is live in another process (it will pick the decision up) or already over.
        return Decided(approval_id, run_id, None)
    if await store.queue.entry(run_id) is not None:
        # a queue run: a worker claims it once its approvals are decided (store/queue.py)
        return Decided(approval_id, run_id, None)
    return Decided(approval_id, run_id, await _resume(store, run, approver, sink, registry, None))


_PAST = {"approve": "approved", "rewrite": "rewritten", "remember": "approved and remembered",
         "deny": "denied", "defer": "deferred"}  # fmt: skip


def _decided(decision: Decision | None) -> str:
    """``approved by alice@laptop (io-tui)``: what the first decider chose, and who."""
    if decision is None:
        return "decided"
    verb = _PAST.get(decision.kind.value, decision.kind.value)
    return f"{verb} by {decision.decided_by}"


async def resume(
    store: Store,
    run_id: int,
    *,
    reconciler: Reconciler,
    approver: Approver | None = None,
    sink: EventSink | None = None,
    registry: ToolRegistry | None = None,
) -> RunResult:
    """Continue an interrupted (or paused) run under its id, with the provider, contract and
    policy it recorded: its calls in flight at the crash go to ``reconciler`` first."""
    run = await store.runs.get(run_id)
    if run is None:
        raise DecideError(f"no run {run_id} in the store")
    if run.status in LIVE_STATUSES:  # its driver gone, and the open could not record it (a
        await store.leases.reap()  # full store says so here: StoreFull)
        run = await store.runs.get(run_id) or run
    if run.status not in RESUMABLE:
        holder = await store.leases.holder(run_id)
        owner = f", driven by {holder.describe()}" if holder is not None else ""
        raise DecideError(
            f"run {run_id} is {run.status}{owner}; only an interrupted or paused run resumes"
        )
    return await _resume(store, run, approver, sink, registry, reconciler)


async def _resume(
    store: Store,
    run: RunRow,
    approver: Approver | None,
    sink: EventSink | None,
    registry: ToolRegistry | None,
    reconciler: Reconciler | None,
) -> RunResult:
    chain = await waiting_chain(store, run)
    root = chain[0]
    for member in chain:
        if member.status not in RESUMABLE:
            holder = await store.leases.holder(member.id)
            owner = f"driven by {holder.describe()}" if holder else member.status
            raise DecideError(
                f"run {member.id}, the sub-agent run {root.id} resumes with, is {owner}"
            )
    # the runs share one provider: recreate it where the last of them left it
    provider_run = await last_active(store, root)
    harness = await harness_for_run(store, provider_run.id, approver, sink, registry)
    if provider_run.id != root.id:
        harness = replace(
            harness, policy=Policy.from_json(root.policy, source=f"run {root.id} policy")
        )
    try:
        return await resume_run(harness, root.id, reconciler)
    except RunBusy as exc:
        raise DecideError(str(exc)) from None
    finally:
        await harness.provider.aclose()

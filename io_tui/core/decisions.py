"""Decide a pending approval and resume its run, in this process or any other (DESIGN §3.4)."""

from __future__ import annotations

from dataclasses import dataclass

from io_tui.core.approvals import Approver, Decision, DecisionKind, DeferAll
from io_tui.core.events import EventSink, NullSink
from io_tui.core.harness import Harness, harness_registry
from io_tui.core.policy import Policy
from io_tui.core.providers.factory import provider_from_description
from io_tui.core.run import RunResult, resume_run
from io_tui.core.store import Store
from io_tui.core.tools.registry import ToolRegistry


class DecideError(LookupError):
    """The request does not exist, was already decided, or its run cannot be resumed."""


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
    """Recreate the provider and policy a run recorded, so it continues exactly where it was.

    ``registry`` carries tools that live outside the harness (MCP servers this process started).
    """
    row = await store.runs.get(run_id)
    if row is None:
        raise DecideError(f"no run {run_id} in the store")
    return Harness(
        store=store,
        provider=provider_from_description(row.provider),
        approver=approver or DeferAll(),
        sink=sink or NullSink(),
        registry=registry or harness_registry(),
        policy=Policy.from_json(row.policy, source=f"run {run_id} policy"),
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
    if record.status != "pending":
        raise DecideError(
            f"request {approval_id} was already decided ({record.decision.kind.value if record.decision else '?'})"
        )
    run_id = record.request.run_id
    if decision.kind is DecisionKind.DEFER:
        return Decided(approval_id, run_id, None)
    if not await store.approvals.record_decision(approval_id, decision):
        raise DecideError(f"request {approval_id} was decided by someone else first")
    if not resume:
        return Decided(approval_id, run_id, None)
    run = await store.runs.get(run_id)
    if run is None or run.status != "paused":
        # The run is live in another process (it will pick the decision up) or already over.
        return Decided(approval_id, run_id, None)
    harness = await harness_for_run(store, run_id, approver, sink, registry)
    try:
        return Decided(approval_id, run_id, await resume_run(harness, run_id))
    finally:
        await harness.provider.aclose()

"""A run's progress ledger (``io-tui trace RUN --ledger``) as ACP's ``plan`` session update.

The harness keeps the ledger from runtime state, a new revision each time what it says changes;
after a step (an ask, the run's end) whose revision is new, the session's client is sent the plan
made from it, whole, as the protocol wants (the client replaces the plan it shows). A revision
already sent, or one whose plan reads the same, sends nothing.

| the ledger | the plan entry (priority, status) |
|---|---|
| the objective | ``Objective: …`` (high): completed only once met (the run's verification passed: ``success``, ``core.endings``), in progress while the run goes, else pending |
| each modified resource | ``modified PATH (tool, step N)`` (low, completed) |
| each passing test or verification | ``CMD passed (step N)`` (low, completed) |
| the next safe action, when work remains | ``Next: …`` (high, in progress) |
| remaining work: an approval waiting, a call in flight at a crash, a sub-agent not ended | as the ledger says it (high, pending) |
| remaining work: an open failure | ``fix: … failed at step N [ref]`` (medium, pending) |
| remaining work: the verification, the objective not met | as the ledger says it (low, pending) |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from acp import plan_entry, update_plan
from acp.schema import PlanEntry, PlanEntryPriority, PlanEntryStatus

from io_tui.core import ProgressLedger, ending_of

if TYPE_CHECKING:
    from io_tui.acp.session import Session
    from io_tui.core import Store

GOING = ("running", "asking")
BLOCKING = ("call", "sub_agent")  # the operations the ledger's remaining work names


def plan_entries(ledger: ProgressLedger) -> list[PlanEntry]:
    ending = ending_of(ledger.outcome) if ledger.status not in GOING else None
    met = ending is not None and ending.met
    objective: PlanEntryStatus = (
        "completed" if met else "in_progress" if ledger.status in GOING else "pending"
    )
    goal = " ".join(ledger.objective.split())
    entries = [plan_entry(f"Objective: {goal}", priority="high", status=objective)]
    entries += [
        plan_entry(f"modified {c.resource} ({c.tool}, step {c.step})", priority="low",
                   status="completed")
        for c in ledger.changes
    ]  # fmt: skip
    entries += [
        plan_entry(f"{e.what} passed (step {e.step})", priority="low", status="completed")
        for e in ledger.evidence
        if e.passed
    ]
    if ledger.remaining:
        entries.append(
            plan_entry(f"Next: {ledger.next_action}", priority="high", status="in_progress")
        )
    # the ledger lists what is left in this order: what blocks the run, what failed, the rest
    blocking = len(ledger.approvals) + sum(op.kind in BLOCKING for op in ledger.operations)
    failing = blocking + len(ledger.failures)
    for index, item in enumerate(ledger.remaining):
        priority: PlanEntryPriority = (
            "high" if index < blocking else "medium" if index < failing else "low"
        )
        entries.append(plan_entry(item, priority=priority, status="pending"))
    return entries


def send_plan(session: Session, store: Store) -> None:
    """Queue the plan of the session's run, made when the outbox reaches it (every update
    before it sent), from the ledger's newest revision then; nothing when that revision, or a
    plan that reads the same, was sent already."""

    async def made() -> Any:
        run_id = session.run_id
        if run_id is None:
            return None
        row = await store.progress.latest(run_id)
        if row is None or (run_id, row.revision) == session.plan_revision:
            return None
        session.plan_revision = (run_id, row.revision)
        entries = plan_entries(ProgressLedger.from_json(row.ledger))
        if entries == session.plan:
            return None
        session.plan = entries
        return update_plan(entries)

    session.outbox.put(made)

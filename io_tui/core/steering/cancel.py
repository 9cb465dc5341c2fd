"""Cancel a run no process drives (DESIGN §3.4): a ``paused`` one (its ask deferred: it waits in
every inbox) or an ``interrupted`` one (its process died), which the operator abandons instead
of deciding or resuming it. ``io-tui cancel RUN`` and the TUI's ``x`` on such a run.

The run ends ``cancelled`` (outcome ``cancelled``, its error "cancelled by the operator while
paused") and each of its requests still pending is denied ("the run was cancelled", decided by
the operator), so it leaves every inbox; all of it in one transaction that refuses, changing
nothing, a run that is not stopped any more: live (someone resumed it, a decision resumed it, a
worker claimed it), ended, already cancelled (``store/cancel.py``). A sub-agent chain stops and
resumes together (``sub_agents.waiting_chain``), so it is cancelled together too: cancelling a
parent that waits on its sub-agent cancels the sub-agent (and its own), and cancelling the
sub-agent cancels the parents waiting on it, which could otherwise only go on with a cancelled
answer nobody asked for. The operator's action is audited as an event of run 0, each run's end
as its ``run_finished``, each denial as its ``approval_decided``. Then, as at any run's end, each
run's progress ledger is saved and its entry in the workspace's daily log replaced by one that
says it was cancelled.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.contract import TaskContract, contract_from_json
from io_tui.core.errors import WorkspaceError
from io_tui.core.events import OPERATOR_CANCEL
from io_tui.core.progress.keeper import ProgressKeeper, fold_from_store
from io_tui.core.run.log_entry import RunFacts, run_lines
from io_tui.core.run.sub_agents import waiting_chain
from io_tui.core.store import Store, StoreError
from io_tui.core.store.approvals import ApprovalRecord
from io_tui.core.store.cancel import CancelledRun, NotCancellable, not_stopped
from io_tui.core.store.runs import RunRow

REQUEST_REASON = "the run was cancelled"  # why each request still pending is denied


class CancelRefused(LookupError):
    """The run cannot be cancelled: no such run, or it is not stopped (live, ended, already
    cancelled). The message says which; nothing was changed."""


@dataclass(frozen=True, slots=True)
class CancelPlan:
    """What cancelling ``run_id`` would end: its sub-agent chain (outermost first) and their
    requests still pending, as read now (the cancel itself checks again)."""

    run_id: int
    runs: tuple[RunRow, ...]
    pending: tuple[ApprovalRecord, ...]


@dataclass(frozen=True, slots=True)
class Cancelled:
    """What ``cancel_run`` ended: each run (the one asked for and its chain, outermost first),
    and what could not be written after it (its daily log entry, its ledger)."""

    run_id: int
    runs: tuple[CancelledRun, ...]
    notes: tuple[str, ...] = ()

    @property
    def approvals(self) -> tuple[int, ...]:
        """The requests denied, every run's."""
        return tuple(a for run in self.runs for a in run.approvals)

    def to_json(self) -> dict[str, Any]:
        asked = next(run for run in self.runs if run.id == self.run_id)
        return {
            "run_id": self.run_id,
            "status": "cancelled",
            "outcome": "cancelled",
            "was": asked.was,
            "error": asked.error,
            "runs": [
                {"id": r.id, "was": r.was, "error": r.error, "approvals": list(r.approvals)}
                for r in self.runs
            ],
            "approvals": list(self.approvals),
            "notes": list(self.notes),
        }


async def plan_cancel(store: Store, run_id: int) -> CancelPlan:
    """The runs and requests cancelling ``run_id`` ends; ``CancelRefused`` when it is not
    stopped now."""
    row = await store.runs.get(run_id)
    if row is None:
        raise CancelRefused(f"no run {run_id} in the store")
    why = not_stopped(row.status, await store.leases.holder(run_id), await store.leases.now())
    if why is not None:
        raise CancelRefused(f"run {run_id} {why}")
    chain = tuple(await waiting_chain(store, row))
    ids = {r.id for r in chain}
    pending = tuple(r for r in await store.approvals.pending() if r.request.run_id in ids)
    return CancelPlan(run_id, chain, pending)


async def cancel_run(store: Store, run_id: int, *, by: str) -> Cancelled:
    """End ``run_id`` (and its sub-agent chain) ``cancelled``, its pending requests denied, if
    it is still stopped; ``CancelRefused`` (nothing changed) when it is not. ``by``: the
    operator, as decisions name them (``approvals.operator``)."""
    plan = await plan_cancel(store, run_id)
    ids = [r.id for r in plan.runs]

    def error(run: int, was: str) -> str:
        said = f"{OPERATOR_CANCEL} while {was}"
        return said if run == run_id else f"{said}, with run {run_id}"

    audit = {"op": "cancel", "actor": "operator", "by": by, "run_id": run_id,
             "reason": REQUEST_REASON}  # fmt: skip
    try:
        done = await store.cancels.cancel_stopped(
            ids, decided_by=by, reason=REQUEST_REASON, error=error, audit=audit
        )
    except NotCancellable as exc:
        if len(ids) == 1:
            raise CancelRefused(str(exc)) from None
        together = ", ".join(str(i) for i in ids)
        raise CancelRefused(
            f"{exc} (runs {together} wait on each other: they are cancelled together)"
        ) from None
    notes = []
    errors = {run.id: run.error for run in done}
    for row in plan.runs:
        if row.status == "queued":  # it never ran: no ledger, nothing for the daily log
            continue
        note = await _log_end(store, row, errors[row.id])
        if note is not None:
            notes.append(note)
    return Cancelled(run_id, tuple(done), tuple(notes))


async def _log_end(store: Store, row: RunRow, error: str) -> str | None:
    """What any run's end writes besides its row: its progress ledger (the denials and the end
    folded in, saved as a revision) and its entry in the workspace's daily log, which replaces
    the one its pause wrote that day (``DailyLogRepo.write_entry``). None, or what failed."""
    try:
        contract = contract_from_json(row.contract)
    except (KeyError, TypeError, ValueError):  # a contract as an early store wrote it
        contract = TaskContract(row.goal, Path(row.workspace))
    try:
        try:
            keeper = ProgressKeeper(store, row.id, contract, Workspace(row.workspace))
        except WorkspaceError:  # the workspace is gone: the ledger as folded, not saved
            ledger = (await fold_from_store(store, row.id, contract)).ledger()
        else:
            await keeper.take(())
            ledger = keeper.ledger()
        facts = RunFacts(
            goal=contract.goal,
            outcome="cancelled",
            steps=row.steps,
            tokens=row.tokens,
            error=error,
            parent_run_id=row.parent_run_id,
        )
        await store.daily_log.write_entry(row.workspace, run_lines(facts, ledger), run_id=row.id)
    except (StoreError, sqlite3.Error) as exc:
        return f"run {row.id} is cancelled, but its daily log entry was not written: {exc}"
    return None

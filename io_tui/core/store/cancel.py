"""Cancelling runs no process drives: a ``paused`` run (its ask deferred) or an ``interrupted``
one (its process died), which the operator abandons (``core/steering/cancel.py``, ``io-tui cancel``, the
TUI's ``x``).

One transaction checks each run is still stopped and ends it ``cancelled``: SQLite's ``BEGIN
IMMEDIATE``, or the store's exclusive advisory lock on PostgreSQL, which every resume
(``LeaseRepo.acquire``), decision (``ApprovalRepo.record_decision``) and queue claim
(``QueueRepo.claim``, which takes it shared) also takes, so none of them comes between the check
and the change. A run resumed or claimed first is live (``running``) and refused here; one
cancelled first is refused by ``resume`` (``cancelled`` does not resume) and by the queue
(``cancelled`` is not claimable). The requests still pending of the runs are denied in the same
transaction, so they leave every inbox, and a decider who comes after finds them decided (the
first decision wins, as ever).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from io_tui.core.authority.approvals import Decision
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.store.clock import StoreTime, store_time
from io_tui.core.store.db import Connection, Database
from io_tui.core.store.leases import LEASE_COLUMNS, LEASE_RELEASED, Lease, lease_of
from io_tui.core.store.live import announce_decided
from io_tui.core.store.runs import insert_events

# what no process drives, what the operator may cancel: a run paused (its ask deferred),
# interrupted (its process died), or queued (no worker has taken it yet)
STOPPED = ("paused", "interrupted", "queued")
CANCELLABLE = STOPPED  # the statuses of a run no process drives: paused, interrupted, queued
OPERATOR_RUN_ID = 0  # the run of the operator's audit events (``memory.py`` records its own)


class NotCancellable(RuntimeError):
    """A run to cancel is not stopped: live (driven, or resumed meanwhile), ended, or gone. The
    message says which; nothing was changed."""


@dataclass(frozen=True, slots=True)
class CancelledRun:
    """A run ``cancel_stopped`` ended: the status it had, the error it ended with, and its
    requests that were pending (denied now)."""

    id: int
    was: str  # paused | interrupted
    error: str
    approvals: tuple[int, ...]


class CancelRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def cancel_stopped(
        self,
        run_ids: Sequence[int],
        *,
        decided_by: str,
        reason: str,
        error: Callable[[int, str], str],
        audit: dict[str, Any],
    ) -> list[CancelledRun]:
        """End ``run_ids`` ``cancelled``, all or none: each must still be stopped (``paused``
        or ``interrupted``, without a live lease), else ``NotCancellable``. Every request of
        theirs still pending is denied (``reason``, by ``decided_by``, the operator). Each run
        ends with ``error(run_id, was)``, said by its ``run_finished`` event (the denials by
        ``approval_decided`` events); ``audit`` is recorded, with what was cancelled, as an
        event of run 0 (the operator's actions)."""
        return await self.db.write(
            partial(_cancel, tuple(run_ids), decided_by, reason, error, audit, time.time())
        )


def _cancel(
    run_ids: tuple[int, ...],
    decided_by: str,
    reason: str,
    error: Callable[[int, str], str],
    audit: dict[str, Any],
    now: float,
    conn: Connection,
) -> list[CancelledRun]:
    stopped: dict[int, tuple[str, int]] = {}  # run id → (its status, its last step)
    clock = store_time(conn)
    for run_id in run_ids:
        row = conn.execute(
            f"SELECT status, steps, {LEASE_COLUMNS} FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        if row is None:
            raise NotCancellable(f"no run {run_id} in the store")
        why = not_stopped(row["status"], lease_of(row), clock)
        if why is not None:
            raise NotCancellable(f"run {run_id} {why}")
        stopped[run_id] = (row["status"], row["steps"])
    marks = ",".join("?" * len(run_ids))
    pending = conn.execute(
        "SELECT id, run_id, step FROM approvals"
        f" WHERE status = 'pending' AND run_id IN ({marks}) ORDER BY id",
        run_ids,
    ).fetchall()
    denial = json.dumps(Decision.deny(reason, decided_by=decided_by).to_json())
    not_performed = json.dumps({"performed": False})
    conn.executemany(
        "UPDATE approvals SET decision = ?, status = 'decided', decided_at = ?, performed = ?"
        " WHERE id = ? AND status = 'pending'",
        [(denial, now, not_performed, a["id"]) for a in pending],
    )
    announce_decided(conn, [a["id"] for a in pending])
    decided = {"decision": "deny", "reason": reason, "decided_by": decided_by}
    events = [
        RunEvent(a["run_id"], a["step"], EventKind.APPROVAL_DECIDED,
                 {"approval_id": a["id"], **decided}, now)
        for a in pending
    ]  # fmt: skip
    cancelled = []
    for run_id, (was, step) in stopped.items():
        said = error(run_id, was)
        finished = {"status": "cancelled", "outcome": "cancelled", "error": said, "was": was,
                    "cancelled_by": decided_by}  # fmt: skip
        events.append(RunEvent(run_id, step, EventKind.RUN_FINISHED, finished, now))
        conn.execute(
            "UPDATE runs SET status = 'cancelled', outcome = 'cancelled', error = ?,"
            f" updated_at = ?, finished_at = ?{LEASE_RELEASED} WHERE id = ?",
            (said, now, now, run_id),
        )
        denied = tuple(a["id"] for a in pending if a["run_id"] == run_id)
        cancelled.append(CancelledRun(run_id, was, said, denied))
    record = {
        **audit,
        "runs": [{"id": c.id, "was": c.was, "approvals": list(c.approvals)} for c in cancelled],
    }
    events.append(RunEvent(OPERATOR_RUN_ID, 0, EventKind.RUN_CANCELLED, record, now))
    insert_events(events, conn)  # announced: every cockpit's tree and inbox follow
    return cancelled


def not_stopped(status: str, lease: Lease | None, now: StoreTime) -> str | None:
    """Why a run with ``status`` and ``lease`` may not be cancelled now (``run N …``); None: it is
    stopped, and no one drives it."""
    if status == "cancelled":
        return "was already cancelled"
    if status in ("finished", "failed"):
        return f"has already ended ({status}): there is nothing to cancel"
    if status not in STOPPED:
        driven = f", driven by {lease.describe()}" if lease is not None else ""
        return f"is {status}{driven}: only a paused, interrupted or queued run can be cancelled"
    if lease is not None and lease.alive(now):
        return f"is {status} but held by {lease.describe()}, which is resuming it"
    return None

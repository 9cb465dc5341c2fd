"""The run queue and its workers, with the store as the only coordinator (docs/SCALE-OUT.md).

A queued run is a ``runs`` row with status ``queued`` and a ``queue`` row beside it: the labels
a worker must serve (all of them), where its workspace comes from (the recorded path, or a git
remote and ref the claiming worker checks out into its scratch directory, with a branch to push
back at the end), who claimed it last, the operator's reconcile choice for its next claim and,
when it waits for the operator, why (``held``).

A worker claims one run at a time in one transaction that takes the run's lease as well
(``claim``): a ``queued`` run, an ``interrupted`` one (its last driver died: takeover) that is
not held, or a ``paused`` one whose approvals are all decided (``CLAIMABLE``).

- On SQLite the transaction is ``BEGIN IMMEDIATE``, which serializes the claims (and every
  other write) of all processes on the file; the labels are matched on the rows read.
- On PostgreSQL claimers do not wait for each other: the oldest claimable row whose labels the
  worker serves (``labels <@ served``, as jsonb) is taken ``FOR UPDATE OF q, r SKIP LOCKED``, so
  a row another claimer has locked is passed over, not waited for, and no two transactions
  lock one row. The transaction takes the store's advisory lock *shared*
  (``pg_advisory_xact_lock_shared``): claims go side by side, while a writer holding it
  exclusively (every other repo's read-then-write, such as a cockpit taking a paused run's
  lease) is never interleaved with one.
Workers register in ``workers`` (host, pid, labels, concurrency, heartbeat, draining); the runs
one holds are the runs whose lease it owns.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from io_tui.core.store.clock import StoreTime, store_time
from io_tui.core.store.db import APPLICATION_ID, Connection, Database, row_as
from io_tui.core.store.leases import LEASE_TTL_S, OWNER, pid_alive, take
from io_tui.core.store.live import announce

QUEUED = "queued"
GIT_WORKSPACE = "git:"  # the workspace recorded for a git run until a worker checks it out
# What a worker may claim (``q`` the queue row, ``r`` the run's): queued, interrupted (takeover)
# unless held for the operator, paused with every approval decided.
CLAIMABLE = """(r.status = 'queued'
   OR (r.status = 'interrupted' AND q.held IS NULL)
   OR (r.status = 'paused' AND NOT EXISTS (
        SELECT 1 FROM approvals a WHERE a.run_id = r.id AND a.status = 'pending')))"""
CLAIM_SQL = f"SELECT q.run_id FROM queue q JOIN runs r ON r.id = q.run_id WHERE {CLAIMABLE}"
# PostgreSQL's claim: the labels matched in the statement, the row locked or passed over
PG_CLAIM_SQL = f"""SELECT q.run_id FROM queue q JOIN runs r ON r.id = q.run_id
WHERE {CLAIMABLE} AND q.labels::jsonb <@ ?::jsonb
ORDER BY q.run_id LIMIT 1 FOR UPDATE OF q, r SKIP LOCKED"""


@dataclass(frozen=True, slots=True)
class GitSource:
    """A workspace a worker checks out: ``remote`` at ``ref``, ``push_branch`` pushed back."""

    remote: str
    ref: str = "HEAD"
    push_branch: str | None = None


@dataclass(frozen=True, slots=True)
class QueueEntry:
    run_id: int
    labels: tuple[str, ...]
    git: GitSource | None
    enqueued_at: float
    claimed_by: str | None
    claimed_at: float | None
    claims: int
    reconcile: str | None  # the operator's choice for calls in flight, for the next claim
    held: str | None  # why it waits for the operator (no worker takes it meanwhile)
    pushed: str | None  # the branch pushed back, or why not


@dataclass(frozen=True, slots=True)
class Claim:
    """A run a worker took: its entry as it was before the claim and the status it had."""

    entry: QueueEntry
    status: str  # queued (a first drive), interrupted (a takeover) or paused (decided)


@dataclass(frozen=True, slots=True)
class WorkerRow:
    id: str
    host: str
    pid: int
    labels: tuple[str, ...]
    concurrency: int
    started_at: float
    heartbeat: float  # its own wall clock at its last beat: shown, never compared
    draining: bool
    stopped_at: float | None
    runs: tuple[int, ...]  # the runs whose lease it holds
    renewed: float | None = None  # the store's clock at its last beat (``clock.py``)
    clock: str | None = None

    def age(self, now: StoreTime) -> float:
        """Seconds since its last beat, on the store's clock (the wall clock where the beat
        was stamped on a clock ``now`` cannot compare with)."""
        if self.renewed is not None and now.comparable(self.clock):
            return now.at - self.renewed
        return time.time() - self.heartbeat

    def state(self, now: StoreTime) -> str:
        """``stopped``, ``gone`` (its beat is stale or its pid dead here), ``draining`` or
        ``up``."""
        if self.stopped_at is not None:
            return "stopped"
        stale = self.age(now) > LEASE_TTL_S
        if stale or (self.host == OWNER.host and not pid_alive(self.pid)):
            return "gone"
        return "draining" if self.draining else "up"

    def to_json(self, now: StoreTime) -> dict[str, Any]:
        return {
            "id": self.id,
            "host": self.host,
            "pid": self.pid,
            "labels": list(self.labels),
            "concurrency": self.concurrency,
            "state": self.state(now),
            "runs": list(self.runs),
            "started_at": self.started_at,
            "heartbeat": self.heartbeat,
            "stopped_at": self.stopped_at,
        }


def serves(worker_labels: Sequence[str], run_labels: Sequence[str]) -> bool:
    """A worker serves a run when it has every label the run asks for."""
    return set(run_labels) <= set(worker_labels)


def _entry(row: Any) -> QueueEntry:
    git = None
    if row["git_remote"] is not None:
        git = GitSource(row["git_remote"], row["git_ref"], row["push_branch"])
    return row_as(QueueEntry, row, labels=tuple(json.loads(row["labels"])), git=git)


class QueueRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- the queue --

    async def enqueue(
        self,
        *,
        goal: str,
        workspace: str,
        contract: dict[str, Any],
        provider: dict[str, Any],
        policy: dict[str, Any],
        labels: Sequence[str] = (),
        git: GitSource | None = None,
        origin: dict[str, Any] | None = None,
    ) -> int:
        """A new run, ``queued`` with no lease, for a worker to claim; its id. ``origin``: how
        it was started (``core.run.origin.RunOrigin``), which the worker driving it rebuilds."""
        return await self.db.write(
            partial(
                _enqueue,
                (
                    goal,
                    workspace,
                    json.dumps(contract),
                    json.dumps(provider),
                    json.dumps(policy),
                    json.dumps(origin) if origin is not None else None,
                ),
                json.dumps(sorted(set(labels))),
                git,
                time.time(),
            )
        )

    async def entry(self, run_id: int) -> QueueEntry | None:
        row = await self.db.fetchone("SELECT * FROM queue WHERE run_id = ?", (run_id,))
        return _entry(row) if row else None

    async def entries(self, run_ids: Sequence[int] | None = None) -> dict[int, QueueEntry]:
        """The queue rows of ``run_ids`` (every one without), by run id."""
        if run_ids is None:
            rows = await self.db.fetchall("SELECT * FROM queue ORDER BY run_id")
        elif not run_ids:
            return {}
        else:
            marks = ",".join("?" * len(run_ids))
            rows = await self.db.fetchall(
                f"SELECT * FROM queue WHERE run_id IN ({marks})", tuple(run_ids)
            )
        return {row["run_id"]: _entry(row) for row in rows}

    async def claim(self, labels: Sequence[str]) -> Claim | None:
        """Take the oldest claimable run whose labels this worker serves, with its lease, in one
        transaction; None when there is none."""
        if self.db.dialect == "postgresql":
            served = json.dumps(sorted(set(labels)))
            return await self.db.write(partial(_pg_claim, served, time.time()), exclusive=False)
        return await self.db.write(partial(_claim, tuple(labels), time.time()))

    async def unsettled(self, labels: Sequence[str]) -> int:
        """How many runs this worker serves are claimable or driven now (by anyone): while
        there are, a worker that stops once the queue is empty waits (a run whose worker dies
        comes back to the queue)."""
        rows = await self.db.fetchall(
            f"SELECT q.labels FROM queue q JOIN runs r ON r.id = q.run_id"
            f" WHERE r.status IN ('running', 'asking') OR q.run_id IN ({CLAIM_SQL})"
        )
        return sum(serves(labels, json.loads(row["labels"])) for row in rows)

    async def set_workspace(self, run_id: int, workspace: str) -> None:
        """Where a worker checked the run's git source out: the run's workspace from now on."""

        def update(conn: Connection) -> None:
            row = conn.execute("SELECT contract FROM runs WHERE id = ?", (run_id,)).fetchone()
            contract = {**json.loads(row["contract"]), "workspace": workspace}
            conn.execute(
                "UPDATE runs SET workspace = ?, contract = ? WHERE id = ?",
                (workspace, json.dumps(contract), run_id),
            )

        await self.db.write(update)

    async def hold(self, run_id: int, reason: str) -> None:
        """The run waits for the operator (a call in flight at a crash, a lost checkout): no
        worker claims it until ``release`` with the operator's choice."""
        await self.db.write(
            partial(_update, "UPDATE queue SET held = ? WHERE run_id = ?", (reason, run_id))
        )

    async def release(self, run_id: int, reconcile: str | None) -> bool:
        """The operator's word on a held (or any interrupted) queue run: workers may claim it
        again, its calls in flight reconciled with ``reconcile`` on that claim. False when the
        run is not on the queue."""

        def release(conn: Connection) -> bool:
            released = _update(
                "UPDATE queue SET held = NULL, reconcile = ? WHERE run_id = ?",
                (reconcile, run_id),
                conn,
            )
            announce(conn, [run_id] if released else [], queue=True)
            return released

        return await self.db.write(release)

    async def set_pushed(self, run_id: int, pushed: str) -> None:
        await self.db.write(
            partial(_update, "UPDATE queue SET pushed = ? WHERE run_id = ?", (pushed, run_id))
        )

    # -- workers --

    async def register(self, labels: Sequence[str], concurrency: int) -> None:
        def register(conn: Connection) -> None:
            now, clock = time.time(), store_time(conn)
            conn.execute(
                "INSERT INTO workers (id, host, pid, labels, concurrency, started_at, heartbeat,"
                " renewed, clock) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE"
                " SET labels = excluded.labels, concurrency = excluded.concurrency,"
                " heartbeat = excluded.heartbeat, renewed = excluded.renewed,"
                " clock = excluded.clock, draining = 0, stopped_at = NULL",
                (OWNER.id, OWNER.host, OWNER.pid, json.dumps(list(labels)), concurrency, now, now,
                 clock.at, clock.clock),
            )  # fmt: skip

        await self.db.write(register)

    async def beat(self) -> bool:
        """Refresh this worker's heartbeat; whether it has been asked to drain since."""
        return await self.db.write(partial(_beat, OWNER.id))

    async def stopped(self) -> None:
        await self.db.write(
            partial(
                _update,
                "UPDATE workers SET stopped_at = ?, heartbeat = ? WHERE id = ?",
                (time.time(), time.time(), OWNER.id),
            )
        )

    async def request_drain(self, worker_ids: Sequence[str]) -> list[str]:
        """Ask workers to drain (their next heartbeat reads it); the ids found among the
        workers not stopped."""

        def drain(conn: Connection) -> list[str]:
            found = []
            for worker_id in worker_ids:
                cursor = conn.execute(
                    "UPDATE workers SET draining = 1 WHERE id = ? AND stopped_at IS NULL",
                    (worker_id,),
                )
                if cursor.rowcount:
                    found.append(worker_id)
            return found

        return await self.db.write(drain)

    async def workers(self, *, include_stopped: bool = False) -> list[WorkerRow]:
        where = "" if include_stopped else " WHERE stopped_at IS NULL"
        rows = await self.db.fetchall(f"SELECT * FROM workers{where} ORDER BY started_at")
        held = await self.holders()
        return [
            row_as(
                WorkerRow,
                row,
                labels=tuple(json.loads(row["labels"])),
                draining=bool(row["draining"]),
                runs=tuple(held.get(row["id"], ())),
            )
            for row in rows
        ]

    async def holders(self) -> dict[str, list[int]]:
        """The runs each lease owner holds now, by owner id."""
        rows = await self.db.fetchall(
            "SELECT id, lease_owner FROM runs WHERE lease_owner IS NOT NULL ORDER BY id"
        )
        held: dict[str, list[int]] = {}
        for row in rows:
            held.setdefault(row["lease_owner"], []).append(row["id"])
        return held

    async def run_hosts(self, run_ids: Sequence[int]) -> dict[int, str]:
        """Who drives each of ``run_ids`` that has a lease: ``HOST pid N``."""
        if not run_ids:
            return {}
        marks = ",".join("?" * len(run_ids))
        rows = await self.db.fetchall(
            f"SELECT id, lease_host, lease_pid FROM runs WHERE id IN ({marks})"
            " AND lease_owner IS NOT NULL",
            tuple(run_ids),
        )
        return {row["id"]: f"{row['lease_host']} pid {row['lease_pid']}" for row in rows}


def _update(sql: str, params: tuple[Any, ...], conn: Connection) -> bool:
    return conn.execute(sql, params).rowcount > 0


def _enqueue(
    run: tuple[str, str, str, str, str, str | None],
    labels: str,
    git: GitSource | None,
    now: float,
    conn: Connection,
) -> int:
    cursor = conn.execute(
        "INSERT INTO runs (goal, workspace, status, contract, provider, policy, origin,"
        " created_at, updated_at) VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?)",
        (*run, now, now),
    )
    run_id = cursor.lastrowid
    assert run_id is not None
    conn.execute(
        "INSERT INTO queue (run_id, labels, git_remote, git_ref, push_branch, enqueued_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            run_id,
            labels,
            git.remote if git else None,
            git.ref if git else None,
            git.push_branch if git else None,
            now,
        ),
    )
    announce(conn, [run_id], queue=True)  # workers waiting (``Live.queue_wakeups``) and views
    return run_id


def _claim(labels: tuple[str, ...], now: float, conn: Connection) -> Claim | None:
    """SQLite's, inside ``BEGIN IMMEDIATE``: no other process claims (or writes) until it
    commits."""
    candidates = conn.execute(
        f"SELECT run_id, labels FROM queue WHERE run_id IN ({CLAIM_SQL}) ORDER BY run_id"
    ).fetchall()
    run_id = next(
        (r["run_id"] for r in candidates if serves(labels, json.loads(r["labels"]))), None
    )
    if run_id is None:
        return None
    return _take(run_id, now, conn)


def _pg_claim(served: str, now: float, conn: Connection) -> Claim | None:
    """PostgreSQL's, in a transaction without the store's exclusive lock: the run's rows are
    locked by this transaction alone (others pass them over) until it commits."""
    conn.execute("SELECT pg_advisory_xact_lock_shared(?)", (APPLICATION_ID,))
    row = conn.execute(PG_CLAIM_SQL, (served,)).fetchone()
    return None if row is None else _take(row["run_id"], now, conn)


def _take(run_id: int, now: float, conn: Connection) -> Claim:
    """The lease of a claimable run this transaction alone may take."""
    entry = _entry(conn.execute("SELECT * FROM queue WHERE run_id = ?", (run_id,)).fetchone())
    status = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()["status"]
    take(run_id, "running", conn)  # the next epoch: a driver of an earlier take is fenced out
    # the operator's reconcile choice is for this claim only: a later crash asks again
    conn.execute(
        "UPDATE queue SET claimed_by = ?, claimed_at = ?, claims = claims + 1, reconcile = NULL"
        " WHERE run_id = ?",
        (OWNER.id, now, run_id),
    )
    return Claim(entry, status)


def _beat(worker_id: str, conn: Connection) -> bool:
    clock = store_time(conn)
    conn.execute(
        "UPDATE workers SET heartbeat = ?, renewed = ?, clock = ? WHERE id = ?",
        (time.time(), clock.at, clock.clock, worker_id),
    )
    row = conn.execute("SELECT draining FROM workers WHERE id = ?", (worker_id,)).fetchone()
    return bool(row and row["draining"])

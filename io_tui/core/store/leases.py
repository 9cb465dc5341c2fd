"""Who drives a run: its lease (owner id, host, pid, epoch, renewal in the run row), fenced.

A process takes the lease when it creates, resumes or claims a run; every take increments the
run's **epoch**. The driver keeps what it took as a ``Fence`` (run, owner, epoch) and every
write it makes for the run (a step's commit, an intent, a status, a renewal) checks the fence
first, in the write's own transaction: a driver whose run was taken over meanwhile (it was
paused past its lease: a VM freeze, a laptop lid, a stopped process) finds its fence broken
(``LeaseLost``), writes nothing and stops before its next tool call, and the new owner's run is
untouched.

The driver renews the lease every ``HEARTBEAT_S``. A lease has expired when its owner is gone:
its pid no longer lives (checked first, on the owner's own host), or its last renewal is older
than ``LEASE_TTL_S`` on the store's clock (``clock.py``: PostgreSQL's ``clock_timestamp()``, a
SQLite store's host's monotonic clock), never on the wall clock of whoever asks, so skewed
clocks between hosts change nothing. Any process that opens the store turns a live-looking run
whose lease expired ``interrupted`` (``reap``), so no run says ``running`` forever; a second
driver of a run whose lease holds is refused with the owner named (``RunBusy``).

``IO_TUI_LEASE_TTL_S`` shortens the lease (tests, benchmarks); the heartbeat follows it.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from dataclasses import dataclass
from functools import partial

from io_tui.core.store.clock import StoreTime, store_time
from io_tui.core.store.db import Connection, Database, StoreError
from io_tui.core.store.live import announce


def _lease_ttl() -> float:
    given = os.environ.get("IO_TUI_LEASE_TTL_S", "")
    try:
        return max(1.0, float(given)) if given else 30.0
    except ValueError:
        return 30.0


LEASE_TTL_S = _lease_ttl()  # a renewal older than this (store's clock) has expired
HEARTBEAT_S = LEASE_TTL_S / 15  # how often a driving process renews its runs' leases (2 s)
# a driver about to perform a tool call renews first when its last confirmation is older than
# this on its own clock: it may have been stopped, and the lease taken over meanwhile
CONFIRM_S = LEASE_TTL_S / 3
LIVE_STATUSES = ("running", "asking")
LEASE_COLUMNS = (
    "lease_owner, lease_host, lease_pid, lease_heartbeat, lease_epoch, lease_renewed, lease_clock"
)
# what a run that stops going writes: no owner (the epoch stays, and only ever grows)
LEASE_RELEASED = (
    ", lease_owner = NULL, lease_host = NULL, lease_pid = NULL, lease_heartbeat = NULL,"
    " lease_renewed = NULL, lease_clock = NULL"
)


@dataclass(frozen=True, slots=True)
class Owner:
    """This process, as a lease names it."""

    id: str
    host: str
    pid: int


# 12 random hex digits, as uuid4().hex[:12] were: uuid would load platform, for every store
OWNER = Owner(os.urandom(6).hex(), socket.gethostname(), os.getpid())


class RunBusy(RuntimeError):
    """The run is driven by another live process; the message names it."""


class LeaseLost(StoreError):
    """This process no longer holds the run it was driving: another took it over (or it was
    turned interrupted) while this one was stopped. Nothing was written; the message says who
    holds it now."""


@dataclass(frozen=True, slots=True)
class Lease:
    owner: str
    host: str
    pid: int
    heartbeat: float  # the owner's wall clock at its last renewal: shown, never compared
    epoch: int = 0
    renewed: float | None = None  # the store's clock at its last renewal
    clock: str | None = None  # which clock ``renewed`` is on (``clock.StoreTime.clock``)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} (owner {self.owner})"

    def alive(self, now: StoreTime) -> bool:
        """Whether the owner still holds it: its pid lives (where that can be checked: on its
        own host) and its last renewal is younger than ``LEASE_TTL_S`` on the store's clock.
        A renewal on a clock ``now`` cannot compare with (a SQLite file's lease from another
        boot, or from before the store's clock) is judged on the wall clock, as nothing better
        is known."""
        if self.host == OWNER.host and not pid_alive(self.pid):
            return False
        if self.renewed is not None and now.comparable(self.clock):
            return now.at - self.renewed <= LEASE_TTL_S
        return time.time() - self.heartbeat <= LEASE_TTL_S


@dataclass(frozen=True, slots=True)
class Fence:
    """What a driver took: the run, its owner id and the epoch of the take. ``epoch`` None: any
    take of this owner's (a worker giving back a run whose driving broke)."""

    run_id: int
    owner: str
    epoch: int | None

    def check(self, conn: Connection) -> None:
        """Inside a write transaction: go on only while the run's lease is still this take;
        ``LeaseLost`` (the transaction rolls back) when it is not. The writers that change a
        lease hold the store's write lock too, so it cannot change before this commits."""
        held = conn.execute(
            "SELECT lease_owner, lease_epoch FROM runs WHERE id = ?", (self.run_id,)
        ).fetchone()
        if held is not None and held[0] == self.owner and self.epoch in (None, held[1]):
            return
        row = conn.execute(f"SELECT {LEASE_COLUMNS} FROM runs WHERE id = ?", (self.run_id,))
        lease = lease_of(row.fetchone())
        now = "nobody holds it (it was turned interrupted)"
        if lease is not None:
            now = f"it is driven by {lease.describe()} now"
        raise LeaseLost(
            f"run {self.run_id}: this process no longer holds its lease (another took the run"
            f" over while this one was stopped or cut off); {now}. This process performed nothing"
            " more and stopped driving it"
        )


def fenced(fence: Fence | None, conn: Connection) -> None:
    """``fence.check(conn)``, when there is a fence (a write made outside any driver has
    none)."""
    if fence is not None:
        fence.check(conn)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a living process here (a zombie, killed but not reaped, is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True  # no /proc: the signal said it lives


def lease_of(row: sqlite3.Row | None) -> Lease | None:
    """The lease in a row holding ``LEASE_COLUMNS``; None when nobody holds the run."""
    if row is None or row["lease_owner"] is None:
        return None
    return Lease(
        row["lease_owner"],
        row["lease_host"],
        row["lease_pid"],
        row["lease_heartbeat"],
        row["lease_epoch"],
        row["lease_renewed"],
        row["lease_clock"],
    )


def take(run_id: int, status: str, conn: Connection) -> Fence:
    """Inside a write transaction: this process takes the run's lease (the next epoch) and sets
    its status, clearing why it last stopped; the fence its driver's writes check."""
    now = store_time(conn)
    row = conn.execute(
        "UPDATE runs SET status = ?, outcome = NULL, error = NULL, finished_at = NULL,"
        " lease_owner = ?,"
        " lease_host = ?, lease_pid = ?, lease_heartbeat = ?, lease_renewed = ?, lease_clock = ?,"
        " lease_epoch = lease_epoch + 1, updated_at = ? WHERE id = ? RETURNING lease_epoch",
        (status, OWNER.id, OWNER.host, OWNER.pid, time.time(), now.at, now.clock, time.time(),
         run_id),
    ).fetchone()  # fmt: skip
    announce(conn, [run_id])
    return Fence(run_id, OWNER.id, int(row[0]))


class LeaseRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def acquire(self, run_id: int, status: str = "running") -> Fence:
        """Take the run for this process and set its status; ``RunBusy`` when a live owner
        holds it. The fence its driver's writes check."""
        return await self.db.write(partial(_acquire, run_id, status))

    async def renew(self, fence: Fence) -> None:
        """Renew the lease on the store's clock; ``LeaseLost`` when it is no longer ``fence``'s
        (taken over, or reaped, while this process was stopped)."""
        await self.db.write(partial(_renew, fence))

    async def holder(self, run_id: int) -> Lease | None:
        row = await self.db.fetchone(f"SELECT {LEASE_COLUMNS} FROM runs WHERE id = ?", (run_id,))
        return lease_of(row)

    async def now(self) -> StoreTime:
        """The store's clock now: what ``Lease.alive`` is asked with."""
        return await self.db.call(store_time)

    async def reap(self) -> list[int]:
        """Turn every live-looking run whose lease expired (or that has none) ``interrupted``;
        the ids turned. Only a store with such a run is written to."""
        live = await self.db.fetchone(
            f"SELECT 1 FROM runs WHERE status IN ({','.join('?' * len(LIVE_STATUSES))}) LIMIT 1",
            LIVE_STATUSES,
        )
        if live is None:
            return []
        return await self.db.write(_reap)


def _acquire(run_id: int, status: str, conn: Connection) -> Fence:
    row = conn.execute(f"SELECT {LEASE_COLUMNS} FROM runs WHERE id = ?", (run_id,)).fetchone()
    if row is None:
        raise LookupError(f"no run {run_id} in the store")
    lease = lease_of(row)
    if lease is not None and lease.owner != OWNER.id and lease.alive(store_time(conn)):
        raise RunBusy(f"run {run_id} is driven by {lease.describe()}")
    return take(run_id, status, conn)


def _renew(fence: Fence, conn: Connection) -> None:
    fence.check(conn)
    now = store_time(conn)
    conn.execute(
        "UPDATE runs SET lease_heartbeat = ?, lease_renewed = ?, lease_clock = ? WHERE id = ?",
        (time.time(), now.at, now.clock, fence.run_id),
    )


def _reap(conn: Connection) -> list[int]:
    now = store_time(conn)
    rows = conn.execute(
        f"SELECT id, {LEASE_COLUMNS} FROM runs"
        f" WHERE status IN ({','.join('?' * len(LIVE_STATUSES))})",
        LIVE_STATUSES,
    ).fetchall()
    gone = []
    for row in rows:
        lease = lease_of(row)
        if lease is None or (lease.owner != OWNER.id and not lease.alive(now)):
            gone.append(row["id"])
    conn.executemany(
        "UPDATE runs SET status = 'interrupted', outcome = 'interrupted', updated_at = ?"
        f"{LEASE_RELEASED} WHERE id = ?",
        [(time.time(), run_id) for run_id in gone],
    )
    announce(conn, gone)
    return gone

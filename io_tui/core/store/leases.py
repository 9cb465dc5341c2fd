"""Who drives a run: its lease (owner id, host, pid, heartbeat in the run row).

A process takes the lease when it creates or resumes a run, refreshes the heartbeat while the
run goes, and gives it up when the run pauses or ends. A lease has expired when its owner is
gone: the pid no longer lives on this host, or the heartbeat is older than ``LEASE_TTL_S``
(another host's owner, or a hung one). Any process that opens the store turns a live-looking
run whose lease expired ``interrupted`` (``reap``), so no run says ``running`` forever; a
second driver of a run whose lease holds is refused with the owner named (``RunBusy``).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import time
import uuid
from dataclasses import dataclass
from functools import partial

from io_tui.core.store.db import Connection, Database
from io_tui.core.store.live import announce

HEARTBEAT_S = 2.0  # how often a driving process refreshes its runs' heartbeat
LEASE_TTL_S = 30.0  # a heartbeat older than this has expired, whatever the pid says
LIVE_STATUSES = ("running", "asking")


@dataclass(frozen=True, slots=True)
class Owner:
    """This process, as a lease names it."""

    id: str
    host: str
    pid: int


OWNER = Owner(uuid.uuid4().hex[:12], socket.gethostname(), os.getpid())


class RunBusy(RuntimeError):
    """The run is driven by another live process; the message names it."""


@dataclass(frozen=True, slots=True)
class Lease:
    owner: str
    host: str
    pid: int
    heartbeat: float

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} (owner {self.owner})"

    def alive(self, now: float) -> bool:
        if now - self.heartbeat > LEASE_TTL_S:
            return False
        return self.host != OWNER.host or pid_alive(self.pid)


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


def _lease(row: sqlite3.Row) -> Lease | None:
    if row["lease_owner"] is None:
        return None
    return Lease(row["lease_owner"], row["lease_host"], row["lease_pid"], row["lease_heartbeat"])


class LeaseRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def acquire(self, run_id: int, status: str = "running") -> None:
        """Take the run for this process and set its status; ``RunBusy`` when a live owner
        holds it."""
        await self.db.write(partial(_acquire, run_id, status, time.time()))

    async def heartbeat(self, run_ids: list[int]) -> None:
        if not run_ids:
            return
        marks = ",".join("?" * len(run_ids))
        async with self.db.transaction() as conn:
            await conn.execute(
                f"UPDATE runs SET lease_heartbeat = ? WHERE lease_owner = ? AND id IN ({marks})",
                (time.time(), OWNER.id, *run_ids),
            )

    async def holder(self, run_id: int) -> Lease | None:
        row = await self.db.fetchone(
            "SELECT lease_owner, lease_host, lease_pid, lease_heartbeat FROM runs WHERE id = ?",
            (run_id,),
        )
        return _lease(row) if row else None

    async def reap(self) -> list[int]:
        """Turn every live-looking run whose lease expired (or that has none) ``interrupted``;
        the ids turned. Only a store with such a run is written to."""
        live = await self.db.fetchone(
            f"SELECT 1 FROM runs WHERE status IN ({','.join('?' * len(LIVE_STATUSES))}) LIMIT 1",
            LIVE_STATUSES,
        )
        if live is None:
            return []
        return await self.db.write(partial(_reap, time.time()))


def _acquire(run_id: int, status: str, now: float, conn: Connection) -> None:
    row = conn.execute(
        "SELECT lease_owner, lease_host, lease_pid, lease_heartbeat FROM runs WHERE id = ?",
        (run_id,),
    ).fetchone()
    if row is None:
        raise LookupError(f"no run {run_id} in the store")
    lease = _lease(row)
    if lease is not None and lease.owner != OWNER.id and lease.alive(now):
        raise RunBusy(f"run {run_id} is driven by {lease.describe()}")
    conn.execute(
        "UPDATE runs SET status = ?, outcome = NULL, finished_at = NULL, lease_owner = ?,"
        " lease_host = ?, lease_pid = ?, lease_heartbeat = ?, updated_at = ? WHERE id = ?",
        (status, OWNER.id, OWNER.host, OWNER.pid, now, now, run_id),
    )
    announce(conn, [run_id])


def _reap(now: float, conn: Connection) -> list[int]:
    rows = conn.execute(
        "SELECT id, lease_owner, lease_host, lease_pid, lease_heartbeat FROM runs"
        f" WHERE status IN ({','.join('?' * len(LIVE_STATUSES))})",
        LIVE_STATUSES,
    ).fetchall()
    gone = []
    for row in rows:
        lease = _lease(row)
        if lease is None or (lease.owner != OWNER.id and not lease.alive(now)):
            gone.append(row["id"])
    conn.executemany(
        "UPDATE runs SET status = 'interrupted', outcome = 'interrupted', lease_owner = NULL,"
        " lease_host = NULL, lease_pid = NULL, lease_heartbeat = NULL, updated_at = ?"
        " WHERE id = ?",
        [(now, run_id) for run_id in gone],
    )
    announce(conn, gone)
    return gone

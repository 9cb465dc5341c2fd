"""The one clock leases are stamped and judged by: the store's.

A lease renewed by one process is judged expired or not by another, perhaps on another machine;
if each read its own wall clock, a host whose clock runs ten minutes behind would see every live
lease as stale, and one ten minutes ahead would keep a dead owner's run for ten minutes more. So
neither side reads its own wall clock. On PostgreSQL both ask the server, in the statement's
transaction (``clock_timestamp()``: the server's time as the statement runs, not as its
transaction began). A SQLite store is one machine's file, so there both read that machine's
monotonic clock (``CLOCK_BOOTTIME``: it counts a suspended laptop's sleep too, which
``CLOCK_MONOTONIC`` does not), named by the kernel's boot id: a stamp from another boot (the
machine restarted since, or another machine sharing the file) is not comparable, and
``leases.py`` says what is done then.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache

from io_tui.core.store.db import Connection

POSTGRESQL = "postgresql"
_BOOT_ID = "/proc/sys/kernel/random/boot_id"


@dataclass(frozen=True, slots=True)
class StoreTime:
    """A reading of the store's clock: seconds on it, and which clock it is."""

    at: float
    clock: str

    def comparable(self, clock: str | None) -> bool:
        """Whether a stamp made on ``clock`` may be subtracted from this reading."""
        return clock == self.clock


def store_time(conn: Connection) -> StoreTime:
    """The store's clock now, read inside the caller's transaction."""
    if getattr(conn, "dialect", None) == POSTGRESQL:
        row = conn.execute("SELECT EXTRACT(EPOCH FROM clock_timestamp())::float8").fetchone()
        return StoreTime(float(row[0]), POSTGRESQL)
    return host_time()


def host_time() -> StoreTime:
    """This machine's monotonic clock, named by its boot: a SQLite store's clock."""
    return StoreTime(host_monotonic(), host_clock())


def host_monotonic() -> float:
    """Seconds since boot, sleep included where the platform can say (Linux's BOOTTIME)."""
    boottime = getattr(time, "CLOCK_BOOTTIME", None)
    return time.clock_gettime(boottime) if boottime is not None else time.monotonic()


@cache
def host_clock() -> str:
    """``boot:`` and this machine's boot id: the same for every process until it restarts."""
    try:
        with open(_BOOT_ID, encoding="ascii") as f:
            return f"boot:{f.read().strip()}"
    except OSError:  # no /proc: one id per process, so only this process's stamps compare
        import uuid  # (here only: uuid loads platform, and every store reads this clock)

        return f"boot:{uuid.uuid4()}"

"""What changed in the store, heard as it changes: every cockpit attached to one store follows
every run live, and a worker waits for the queue without spinning (issue 19, docs/SCALE-OUT.md).

**Announcing.** On PostgreSQL a write that changes what a run shows (its events, its status or
lease, its approvals) calls ``announce`` inside its own transaction: ``NOTIFY io_tui_runs,
'RUN SEQ'``, RUN the run's id and SEQ the id of its newest event then (0: none yet). PostgreSQL
delivers it at commit, to every connection listening, and never for a transaction rolled back.
A change a worker may act on (a run enqueued or released, an approval decided) also notifies
``io_tui_queue`` (payload: the run id), and a decision ``io_tui_decided`` (``announce_decided``;
payload: the request's id), which a wait for it hears (``ApprovalRepo.wait_decided``). On SQLite
neither does anything.

**Listening.** A notification says only which run moved and how far: ``Live.events_after``
reads the events themselves from their table, so nothing depends on a notification's size, and
a missed one (a listener's connection dropped, a server restart) is caught by the slow fallback
every listener keeps (and the sweep it makes at once when its connection is lost, and again
once it listens anew). ``Live.follow`` yields ``Changed`` batches: the runs announced since the
last batch with their newest sequence, and, every ``fallback_s``, a batch marked ``everything``
(read it all again) whose runs are those with events since the last such batch (one indexed
range of ``events``: a writer inserts events under the store's write lock, so ids are in commit
order). On SQLite, which has no notifications, ``follow`` is that poll alone, at the interval
given. ``Live.queue_wakeups`` is the worker's: ``await wakeup.wait(seconds)`` returns True at
the next ``io_tui_queue`` notification, or False after ``seconds`` (on SQLite, always that);
``Live.decision_wakeups`` is the same at each ``io_tui_decided`` one.

Listening takes one connection of its own per ``follow`` or wakeups (``PgDatabase.connect``),
never the store's; it is closed when the ``async with`` ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from io_tui.core.store.db import Connection, Database, StoreDamaged, StoreError

if TYPE_CHECKING:
    import psycopg

    from io_tui.core.store.trace import EventRow

RUNS = "io_tui_runs"
QUEUE = "io_tui_queue"
DECIDED = "io_tui_decided"
FALLBACK_S = 10.0  # how often a listener on PostgreSQL reads everything again, notified or not
RECONNECT_S = 2.0  # after a lost listening connection: how soon the next try

_NOTIFY_RUN = (
    "SELECT pg_notify(?, CONCAT(?, ' ',"
    " COALESCE((SELECT MAX(id) FROM events WHERE run_id = ?), 0)))"
)


def announce(conn: Connection, run_ids: Iterable[int], *, queue: bool = False) -> None:
    """Inside a write transaction: tell every listener, at commit, that these runs changed (and,
    with ``queue``, that a worker may find one to claim). PostgreSQL only; nothing on SQLite.
    Statements without a result to wait for: in a pipelined transaction they cost no round
    trip."""
    if getattr(conn, "dialect", None) != "postgresql":
        return
    for run_id in sorted(set(run_ids)):
        conn.execute(_NOTIFY_RUN, (RUNS, run_id, run_id))
        if queue:
            conn.execute("SELECT pg_notify(?, ?)", (QUEUE, str(run_id)))


def announce_decided(conn: Connection, approval_ids: Iterable[int]) -> None:
    """Inside a write transaction: tell every wait for these requests' decisions, at commit,
    that they are decided. PostgreSQL only; nothing on SQLite."""
    if getattr(conn, "dialect", None) != "postgresql":
        return
    for approval_id in sorted(set(approval_ids)):
        conn.execute("SELECT pg_notify(?, ?)", (DECIDED, str(approval_id)))


@dataclass(frozen=True, slots=True)
class Changed:
    """One batch of what changed: ``runs`` maps a run id to the newest event sequence known for
    it (an event's id; 0 when it has none); ``everything``: a fallback pass (or a listener that
    lost its connection), after which a view reads everything again, not only ``runs``."""

    runs: Mapping[int, int] = field(default_factory=dict)
    everything: bool = False


class Live:
    """The listen API of one store (``store.live``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    @property
    def notifies(self) -> bool:
        """Whether changes are announced as they happen (PostgreSQL), not only polled."""
        return self.db.dialect == "postgresql"

    def follow(self, poll_s: float = 2.0, *, fallback_s: float | None = None) -> Follow:
        """``async with store.live.follow() as changes: async for changed in changes: …``.
        The sweep's interval: ``fallback_s`` if given, else ``FALLBACK_S`` on PostgreSQL (its
        notifications carry the rest) and ``poll_s`` on SQLite (the only source there)."""
        if fallback_s is None:
            fallback_s = FALLBACK_S if self.notifies else poll_s
        return Follow(self, fallback_s)

    def queue_wakeups(self) -> Wakeup:
        """``async with store.live.queue_wakeups() as wakeup: … await wakeup.wait(poll_s)``."""
        return Wakeup(self, QUEUE)

    def decision_wakeups(self) -> Wakeup:
        """``async with store.live.decision_wakeups() as wakeup: … await wakeup.wait(s)``: True
        once any request is decided (``announce_decided``)."""
        return Wakeup(self, DECIDED)

    async def newest(self) -> int:
        """The id of the newest event in the store (0: none)."""
        row = await self.db.fetchone("SELECT MAX(id) FROM events")
        return int(row[0] or 0) if row else 0

    async def moved_since(self, after: int) -> dict[int, int]:
        """The runs with events newer than ``after``, with their newest event's id."""
        rows = await self.db.fetchall(
            "SELECT run_id, MAX(id) FROM events WHERE id > ? GROUP BY run_id", (after,)
        )
        return {int(row[0]): int(row[1]) for row in rows}

    async def events_after(self, cursors: Mapping[int, int]) -> list[tuple[int, EventRow]]:
        """The events of each run in ``cursors`` newer than its cursor (an event id), oldest
        first, each with its id."""
        if not cursors:
            return []
        sql, params = _events_after(cursors)
        return _newer(cursors, await self.db.fetchall(sql, params))


class _Listener:
    """One connection of its own that ``LISTEN``s on ``channel`` (PostgreSQL); reconnects after
    a loss, no sooner than ``RECONNECT_S`` after the last try."""

    def __init__(self, live: Live, channel: str) -> None:
        self.live = live
        self.channel = channel
        self.conn: psycopg.AsyncConnection[Any] | None = None
        self._tried = -RECONNECT_S

    async def connect(self) -> bool:
        """Listening now? (A failure to connect is tried again later, not raised.)"""
        if self.conn is not None or not self.live.notifies:
            return self.conn is not None
        now = time.monotonic()
        if now - self._tried < RECONNECT_S:
            return False
        self._tried = now
        from io_tui.core.store.pg import PgDatabase

        db = self.live.db
        assert isinstance(db, PgDatabase)
        try:
            conn = await db.connect()
        except StoreError:
            return False
        try:
            await conn.execute(f"LISTEN {self.channel}")
        except Exception:
            await conn.close()
            return False
        self.conn = conn
        return True

    async def heard(self, within: float) -> list[str] | None:
        """The payloads notified within ``within`` seconds (waiting for the first, then taking what
        else has come); None when not listening (the connection lost: a change may be
        missed)."""
        import psycopg

        conn = self.conn
        if conn is None:
            return None
        payloads: list[str] = []
        try:
            async for notify in conn.notifies(timeout=max(0.0, within), stop_after=1):
                payloads.append(notify.payload)
            if payloads:
                async for notify in conn.notifies(timeout=0.0):
                    payloads.append(notify.payload)
        except psycopg.Error:
            await self.close()
            return None
        return payloads

    async def close(self) -> None:
        conn, self.conn = self.conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


class Follow:
    """``Live.follow``: an async context manager (listening while it is open) and an async
    iterator of ``Changed``. ``baseline`` is the newest event when it was opened: a view that
    reads the runs' rows after opening has what came before."""

    def __init__(self, live: Live, fallback_s: float) -> None:
        self.live = live
        self.fallback_s = fallback_s
        self.baseline = 0
        self._listener = _Listener(live, RUNS)
        self._swept = 0  # every event up to this id has been in a batch's ``runs``
        self._next_sweep = 0.0
        self._lost = False  # the listening connection was lost since the last sweep

    async def __aenter__(self) -> Follow:
        await self._listener.connect()  # before the baseline: nothing falls between
        self.baseline = self._swept = await self.live.newest()
        self._next_sweep = time.monotonic() + self.fallback_s
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._listener.close()

    def __aiter__(self) -> AsyncIterator[Changed]:
        return self._changes()

    async def _changes(self) -> AsyncIterator[Changed]:
        while True:
            yield await self.next()

    async def next(self) -> Changed:
        """The next batch: as soon as something is announced, else at the next sweep."""
        listener = self._listener
        while True:
            wait = self._next_sweep - time.monotonic()
            if wait > 0 and await listener.connect():
                if self._lost:  # listening again: what came meanwhile was not heard
                    self._lost = False
                    return await self._sweep()
                payloads = await listener.heard(wait)
                if payloads:
                    return Changed(_parse(payloads))
                if payloads is None:  # lost: sweep now, and again once listening
                    self._lost = True
                    return await self._sweep()
                continue
            if wait > 0:
                await asyncio.sleep(min(wait, RECONNECT_S) if self.live.notifies else wait)
                continue
            return await self._sweep()

    async def events_after(self, cursors: Mapping[int, int]) -> list[tuple[int, EventRow]]:
        """``Live.events_after``, read on the listening connection while there is one: the
        store's own connection is busy with the app's other reads, and waiting behind them
        was most of an event's way to the screen."""
        conn = self._listener.conn
        if conn is None or not cursors:
            return await self.live.events_after(cursors)
        from io_tui.core.store.pg import translate

        sql, params = _events_after(cursors)
        try:
            cursor = await conn.execute(translate(sql, returning=False)[0], params)
            rows = await cursor.fetchall()
        except Exception:  # the connection lost: the store's, and the listener reconnects
            await self._listener.close()
            self._lost = True
            return await self.live.events_after(cursors)
        return _newer(cursors, rows)

    async def _sweep(self) -> Changed:
        self._next_sweep = time.monotonic() + self.fallback_s
        try:
            runs = await self.live.moved_since(self._swept)
        except StoreDamaged:
            raise  # not a server away a moment: the follower stops with it
        except StoreError:
            return Changed(everything=True)
        if runs:
            self._swept = max(self._swept, *runs.values())
        return Changed(runs, everything=True)


class Wakeup:
    """``Live.queue_wakeups``, ``Live.decision_wakeups``: an async context manager;
    ``wait(within)`` returns True at a notification on the channel (something to claim, a
    decision, maybe), False after ``within`` seconds."""

    def __init__(self, live: Live, channel: str) -> None:
        self._listener = _Listener(live, channel)

    async def __aenter__(self) -> Wakeup:
        await self._listener.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._listener.close()

    @property
    def listening(self) -> bool:
        """Whether a notification can come now (PostgreSQL, its connection up)."""
        return self._listener.conn is not None

    async def wait(self, within: float) -> bool:
        started = time.monotonic()
        if await self._listener.connect():
            payloads = await self._listener.heard(within)
            if payloads:
                return True
        left = within - (time.monotonic() - started)
        if left > 0:
            await asyncio.sleep(left)
        return False


def _events_after(cursors: Mapping[int, int]) -> tuple[str, tuple[int, ...]]:
    marks = ",".join("?" * len(cursors))
    sql = (
        "SELECT id, run_id, step, kind, detail, at FROM events"
        f" WHERE run_id IN ({marks}) AND id > ? ORDER BY id"
    )
    return sql, (*cursors, min(cursors.values()))


def _newer(cursors: Mapping[int, int], rows: Iterable[Any]) -> list[tuple[int, EventRow]]:
    """(id, event) of the rows ``id, run_id, step, kind, detail, at`` past their run's cursor."""
    from io_tui.core.store.trace import EventRow  # a follower's reads; the rest never load it

    return [
        (row[0], EventRow(row[1], row[2], row[3], json.loads(row[4]), row[5]))
        for row in rows
        if row[0] > cursors[row[1]]
    ]


def _parse(payloads: Iterable[str]) -> dict[int, int]:
    """``RUN SEQ`` payloads as {run: newest seq}; anything else is ignored."""
    runs: dict[int, int] = {}
    for payload in payloads:
        run, _, seq = payload.partition(" ")
        if run.isdigit() and seq.isdigit():
            runs[int(run)] = max(int(seq), runs.get(int(run), 0))
    return runs

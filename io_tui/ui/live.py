"""Every run in the store, live in this app: the runs other processes drive (``io-tui worker``
on any machine, ``io-tui resume``, another cockpit) follow the store's announcements
(``store.live``: LISTEN/NOTIFY on PostgreSQL, a poll on SQLite), not a timer.

``StoreFollower`` reads each batch of ``Changed`` as it comes: the new events of the runs it
names, read from their table past the follower's cursor for each run, go into the app's
``EventPump`` as if a host here had given them (``stored=True``), so the run tree, the
transcript and the gauges move exactly as for a run this app drives; then the app re-reads
those runs' rows (status, who drives each: ``on HOST pid N``) and the inbox (an ask from any
worker appears; one decided elsewhere leaves, saying who decided). A sweep (``everything``)
re-reads all the rows and catches what a lost notification missed.

A run a host here drives is shown from its host, never from the store a second time: its events
are skipped while the host has it, and so is every stored event no newer than the newest its
host gave (``EventPump.hosted_at``), which covers the copies that reach the store as the run
ends. Events before the follower started are in the rows and steps the app reads at its start.
Such a run's start does not take the selection (``RunBoard.followed``): on a farm runs start all
day; it is scrolled into view once the operator is idle (``attention``). Its ask does.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.worker import Worker, WorkerCancelled, WorkerFailed

from io_tui.core import Changed, EventKind, RunEvent, Store, StoreDamaged, StoreError
from io_tui.ui.bridge import EventPump
from io_tui.ui.run_board import RunBoard

if TYPE_CHECKING:
    from io_tui.ui.approver import ApprovalDesk
    from io_tui.ui.hosts import RunHost

KINDS = {kind.value: kind for kind in EventKind}
OPERATOR_RUN = 0  # the run id of the operator's audit (memory edits, cancels): not a run
ROWS_EVERY_S = 0.2  # the rows (and the inbox) of changed runs: read again at most this often


class StoreFollower:
    """``changed(run_ids)`` is the app's: re-read those runs' rows and the inbox (``None``:
    everything), and return once that is done (one at a time; the events go on meanwhile)."""

    def __init__(
        self,
        store: Store,
        pump: EventPump,
        board: RunBoard,
        is_live: Callable[[int], bool],
        changed: Callable[[list[int] | None], Awaitable[None]],
    ) -> None:
        self.store = store
        self.pump = pump
        self.board = board
        self.is_live = is_live
        self.changed = changed
        self.cursors: dict[int, int] = {}  # run id → the newest event id taken in (or skipped)
        self.baseline = 0
        self._dirty: set[int] = set()  # runs whose rows are to be read again
        self._everything = False  # every row is
        self._refreshing: asyncio.Task[None] | None = None
        self._read = store.live.events_after  # the follow's own connection, once it follows
        self._unread: dict[int, int] = {}  # runs of a batch whose read failed: with the next

    async def run(self, poll_s: float) -> None:
        """Follow until cancelled; ``poll_s``: the sweep's interval on SQLite (PostgreSQL's is
        slower: its notifications carry the rest)."""
        async with self.store.live.follow(poll_s) as changes:
            self.baseline = changes.baseline
            self._read = changes.events_after
            async for batch in changes:
                try:
                    await self.apply(batch)
                except StoreDamaged:
                    raise  # for good: the app says so (``IoApp.on_worker_state_changed``)
                except StoreError:  # the server away a moment: its runs go with the next batch
                    continue

    async def apply(self, batch: Changed) -> None:
        """The batch's events now; its rows by the one refresh in flight, which takes every
        run named meanwhile when it goes again (the events never wait for rows)."""
        await self.take_events(batch)
        self._everything = self._everything or batch.everything
        self._dirty.update(batch.runs)
        if self._refreshing is None or self._refreshing.done():
            self._refreshing = asyncio.create_task(self._refresh())

    async def _refresh(self) -> None:
        while self._everything or self._dirty:
            everything, dirty = self._everything, self._dirty
            self._everything, self._dirty = False, set()
            await self.changed(None if everything else sorted(dirty))
            # what comes meanwhile waits a little: the rows of a busy store's runs are read a
            # few times a second, not once per commit (their events are not held back)
            await asyncio.sleep(ROWS_EVERY_S)

    async def take_events(self, batch: Changed) -> int:
        """Put the new events of the runs ``batch`` names that no host here drives into the
        pump; how many."""
        wanted: dict[int, int] = {}
        runs, self._unread = self._unread, {}
        for run_id, seq in batch.runs.items():
            runs[run_id] = max(seq, runs.get(run_id, 0))
        for run_id, seq in runs.items():
            cursor = self.cursors.get(run_id, self.baseline)
            if seq <= cursor or run_id == OPERATOR_RUN:
                continue
            if self.is_live(run_id):
                self.cursors[run_id] = seq  # its host shows it
            else:
                wanted[run_id] = cursor
        if not wanted:
            return 0
        taken = 0
        hosted_at = self.pump.hosted_at
        try:
            read = await self._read(wanted)
        except StoreError:
            self._unread = runs
            raise
        for seq, row in read:
            run_id = row.run_id
            self.cursors[run_id] = max(seq, self.cursors.get(run_id, 0))
            kind = KINDS.get(row.kind)
            if kind is None or self.is_live(run_id) or row.at <= hosted_at.get(run_id, 0.0):
                continue  # a newer io-tui's kind of event, or one a host here has shown
            self.board.followed.add(run_id)
            self.pump.put(RunEvent(run_id, row.step, kind, row.detail, row.at), stored=True)
            taken += 1
        return taken


class Followed(Protocol):
    """What ``follow`` uses of the app (``IoApp``)."""

    store: Store
    event_pump: EventPump
    board: RunBoard

    @property
    def host(self) -> RunHost: ...

    @property
    def desk(self) -> ApprovalDesk: ...

    def refresh_runs(self, run_ids: list[int] | None) -> Worker[None]: ...

    def run_worker(self, work: Any, *, group: str, exit_on_error: bool) -> Worker[Any]: ...


def follow(app: Followed, poll_s: float) -> Worker[None]:
    """Start following the store in an app worker (group ``live``): each batch's events into the
    views, then the rows of its runs, the inbox and its badge."""

    async def changed(run_ids: list[int] | None) -> None:
        with contextlib.suppress(WorkerFailed, WorkerCancelled):
            await app.refresh_runs(run_ids).wait()
        app.desk.refresh_count()
        app.desk.reload_inbox()

    follower = StoreFollower(app.store, app.event_pump, app.board, app.host.is_live, changed)
    return app.run_worker(follower.run(poll_s), group="live", exit_on_error=False)

"""The store: one SQLite file, or one PostgreSQL database, holding runs of every workspace
(DESIGN §3.5; both backends keep one contract: ``db.py``, ``pg.py``).

``runs`` writes what a run does, ``trace`` reads it back, ``approvals`` and ``rules`` hold the
human's decisions, ``notes`` what agents remember between runs (``recalls``: which requests
carried each note; ``daily_log``: what each run did, whose lines worth keeping become notes),
``cancels`` ends the runs no process drives that the operator abandons; ``live`` says what
changed as it changes (LISTEN/NOTIFY on PostgreSQL, a poll on SQLite).

Each repository is made, and its module imported, when it is first used: a command that reads
the approvals alone does not pay for the rest. Their row types are imported from their own
modules (``from io_tui.core.store.runs import RunRow``); this package keeps only the store, where
it is, and the errors every caller meets."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from io_tui.core.store.db import (
    Database,
    SqliteDatabase,
    StoreDamaged,
    StoreError,
    StoreFull,
    StoreUnreachable,
)
from io_tui.core.store.leases import LeaseLost, LeaseRepo
from io_tui.core.store.urls import StoreUrl, is_url, store_url

if TYPE_CHECKING:
    from io_tui.core.store.approvals import ApprovalRepo, RuleRepo
    from io_tui.core.store.cancel import CancelRepo
    from io_tui.core.store.checkpoints import CheckpointRepo
    from io_tui.core.store.daily_log import DailyLogRepo
    from io_tui.core.store.forks import ForkRepo
    from io_tui.core.store.intents import IntentRepo
    from io_tui.core.store.live import Live
    from io_tui.core.store.notes import NoteRepo
    from io_tui.core.store.probes import ProbeRepo
    from io_tui.core.store.progress import ProgressRepo
    from io_tui.core.store.queue import QueueRepo
    from io_tui.core.store.recalls import RecallRepo
    from io_tui.core.store.runs import RunRepo
    from io_tui.core.store.tool_sets import ToolSetRepo
    from io_tui.core.store.trace import TraceRepo
    from io_tui.core.store.trust import TrustRepo

__all__ = [
    "LeaseLost",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreFull",
    "StoreLocation",
    "StoreUnreachable",
    "store_location",
    "store_trouble",
]

StoreLocation = Path | StoreUrl
"""Where a store is: a SQLite file's path, or a PostgreSQL URL (shown without its password)."""


def store_trouble(error: StoreError) -> str:
    """What a store error that stopped a run is, in a few words (a notice's title)."""
    if isinstance(error, StoreFull):
        return "Store full"
    if isinstance(error, StoreUnreachable):
        return "Store unreachable"
    if isinstance(error, LeaseLost):
        return "Run taken over"
    if isinstance(error, StoreDamaged):
        return "Store damaged"
    return "Store"


def store_location(text: str | Path) -> StoreLocation:
    """``--store``'s (or ``IO_TUI_STORE``'s, or the config's) value: a ``postgresql://`` URL
    selects PostgreSQL; anything else is a SQLite file's path."""
    if isinstance(text, StoreUrl):
        return text
    if isinstance(text, str) and is_url(text):
        return store_url(text)
    return Path(text).expanduser()


class Store:
    """Open with ``await Store.open(location)``; close with ``await store.close()``. Without
    ``create`` a missing file (an empty database) is an error (``StoreError``: "no store at
    PATH"), not a new store. ``check``: a SQLite file is ``quick_check``ed whole at its open
    (``StoreDamaged``), for the commands that start runs; any later query that meets damage
    raises ``StoreDamaged`` too."""

    def __init__(
        self, path: StoreLocation | str, *, create: bool = True, check: bool = False
    ) -> None:
        self.path = where = store_location(path)
        if isinstance(where, StoreUrl):
            from io_tui.core.store.pg import PgDatabase  # the backend only a URL's store loads

            self.db: Database = PgDatabase(where, create=create)
        else:
            self.db = SqliteDatabase(where, create=create, check=check)
        self.leases = LeaseRepo(self.db)  # who drives a run; reaped at every open

    @cached_property
    def runs(self) -> RunRepo:
        """What the run loop writes, each step's commit in one transaction."""
        from io_tui.core.store.runs import RunRepo

        return RunRepo(self.db)

    @cached_property
    def trace(self) -> TraceRepo:
        """Steps, observations and events read back."""
        from io_tui.core.store.trace import TraceRepo

        return TraceRepo(self.db)

    @cached_property
    def approvals(self) -> ApprovalRepo:
        """Approval requests and their decisions."""
        from io_tui.core.store.approvals import ApprovalRepo

        return ApprovalRepo(self.db)

    @cached_property
    def rules(self) -> RuleRepo:
        """The rules remembered from decisions."""
        from io_tui.core.store.approvals import RuleRepo

        return RuleRepo(self.db)

    @cached_property
    def notes(self) -> NoteRepo:
        """What agents remember between runs."""
        from io_tui.core.store.notes import NoteRepo

        return NoteRepo(self.db)

    @cached_property
    def recalls(self) -> RecallRepo:
        """Which requests carried which note."""
        from io_tui.core.store.recalls import RecallRepo

        return RecallRepo(self.db)

    @cached_property
    def daily_log(self) -> DailyLogRepo:
        """What each run did, by day."""
        from io_tui.core.store.daily_log import DailyLogRepo

        return DailyLogRepo(self.db, self.notes)

    @cached_property
    def intents(self) -> IntentRepo:
        """Each tool call before it executes (a call that only reads: with its result)."""
        from io_tui.core.store.intents import IntentRepo

        return IntentRepo(self.db)

    @cached_property
    def queue(self) -> QueueRepo:
        """The run queue and its workers."""
        from io_tui.core.store.queue import QueueRepo

        return QueueRepo(self.db)

    @cached_property
    def progress(self) -> ProgressRepo:
        """The progress ledger's revisions."""
        from io_tui.core.store.progress import ProgressRepo

        return ProgressRepo(self.db)

    @cached_property
    def cancels(self) -> CancelRepo:
        """A stopped run the operator abandons."""
        from io_tui.core.store.cancel import CancelRepo

        return CancelRepo(self.db)

    @cached_property
    def checkpoints(self) -> CheckpointRepo:
        """Runs' workspace checkpoints (rewind, fork)."""
        from io_tui.core.store.checkpoints import CheckpointRepo

        return CheckpointRepo(self.db)

    @cached_property
    def forks(self) -> ForkRepo:
        """Runs started from another run's step."""
        from io_tui.core.store.forks import ForkRepo

        return ForkRepo(self.db)

    @cached_property
    def tool_sets(self) -> ToolSetRepo:
        """The tool schemas requests offered, by digest."""
        from io_tui.core.store.tool_sets import ToolSetRepo

        return ToolSetRepo(self.db)

    @cached_property
    def probes(self) -> ProbeRepo:
        """ "what if": recorded requests sent again, changed."""
        from io_tui.core.store.probes import ProbeRepo

        return ProbeRepo(self.db)

    @cached_property
    def trust(self) -> TrustRepo:
        """The workspace .mcp.json contents the operator trusted."""
        from io_tui.core.store.trust import TrustRepo

        return TrustRepo(self.db)

    @cached_property
    def live(self) -> Live:
        """What changed, as it changes (NOTIFY on PostgreSQL)."""
        from io_tui.core.store.live import Live

        return Live(self.db)

    @classmethod
    async def open(
        cls, path: StoreLocation | str, *, create: bool = True, check: bool = False
    ) -> Store:
        """Open (with ``create``, creating or migrating) the file; runs whose driving process
        died are turned ``interrupted`` here (``LeaseRepo.reap``), so none says ``running``
        forever."""
        store = cls(path, create=create, check=check)
        await store.db.open()
        try:
            await store.leases.reap()
        except StoreFull:
            pass  # no room to record it: reads go on, and an open with room reaps them
        except BaseException:
            await store.close()  # its connection's thread would keep the process alive
            raise
        return store

    async def close(self) -> None:
        await self.db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

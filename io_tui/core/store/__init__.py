"""The store: one SQLite file, or one PostgreSQL database, holding runs of every workspace
(DESIGN §3.5; both backends keep one contract: ``db.py``, ``pg.py``).

``runs`` writes what a run does, ``trace`` reads it back, ``approvals`` and ``rules`` hold the
human's decisions, ``notes`` what agents remember between runs (``recalls``: which requests
carried each note; ``daily_log``: what each run did, whose lines worth keeping become notes),
``cancels`` ends the runs no process drives that the operator abandons; ``live`` says what
changed as it changes (LISTEN/NOTIFY on PostgreSQL, a poll on SQLite)."""

from __future__ import annotations

from pathlib import Path

from io_tui.core.store.approvals import ApprovalRecord, ApprovalRepo, RememberedRule, RuleRepo
from io_tui.core.store.cancel import (
    STOPPED,
    CancelledRun,
    CancelRepo,
    NotCancellable,
    not_stopped,
)
from io_tui.core.store.checkpoints import CheckpointRepo, CheckpointRow
from io_tui.core.store.daily_log import DailyLogRepo
from io_tui.core.store.db import (
    Database,
    SqliteDatabase,
    StoreDamaged,
    StoreError,
    StoreFull,
    StoreUnreachable,
)
from io_tui.core.store.forks import ForkRepo, NewFork
from io_tui.core.store.intents import IntentRepo, IntentRow
from io_tui.core.store.leases import Fence, LeaseLost, LeaseRepo, RunBusy
from io_tui.core.store.live import Changed, Live
from io_tui.core.store.notes import NoteRepo
from io_tui.core.store.pg import PgDatabase, StoreUrl, is_url, store_url
from io_tui.core.store.probes import NewProbe, ProbeRepo, ProbeRow
from io_tui.core.store.progress import ProgressRepo, ProgressRow
from io_tui.core.store.queue import Claim, GitSource, QueueEntry, QueueRepo, WorkerRow
from io_tui.core.store.recalls import Recall, RecallRepo
from io_tui.core.store.requests import RequestFigures, RequestRecord, RequestRow
from io_tui.core.store.runs import RunRepo, RunRow, StepCommit
from io_tui.core.store.tool_sets import ToolSetRepo, tools_digest
from io_tui.core.store.trace import EventRow, ObservationRow, StepRow, StepSummary, TraceRepo
from io_tui.core.store.trust import TrustRepo

__all__ = [
    "STOPPED",
    "ApprovalRecord",
    "CancelledRun",
    "Changed",
    "CheckpointRow",
    "Claim",
    "EventRow",
    "Fence",
    "GitSource",
    "IntentRow",
    "LeaseLost",
    "Live",
    "NewFork",
    "NewProbe",
    "NotCancellable",
    "ObservationRow",
    "ProbeRow",
    "ProgressRow",
    "QueueEntry",
    "Recall",
    "RememberedRule",
    "RequestFigures",
    "RequestRecord",
    "RequestRow",
    "RunBusy",
    "RunRow",
    "StepCommit",
    "StepRow",
    "StepSummary",
    "Store",
    "StoreDamaged",
    "StoreError",
    "StoreFull",
    "StoreLocation",
    "StoreUnreachable",
    "StoreUrl",
    "WorkerRow",
    "not_stopped",
    "store_location",
    "store_trouble",
    "tools_digest",
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
        self.db: Database = (
            PgDatabase(where, create=create)
            if isinstance(where, StoreUrl)
            else SqliteDatabase(where, create=create, check=check)
        )
        self.runs = RunRepo(self.db)
        self.trace = TraceRepo(self.db)
        self.approvals = ApprovalRepo(self.db)
        self.rules = RuleRepo(self.db)
        self.notes = NoteRepo(self.db)  # what agents remember between runs
        self.recalls = RecallRepo(self.db)  # which requests carried which note
        self.daily_log = DailyLogRepo(self.db, self.notes)  # what each run did, by day
        self.intents = IntentRepo(self.db)
        self.leases = LeaseRepo(self.db)
        self.queue = QueueRepo(self.db)
        self.progress = ProgressRepo(self.db)
        self.cancels = CancelRepo(self.db)  # a stopped run the operator abandons
        self.checkpoints = CheckpointRepo(self.db)  # runs' workspace checkpoints (rewind, fork)
        self.forks = ForkRepo(self.db)  # runs started from another run's step
        self.tool_sets = ToolSetRepo(self.db)  # the tool schemas requests offered, by digest
        self.probes = ProbeRepo(self.db)  # "what if": recorded requests sent again, changed
        self.trust = TrustRepo(self.db)  # the workspace .mcp.json contents the operator trusted
        self.live = Live(self.db)  # what changed, as it changes (NOTIFY on PostgreSQL)

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

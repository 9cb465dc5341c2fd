"""The store: one SQLite file holding runs of every workspace (DESIGN §3.5).

``runs`` writes what a run does, ``trace`` reads it back, ``approvals`` and ``rules`` hold the
human's decisions, ``memory`` the notes that outlive a run."""

from __future__ import annotations

from pathlib import Path

from io_tui.core.store.approvals import ApprovalRecord, ApprovalRepo, RememberedRule, RuleRepo
from io_tui.core.store.db import Database, StoreError
from io_tui.core.store.intents import IntentRepo, IntentRow
from io_tui.core.store.leases import LeaseRepo, RunBusy
from io_tui.core.store.memory import MemoryRepo, Recall
from io_tui.core.store.queue import Claim, GitSource, QueueEntry, QueueRepo, WorkerRow
from io_tui.core.store.requests import RequestFigures, RequestRecord, RequestRow
from io_tui.core.store.runs import RunRepo, RunRow, StepCommit
from io_tui.core.store.trace import EventRow, ObservationRow, StepRow, StepSummary, TraceRepo

__all__ = [
    "ApprovalRecord",
    "Claim",
    "EventRow",
    "GitSource",
    "IntentRow",
    "ObservationRow",
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
    "StoreError",
    "WorkerRow",
]


class Store:
    """Open with ``await Store.open(path)``; close with ``await store.close()``. Without
    ``create`` a missing file is an error (``StoreError``: "no store at PATH"), not a new store."""

    def __init__(self, path: Path, *, create: bool = True) -> None:
        self.path = path
        self.db = Database(path, create=create)
        self.runs = RunRepo(self.db)
        self.trace = TraceRepo(self.db)
        self.approvals = ApprovalRepo(self.db)
        self.rules = RuleRepo(self.db)
        self.memory = MemoryRepo(self.db)
        self.intents = IntentRepo(self.db)
        self.leases = LeaseRepo(self.db)
        self.queue = QueueRepo(self.db)

    @classmethod
    async def open(cls, path: Path, *, create: bool = True) -> Store:
        """Open (with ``create``, creating or migrating) the file; runs whose driving process
        died are turned ``interrupted`` here (``LeaseRepo.reap``), so none says ``running``
        forever."""
        store = cls(path, create=create)
        await store.db.open()
        await store.leases.reap()
        return store

    async def close(self) -> None:
        await self.db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

"""The store: one SQLite file holding runs of every workspace (DESIGN §3.5)."""

from __future__ import annotations

from pathlib import Path

from io_tui.core.store.approvals import ApprovalRecord, ApprovalRepo, RememberedRule, RuleRepo
from io_tui.core.store.db import Database, StoreError
from io_tui.core.store.memory import MemoryRepo
from io_tui.core.store.requests import RequestRecord
from io_tui.core.store.runs import RunRepo, RunRow, StepCommit

__all__ = [
    "ApprovalRecord",
    "RememberedRule",
    "RequestRecord",
    "RunRow",
    "StepCommit",
    "Store",
    "StoreError",
]


class Store:
    """Open with ``await Store.open(path)``; close with ``await store.close()``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = Database(path)
        self.runs = RunRepo(self.db)
        self.approvals = ApprovalRepo(self.db)
        self.rules = RuleRepo(self.db)
        self.memory = MemoryRepo(self.db)

    @classmethod
    async def open(cls, path: Path) -> Store:
        store = cls(path)
        await store.db.open()
        return store

    async def close(self) -> None:
        await self.db.close()

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

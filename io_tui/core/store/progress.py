"""The progress ledger's revisions (``core/progress``): one row each time what a run's ledger
says changed, as JSON with its digest. The newest revision is the run's ledger; a run from
before schema 7, or one with no revision yet, has its ledger folded from its events instead."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import aiosqlite

from io_tui.core.store.db import Connection, Database, row_as


@dataclass(frozen=True, slots=True)
class ProgressRow:
    run_id: int
    revision: int
    step: int
    digest: str
    ledger: dict[str, Any]
    created_at: float

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> ProgressRow:
        return row_as(cls, row, ledger=json.loads(row["ledger"]))


class ProgressRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def save(self, run_id: int, step: int, digest: str, ledger: dict[str, Any]) -> int:
        """A new revision of the run's ledger, unless the newest one says the same (its
        ``digest``); returns the revision that holds it."""
        return await self.db.write(
            partial(save_progress, run_id, step, digest, ledger, time.time())
        )

    async def latest(self, run_id: int) -> ProgressRow | None:
        row = await self.db.fetchone(
            "SELECT * FROM progress WHERE run_id = ? ORDER BY revision DESC LIMIT 1", (run_id,)
        )
        return ProgressRow.from_row(row) if row else None

    async def revisions(self, run_id: int) -> list[ProgressRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM progress WHERE run_id = ? ORDER BY revision", (run_id,)
        )
        return [ProgressRow.from_row(r) for r in rows]


def save_progress(
    run_id: int, step: int, digest: str, ledger: dict[str, Any], now: float, conn: Connection
) -> int:
    """``ProgressRepo.save`` inside a transaction (a step's commit saves its revision in its
    own: ``RunRepo.commit_step``)."""
    row = conn.execute(
        "SELECT revision, digest FROM progress WHERE run_id = ? ORDER BY revision DESC LIMIT 1",
        (run_id,),
    ).fetchone()
    if row is not None and row["digest"] == digest:
        return int(row["revision"])
    revision = (int(row["revision"]) if row is not None else 0) + 1
    conn.execute(
        "INSERT INTO progress (run_id, revision, step, digest, ledger, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (run_id, revision, step, digest, json.dumps({**ledger, "revision": revision}), now),
    )
    return revision

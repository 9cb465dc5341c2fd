"""Checkpoints of runs' workspaces as the store records them: which run, step and phase, the
commit and tree in the workspace's shadow git store (``core/checkpoints``), what was left out.

The git store holds the files; these rows say what each checkpoint is to a run, so a rewind,
a fork and the trace find them from the store alone, in any process. A pruned checkpoint keeps
its row (``pruned_at``): its run's history says it existed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import aiosqlite

from io_tui.core.store.db import Connection, Database, row_as

BEFORE = "before"  # the workspace before a step's first call that may change files
RESUMED = "resumed"  # before the calls a resume carries on (some of the step's may have run)
END = "end"  # the workspace as the run left it: finished, paused, stopped
REWIND_FROM = "rewind-from"  # the workspace as a rewind found it: what undoing it restores
REWOUND = "rewound"  # the workspace after a rewind
FORK = "fork"  # a fork's workspace, restored to the step it starts from


@dataclass(frozen=True, slots=True)
class CheckpointRow:
    id: int
    run_id: int
    step: int
    phase: str
    workspace: str
    git_commit: str
    tree: str
    changed: int
    skipped: list[dict[str, str]]
    took_ms: float
    created_at: float
    pruned_at: float | None

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> CheckpointRow:
        return row_as(cls, row, skipped=json.loads(row["skipped"]))

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "step": self.step,
            "phase": self.phase,
            "commit": self.git_commit,
            "tree": self.tree,
            "changed": self.changed,
            "skipped": self.skipped,
            "took_ms": round(self.took_ms, 1),
            "at": self.created_at,
            "pruned": self.pruned_at is not None,
        }


class CheckpointRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(
        self,
        *,
        run_id: int,
        step: int,
        phase: str,
        workspace: str,
        commit: str,
        tree: str,
        changed: int,
        skipped: Sequence[dict[str, str]],
        took_ms: float,
    ) -> CheckpointRow:
        now = time.time()
        row_id = await self.db.write(
            partial(
                _insert,
                "INSERT INTO checkpoints (run_id, step, phase, workspace, git_commit, tree,"
                " changed, skipped, took_ms, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, step, phase, workspace, commit, tree, changed,
                 json.dumps(list(skipped)), took_ms, now),
            )
        )  # fmt: skip
        return CheckpointRow(
            row_id, run_id, step, phase, workspace, commit, tree, changed,
            [dict(s) for s in skipped], took_ms, now, None,
        )  # fmt: skip

    async def for_run(self, run_id: int) -> list[CheckpointRow]:
        """The run's checkpoints, oldest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [CheckpointRow.from_row(r) for r in rows]

    async def latest(self, run_id: int) -> CheckpointRow | None:
        row = await self.db.fetchone(
            "SELECT * FROM checkpoints WHERE run_id = ? ORDER BY id DESC LIMIT 1", (run_id,)
        )
        return CheckpointRow.from_row(row) if row else None

    async def get(self, checkpoint_id: int) -> CheckpointRow | None:
        row = await self.db.fetchone("SELECT * FROM checkpoints WHERE id = ?", (checkpoint_id,))
        return CheckpointRow.from_row(row) if row else None

    async def runs_of(self, workspace: str) -> list[tuple[int, float, float | None]]:
        """The runs with checkpoints of ``workspace`` still kept: (run id, newest checkpoint's
        time, the run's finish time or None while it may go on), newest first."""
        rows = await self.db.fetchall(
            "SELECT c.run_id AS run_id, MAX(c.created_at) AS at, r.finished_at AS finished_at"
            " FROM checkpoints c JOIN runs r ON r.id = c.run_id"
            " WHERE c.workspace = ? AND c.pruned_at IS NULL"
            " GROUP BY c.run_id, r.finished_at ORDER BY MAX(c.created_at) DESC",
            (workspace,),
        )
        return [(int(r["run_id"]), float(r["at"]), r["finished_at"]) for r in rows]

    async def mark_pruned(self, run_ids: Sequence[int]) -> None:
        if not run_ids:
            return
        marks = ", ".join("?" for _ in run_ids)
        await self.db.write(
            partial(
                _execute,
                f"UPDATE checkpoints SET pruned_at = ? WHERE run_id IN ({marks})"
                " AND pruned_at IS NULL",
                (time.time(), *run_ids),
            )
        )


def _insert(sql: str, params: tuple[Any, ...], conn: Connection) -> int:
    """One row; its id."""
    row_id = conn.execute(sql, params).lastrowid
    assert row_id is not None
    return row_id


def _execute(sql: str, params: tuple[Any, ...], conn: Connection) -> None:
    conn.execute(sql, params)

"""Tool calls as intents: each written before it executes, closed when its outcome commits.

An intent holds the call's exact arguments, the act and target the policy checked, the approval
that allowed it and, for a file write, what the file held before. The step commit that stores
the call's observation closes it (``done``) in the same transaction, so an intent still
``started`` is a call that was in flight when its process died: its effect may or may not have
happened (``io-tui trace`` says "started, outcome unknown"; a resume reconciles it). An operator's
reconciliation closes it as ``rerun``, ``marked_done`` or ``skipped``.

A call of a tool that only reads (``Tool.only_reads``: a file read, a listing, a search, a
recorded result read back, a skill's instructions) is the exception: a resumed run runs it
again whether or not it was in flight (``reconcile``: "it only reads"), so nothing is gained by
writing it first, and its intent is written with its observation, ``done``, in the step commit
(``StepCommit.intents``): one hand-off to the store's thread fewer for the calls agents make
most.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import aiosqlite

from io_tui.core.store.db import Connection, Database, row_as
from io_tui.core.store.leases import Fence, fenced

STARTED = "started"
_COLUMNS = "run_id, step, call_id, tool, arguments, act, target, approval_id, before, started_at"


@dataclass(frozen=True, slots=True)
class Intent:
    """A call's intent as written: before it executes (``IntentRepo.begin``), or, for a call
    that only reads, with its observation (``StepCommit.intents``)."""

    run_id: int
    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any]
    act: str = ""  # '' for a call no policy checks
    target: str = ""
    approval_id: int | None = None
    before: dict[str, Any] | None = None  # a write's file before it: {"exists", "text"}
    started_at: float = field(default_factory=time.time)  # once its call's file is read

    def values(self) -> tuple[Any, ...]:
        """The row's values, in ``_COLUMNS``' order."""
        return (
            self.run_id,
            self.step,
            self.call_id,
            self.tool,
            json.dumps(self.arguments),
            self.act,
            self.target,
            self.approval_id,
            json.dumps(self.before) if self.before is not None else None,
            self.started_at,
        )


def insert_done(intents: Sequence[Intent], ended_at: float, conn: Connection) -> None:
    """Inside the step commit: the intents of calls that only read, closed ``done`` with their
    observations."""
    if intents:
        conn.executemany(
            f"INSERT INTO intents ({_COLUMNS}, status, ended_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'done', ?)",
            [(*i.values(), ended_at) for i in intents],
        )


@dataclass(frozen=True, slots=True)
class IntentRow:
    id: int
    run_id: int
    step: int
    call_id: str
    tool: str
    arguments: dict[str, Any]
    act: str  # '' for a call no policy checks
    target: str
    approval_id: int | None
    before: dict[str, Any] | None  # a write's file before it: {"exists", "text"} or None
    status: str
    started_at: float
    ended_at: float | None

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> IntentRow:
        return row_as(
            cls,
            row,
            arguments=json.loads(row["arguments"]),
            before=json.loads(row["before"]) if row["before"] else None,
        )

    @property
    def in_flight(self) -> bool:
        return self.status == STARTED

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "step": self.step,
            "call_id": self.call_id,
            "tool": self.tool,
            "arguments": self.arguments,
            "act": self.act,
            "target": self.target,
            "approval_id": self.approval_id,
            "status": self.status,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }


class IntentRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def begin(self, intent: Intent, *, fence: Fence | None = None) -> int:
        """``intent``, before its call executes; its id. ``fence``: its driver's (``LeaseLost``,
        nothing written, once another holds the run: the call must not run)."""
        values = intent.values()

        def insert(conn: Connection) -> int:
            fenced(fence, conn)
            cursor = conn.execute(
                f"INSERT INTO intents ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", values
            )
            assert cursor.lastrowid is not None
            return cursor.lastrowid

        return await self.db.write(insert)

    async def close(self, intent_id: int, status: str, *, fence: Fence | None = None) -> None:
        def update(conn: Connection) -> None:
            fenced(fence, conn)
            conn.execute(
                "UPDATE intents SET status = ?, ended_at = ? WHERE id = ?",
                (status, time.time(), intent_id),
            )

        await self.db.write(update)

    async def latest(self, run_id: int, call_id: str) -> IntentRow | None:
        row = await self.db.fetchone(
            "SELECT * FROM intents WHERE run_id = ? AND call_id = ? ORDER BY id DESC LIMIT 1",
            (run_id, call_id),
        )
        return IntentRow.from_row(row) if row else None

    async def for_run(self, run_id: int) -> list[IntentRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM intents WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [IntentRow.from_row(r) for r in rows]

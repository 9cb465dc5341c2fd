"""A fork's run row and the history it starts with, written in one transaction.

A fork of run P at step N is a new run whose steps 1…N−1 are P's, copied as they were
committed (their text, calls, decisions, observations with their whole output, the events of
those steps, the summaries that fold them), so its context engine, its progress ledger, its
``recall_result`` and its trace read them like its own; its own steps start at N. The row
names where it left from (``forked_from``, ``fork_step``), and it is written ``interrupted``
with nobody's lease: whichever process drives it next (``io-tui fork``, ``io-tui resume``, a
worker) starts it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

from io_tui.core.store.db import Connection, Database
from io_tui.core.store.live import announce

# events of a run's life, not of its steps: a fork has its own
NOT_INHERITED = ("run_started", "run_resumed", "run_finished", "rewound", "forked", "checkpoint")
NOT_STARTED = "not started yet"


@dataclass(frozen=True, slots=True)
class NewFork:
    """What a fork's row is made of besides its parent's history."""

    parent_id: int
    step: int
    goal: str
    workspace: str
    contract: dict[str, Any]
    provider: dict[str, Any]
    policy: dict[str, Any]
    origin: dict[str, Any] | None


class ForkRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def create(self, fork: NewFork) -> int:
        """The fork's row and its inherited history; its id."""
        return await self.db.write(partial(_create, fork, time.time()))

    async def of(self, run_id: int) -> list[tuple[int, int]]:
        """The forks of run ``run_id``: (fork id, the step it left from), oldest first."""
        rows = await self.db.fetchall(
            "SELECT id, fork_step FROM runs WHERE forked_from = ? ORDER BY id", (run_id,)
        )
        return [(int(r["id"]), int(r["fork_step"])) for r in rows]


def _create(fork: NewFork, now: float, conn: Connection) -> int:
    parent, step = fork.parent_id, fork.step
    tokens = conn.execute(
        "SELECT COALESCE(SUM(tokens), 0) AS tokens FROM steps WHERE run_id = ? AND step < ?",
        (parent, step),
    ).fetchone()["tokens"]
    cursor = conn.execute(
        "INSERT INTO runs (goal, workspace, status, outcome, contract, provider, policy, origin,"
        " steps, tokens, error, forked_from, fork_step, created_at, updated_at)"
        " VALUES (?, ?, 'interrupted', 'interrupted', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            fork.goal,
            fork.workspace,
            json.dumps(fork.contract),
            json.dumps(fork.provider),
            json.dumps(fork.policy),
            json.dumps(fork.origin) if fork.origin is not None else None,
            step - 1,
            int(tokens),
            f"forked from run {parent} at step {step}: {NOT_STARTED}",
            parent,
            step,
            now,
            now,
        ),
    )
    run_id = cursor.lastrowid
    assert run_id is not None
    conn.execute(
        "INSERT INTO steps (run_id, step, text, tool_calls, decision, result, tokens,"
        " operator_messages, created_at) SELECT ?, step, text, tool_calls, decision, result,"
        " tokens, operator_messages, created_at FROM steps WHERE run_id = ? AND step < ?",
        (run_id, parent, step),
    )
    conn.execute(
        "INSERT INTO observations (run_id, step, call_id, tool, kind, target, span, text,"
        " full_text, is_error, seen) SELECT ?, step, call_id, tool, kind, target, span, text,"
        " full_text, is_error, seen FROM observations WHERE run_id = ? AND step < ? ORDER BY id",
        (run_id, parent, step),
    )
    conn.execute(
        "INSERT INTO summaries (run_id, through_step, text, created_at)"
        " SELECT ?, through_step, text, created_at FROM summaries"
        " WHERE run_id = ? AND through_step < ?",
        (run_id, parent, step),
    )
    marks = ", ".join("?" for _ in NOT_INHERITED)
    conn.execute(
        "INSERT INTO events (run_id, step, kind, detail, at) SELECT ?, step, kind, detail, at"
        f" FROM events WHERE run_id = ? AND step < ? AND kind NOT IN ({marks}) ORDER BY id",
        (run_id, parent, step, *NOT_INHERITED),
    )
    announce(conn, [run_id, parent])
    return run_id

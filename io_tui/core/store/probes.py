""" "What if" probes as the store keeps them: one recorded request of a run sent again with its
context changed (``core/whatif``), what was changed, the request as sent and the answer.

Nothing a probe's answer proposes is ever executed; the row is its whole record, listed and
re-opened with its run (``io-tui whatif RUN --list``, the inspector's probes).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import partial
from typing import Any

import aiosqlite

from io_tui.core.store.db import Connection, Database, row_as


@dataclass(frozen=True, slots=True)
class ProbeRow:
    id: int
    run_id: int
    step: int
    request_id: int | None
    batch: str | None
    variant: str
    changes: list[dict[str, Any]]
    provider: dict[str, Any]
    model: str
    messages: list[dict[str, Any]]
    tools_digest: str | None
    answer: dict[str, Any] | None
    usage: dict[str, Any] | None
    error: str | None
    latency_s: float | None
    created_at: float

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> ProbeRow:
        return row_as(
            cls,
            row,
            changes=json.loads(row["changes"]),
            provider=json.loads(row["provider"]),
            messages=json.loads(row["messages"]),
            answer=json.loads(row["answer"]) if row["answer"] else None,
            usage=json.loads(row["usage"]) if row["usage"] else None,
        )

    def to_json(self, *, messages: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "run_id": self.run_id,
            "step": self.step,
            "request_id": self.request_id,
            "batch": self.batch,
            "variant": self.variant,
            "changes": self.changes,
            "provider": self.provider,
            "model": self.model,
            "tools_digest": self.tools_digest,
            "answer": self.answer,
            "usage": self.usage,
            "error": self.error,
            "latency_s": self.latency_s,
            "at": self.created_at,
        }
        if messages:
            out["messages"] = self.messages
        return out


@dataclass(frozen=True, slots=True)
class NewProbe:
    run_id: int
    step: int
    request_id: int | None
    batch: str | None
    variant: str
    changes: list[dict[str, Any]]
    provider: dict[str, Any]
    model: str
    messages: list[dict[str, Any]]
    tools_digest: str | None
    answer: dict[str, Any] | None
    usage: dict[str, Any] | None
    error: str | None
    latency_s: float | None


class ProbeRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def add(self, probe: NewProbe) -> int:
        return await self.db.write(partial(_insert, probe, time.time()))

    async def get(self, probe_id: int) -> ProbeRow | None:
        row = await self.db.fetchone("SELECT * FROM probes WHERE id = ?", (probe_id,))
        return ProbeRow.from_row(row) if row else None

    async def for_run(self, run_id: int, step: int | None = None) -> list[ProbeRow]:
        """The run's probes (of one step, when given), oldest first."""
        if step is None:
            rows = await self.db.fetchall(
                "SELECT * FROM probes WHERE run_id = ? ORDER BY id", (run_id,)
            )
        else:
            rows = await self.db.fetchall(
                "SELECT * FROM probes WHERE run_id = ? AND step = ? ORDER BY id", (run_id, step)
            )
        return [ProbeRow.from_row(r) for r in rows]


def _insert(probe: NewProbe, now: float, conn: Connection) -> int:
    cursor = conn.execute(
        "INSERT INTO probes (run_id, step, request_id, batch, variant, changes,"
        " provider, model, messages, tools_digest, answer, usage, error, latency_s,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            probe.run_id,
            probe.step,
            probe.request_id,
            probe.batch,
            probe.variant,
            json.dumps(probe.changes),
            json.dumps(probe.provider),
            probe.model,
            json.dumps(probe.messages),
            probe.tools_digest,
            json.dumps(probe.answer) if probe.answer is not None else None,
            json.dumps(probe.usage) if probe.usage is not None else None,
            probe.error,
            probe.latency_s,
            now,
        ),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid

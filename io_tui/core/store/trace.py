"""A run's record read back: its steps, observations, requests and events, as typed rows.

What the views rebuild from (the TUI's transcript, run tree and gauges, ``io-tui trace``); the
run loop writes them through ``RunRepo``. Every read is one narrow query; JSON columns come
back decoded.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import aiosqlite

from io_tui.core.providers.messages import ToolCall
from io_tui.core.store.db import Database, row_as
from io_tui.core.store.requests import CHAINS, RequestFigures, RequestRow, expand_deltas


@dataclass(frozen=True, slots=True)
class RequestKey:
    """A stored request's place among its run's, without its messages or manifest."""

    id: int
    step: int
    attempt: int
    purpose: str


@dataclass(frozen=True, slots=True)
class StepRow:
    run_id: int
    step: int
    text: str
    tool_calls: tuple[ToolCall, ...]
    decision: dict[str, Any]
    result: str  # every observation's full text, one after another
    tokens: int
    operator_messages: tuple[str, ...]
    created_at: float

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> StepRow:
        return row_as(
            cls,
            row,
            tool_calls=tool_calls(row["tool_calls"]),
            decision=json.loads(row["decision"]),
            operator_messages=tuple(json.loads(row["operator_messages"])),
        )


@dataclass(frozen=True, slots=True)
class StepSummary:
    """A step as the run tree shows it: no text, no result."""

    run_id: int
    step: int
    tokens: int
    tool_names: tuple[str, ...]
    interrupted: bool = False  # its answer was cut off by the run's cancel


@dataclass(frozen=True, slots=True)
class ObservationRow:
    """One tool result as stored: the bounded ``text`` the model saw and the ``full_text``."""

    run_id: int
    step: int
    call_id: str
    tool: str
    kind: str
    target: str
    span: str
    text: str
    full_text: str
    is_error: bool
    corrects: str = ""  # a correction: the call whose result it corrects (``ledger.Observation``)

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> ObservationRow:
        return row_as(cls, row, is_error=bool(row["is_error"]))


@dataclass(frozen=True, slots=True)
class EventRow:
    run_id: int
    step: int
    kind: str  # an ``EventKind`` value
    detail: dict[str, Any]
    at: float

    @classmethod
    def from_row(cls, row: aiosqlite.Row) -> EventRow:
        return row_as(cls, row, detail=json.loads(row["detail"]))


def tool_calls(text: str) -> tuple[ToolCall, ...]:
    """A step's ``tool_calls`` column, decoded."""
    return tuple(ToolCall(c["id"], c["name"], c["arguments"]) for c in json.loads(text))


class TraceRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def steps(self, run_id: int) -> list[StepRow]:
        rows = await self.db.fetchall(
            "SELECT * FROM steps WHERE run_id = ? ORDER BY step", (run_id,)
        )
        return [StepRow.from_row(r) for r in rows]

    async def steps_after(
        self, run_id: int, since: int = 0, *, limit: int | None = None
    ) -> list[StepRow]:
        """Steps numbered above ``since``, oldest first; with ``limit``, only the newest ones."""
        if limit is None:
            rows = await self.db.fetchall(
                "SELECT * FROM steps WHERE run_id = ? AND step > ? ORDER BY step", (run_id, since)
            )
        else:
            rows = await self.db.fetchall(
                "SELECT * FROM (SELECT * FROM steps WHERE run_id = ? AND step > ?"
                " ORDER BY step DESC LIMIT ?) AS newest ORDER BY step",
                (run_id, since, limit),
            )
        return [StepRow.from_row(r) for r in rows]

    async def step_summaries(self, run_ids: Sequence[int]) -> list[StepSummary]:
        """Every step of ``run_ids`` (the run tree), by run and step."""
        if not run_ids:
            return []
        marks = ",".join("?" * len(run_ids))
        rows = await self.db.fetchall(
            "SELECT run_id, step, tokens, tool_calls, decision FROM steps"
            f" WHERE run_id IN ({marks}) ORDER BY run_id, step",
            tuple(run_ids),
        )
        return [
            StepSummary(
                r["run_id"],
                r["step"],
                r["tokens"],
                tuple(c["name"] for c in json.loads(r["tool_calls"])),
                json.loads(r["decision"] or "{}").get("interrupted") is True,
            )
            for r in rows
        ]

    async def observations(self, run_id: int, first_step: int = 0) -> list[ObservationRow]:
        """The run's observations from ``first_step`` on, in the order they were made."""
        rows = await self.db.fetchall(
            "SELECT * FROM observations WHERE run_id = ? AND step >= ? ORDER BY id",
            (run_id, first_step),
        )
        return [ObservationRow.from_row(r) for r in rows]

    async def steps_in(self, run_id: int, steps: Sequence[int]) -> list[StepRow]:
        """The run's steps numbered ``steps``, oldest first."""
        if not steps:
            return []
        rows = await self.db.fetchall(
            f"SELECT * FROM steps WHERE run_id = ? AND step IN ({','.join('?' * len(steps))})"
            " ORDER BY step",
            (run_id, *steps),
        )
        return [StepRow.from_row(r) for r in rows]

    async def observations_in(self, run_id: int, steps: Sequence[int]) -> list[ObservationRow]:
        """The observations of the run's steps numbered ``steps``, in the order they were made."""
        if not steps:
            return []
        rows = await self.db.fetchall(
            "SELECT * FROM observations WHERE run_id = ?"
            f" AND step IN ({','.join('?' * len(steps))}) ORDER BY id",
            (run_id, *steps),
        )
        return [ObservationRow.from_row(r) for r in rows]

    async def requests(self, run_id: int) -> list[RequestRow]:
        """Every request of the run, whole (a request stored as a delta is rebuilt)."""
        rows = await self.db.fetchall(
            "SELECT * FROM requests WHERE run_id = ? ORDER BY step, attempt, id", (run_id,)
        )
        return expand_deltas(rows)

    async def request_keys(self, run_id: int) -> list[RequestKey]:
        """Every request of the run in the trace's order (step, attempt), without its text:
        enough to choose which to read whole (``requests_by_id``)."""
        rows = await self.db.fetchall(
            "SELECT id, step, attempt, purpose FROM requests WHERE run_id = ?"
            " ORDER BY step, attempt, id",
            (run_id,),
        )
        return [RequestKey(r["id"], r["step"], r["attempt"], r["purpose"]) for r in rows]

    async def requests_by_id(self, ids: Sequence[int]) -> dict[int, RequestRow]:
        """The requests ``ids``, whole: a delta is rebuilt from the requests it extends, and
        no other request is read."""
        if not ids:
            return {}
        rows = await self.db.fetchall(
            CHAINS.format(ids=",".join("?" * len(ids))) + " ORDER BY id", tuple(ids)
        )
        return {r.id: r for r in expand_deltas(rows, only=set(ids))}

    async def answered_request(self, run_id: int, step: int) -> RequestRow | None:
        """The working request that opened ``step``, whole: its last attempt the provider
        answered (else its last attempt); None when the step has none."""
        keys = await self.db.fetchall(
            "SELECT id, error FROM requests WHERE run_id = ? AND step = ? AND purpose = 'work'"
            " ORDER BY attempt, id",
            (run_id, step),
        )
        if not keys:
            return None
        answered = [k["id"] for k in keys if k["error"] is None]
        chosen = answered[-1] if answered else keys[-1]["id"]
        return (await self.requests_by_id([chosen]))[chosen]

    async def latest_request(self, run_id: int, step: int | None = None) -> RequestFigures | None:
        """The last working request of a run (or of one step): what the budget gauges show."""
        where, params = ("AND step = ?", (run_id, step)) if step is not None else ("", (run_id,))
        row = await self.db.fetchone(
            "SELECT step, ceiling_tokens, est_tokens, frame_tokens, reported_tokens, usage,"
            " json_extract(manifest, '$.sections') AS sections,"
            " json_extract(manifest, '$.calibration') AS calibration,"
            " json_extract(manifest, '$.cost') AS cost FROM requests"
            f" WHERE run_id = ? {where} AND purpose = 'work'"
            " ORDER BY step DESC, attempt DESC LIMIT 1",
            params,
        )
        if row is None:
            return None
        return row_as(
            RequestFigures,
            row,
            usage=json.loads(row["usage"]) if row["usage"] else None,
            sections=tuple(json.loads(row["sections"])) if row["sections"] else (),
            calibration=json.loads(row["calibration"]) if row["calibration"] else None,
            cost=json.loads(row["cost"]) if row["cost"] else None,
        )

    async def latest_derived(self, run_id: int) -> dict[str, str]:
        """The versions of the derived parts the run's last working request carried (skills,
        tools, instructions, memory: ``core/derived/parts.py``); empty before its first."""
        row = await self.db.fetchone(
            "SELECT json_extract(manifest, '$.derived') AS derived FROM requests"
            " WHERE run_id = ? AND purpose = 'work' ORDER BY step DESC, attempt DESC LIMIT 1",
            (run_id,),
        )
        return json.loads(row["derived"]) if row is not None and row["derived"] else {}

    async def events(
        self, run_id: int, first_step: int = 0, kinds: Sequence[str] | None = None
    ) -> list[EventRow]:
        """The run's events from ``first_step`` on (only those of ``kinds``, when given)."""
        if kinds is not None and not kinds:
            return []
        marks = ",".join("?" * len(kinds or ()))
        rows = await self.db.fetchall(
            "SELECT * FROM events WHERE run_id = ? AND step >= ?"
            + (f" AND kind IN ({marks})" if kinds else "")
            + " ORDER BY id",
            (run_id, first_step, *(kinds or ())),
        )
        return [EventRow.from_row(r) for r in rows]

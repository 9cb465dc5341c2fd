"""Requests of a run: written (``RequestRecord``) as deltas, read back whole (``RequestRow``).

Consecutive requests of a run mostly repeat each other: the next one carries the previous
one's messages and manifest entries and a few more. A request encoded by the run's
``ListEncoder``\\s (``encoded.py``) knows the request it extends; when this process stored that
one, the row holds only what is new: ``base_id``, how many of the base's messages and entries
it keeps (``messages_keep``, ``entries_keep``), and the rest in the usual columns. Anything
else (the first request of a process, a summary request, a base that was never stored) is
stored whole. ``expand_deltas`` rebuilds rows as if they had been stored whole (every row of a
run, or one request with the rows it extends: ``CHAINS``), so readers (the trace, the
inspector) never see a delta.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.store.db import Connection, row_as
from io_tui.core.store.encoded import JSONText, ManifestText, dumps


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as sent, with its manifest, ready to commit with its step."""

    step: int
    attempt: int
    purpose: str
    ceiling_tokens: int
    est_tokens: int
    frame_tokens: int
    reported_tokens: int | None
    usage: dict[str, Any] | None
    messages: list[dict[str, Any]] | JSONText  # JSONText: already encoded (``encoded.py``)
    manifest: dict[str, Any] | JSONText
    attempts: list[dict[str, Any]]
    provider: str
    model: str
    error: str | None = None


@dataclass(frozen=True, slots=True)
class RequestRow:
    """One stored request, read back whole (``expand_deltas``): what the trace shows."""

    id: int
    run_id: int
    step: int
    attempt: int
    purpose: str
    ceiling_tokens: int
    est_tokens: int
    frame_tokens: int
    reported_tokens: int | None
    usage: dict[str, Any] | None
    messages: list[dict[str, Any]]
    manifest: dict[str, Any]
    attempts: list[dict[str, Any]]
    provider: str
    model: str
    error: str | None
    created_at: float

    @classmethod
    def from_row(
        cls, row: sqlite3.Row, messages: list[dict[str, Any]], manifest: dict[str, Any]
    ) -> RequestRow:
        return row_as(
            cls,
            row,
            usage=json.loads(row["usage"]) if row["usage"] else None,
            messages=messages,
            manifest=manifest,
            attempts=json.loads(row["attempts"]),
        )


@dataclass(frozen=True, slots=True)
class RequestFigures:
    """A request's figures without its messages or entries: what the budget gauges show."""

    step: int
    ceiling_tokens: int
    est_tokens: int
    frame_tokens: int
    reported_tokens: int | None
    usage: dict[str, Any] | None
    sections: tuple[dict[str, Any], ...]  # the engine's raw figures
    calibration: dict[str, Any] | None = None  # how they became the figures above (DESIGN §3.1)
    cost: dict[str, Any] | None = None  # its price with caching, and the run's (``run/meter.py``)


@dataclass(frozen=True, slots=True)
class Written:
    """The last request of a run this process stored from its encoders: what a delta extends."""

    messages: JSONText
    entries: JSONText
    row_id: int


class MissingBase(LookupError):
    """A delta row whose base request is not in the store."""


def insert_request(
    run_id: int, req: RequestRecord, now: float, last: Written | None, conn: Connection
) -> Written | None:
    """Insert ``req``, as a delta against ``last`` when it extends it; return what the next
    request of the run may extend."""
    messages, manifest = req.messages, req.manifest
    encoded = isinstance(messages, JSONText) and isinstance(manifest, ManifestText)
    base_id, messages_keep, entries_keep = None, 0, 0
    messages_text, manifest_text = dumps(messages), dumps(manifest)
    if (
        last is not None
        and isinstance(messages, JSONText)
        and isinstance(manifest, ManifestText)
        and messages.base is last.messages
        and manifest.entries.base is last.entries
    ):
        base_id, messages_keep, entries_keep = last.row_id, messages.keep, manifest.entries.keep
        messages_text, manifest_text = messages.tail, manifest.delta
    cursor = conn.execute(
        "INSERT INTO requests (run_id, step, attempt, purpose, ceiling_tokens, est_tokens,"
        " frame_tokens, reported_tokens, usage, messages, manifest, attempts, provider, model,"
        " error, created_at, base_id, messages_keep, entries_keep)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            run_id,
            req.step,
            req.attempt,
            req.purpose,
            req.ceiling_tokens,
            req.est_tokens,
            req.frame_tokens,
            req.reported_tokens,
            json.dumps(req.usage) if req.usage is not None else None,
            messages_text,
            manifest_text,
            json.dumps(req.attempts),
            req.provider,
            req.model,
            req.error,
            now,
            base_id,
            messages_keep,
            entries_keep,
        ),
    )
    if not encoded:
        return last
    assert isinstance(messages, JSONText) and isinstance(manifest, ManifestText)
    assert cursor.lastrowid is not None
    return Written(messages, manifest.entries, cursor.lastrowid)


def expand_deltas(
    rows: Sequence[sqlite3.Row], only: Collection[int] | None = None
) -> list[RequestRow]:
    """``rows`` of one run's requests (in any order; with each delta, the rows it extends) with
    every delta rebuilt: ``messages`` and ``manifest`` hold what the request would have been
    stored as whole. With ``only``, just the rows of those ids come back (the others are read
    only as far as those need them)."""
    parsed: dict[int, tuple[list[Any], dict[str, Any]]] = {}  # bases, as lists and dicts
    wanted = {r["base_id"] for r in rows if r["base_id"] is not None}
    rebuilt: dict[int, RequestRow] = {}
    for row in sorted(rows, key=lambda r: r["id"]):  # a base is always older than its delta
        messages, manifest = json.loads(row["messages"]), json.loads(row["manifest"])
        base_id = row["base_id"]
        if base_id is not None:
            if base_id not in parsed:
                raise MissingBase(f"request {row['id']} extends request {base_id}, not found")
            base_messages, base_manifest = parsed[base_id]
            messages = base_messages[: row["messages_keep"]] + messages
            entries = base_manifest["entries"][: row["entries_keep"]] + manifest["entries"]
            manifest = {**manifest, "entries": entries}
        if row["id"] in wanted:
            parsed[row["id"]] = (messages, manifest)
        if only is None or row["id"] in only:
            rebuilt[row["id"]] = RequestRow.from_row(row, messages, manifest)
    return [rebuilt[r["id"]] for r in rows if r["id"] in rebuilt]


# a request's row and the rows its deltas extend, back to the one stored whole (``?``: its ids)
CHAINS = """WITH RECURSIVE chain(id) AS (
    SELECT id FROM requests WHERE id IN ({ids})
    UNION
    SELECT requests.base_id FROM requests JOIN chain ON requests.id = chain.id
    WHERE requests.base_id IS NOT NULL
) SELECT * FROM requests WHERE id IN (SELECT id FROM chain)"""

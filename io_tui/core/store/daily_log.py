"""The daily log's table: each workspace's log lines by day, and their promotion to notes.

The harness writes a run's entry when the run stops (``write_entry``); the operator reads the
log and promotes the lines worth keeping (``promote``), which writes the note through the
notes' repository, so the promotion is audited as any operator write is. What a line is, and
which fields an entry has, is ``core/memory/daily_log.py``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from io_tui.core.contract import MemoryLimits
from io_tui.core.memory.daily_log import LOG_FIELDS, LogLine, log_day
from io_tui.core.memory.notes import Scope, check_choice
from io_tui.core.store.db import Connection, Database, row_as
from io_tui.core.store.notes import OPERATOR_NOTE, NoteRepo, Provenance, WriteResult, joined


class DailyLogRepo:
    """``notes``: where a promoted line's note is written."""

    def __init__(self, db: Database, notes: NoteRepo) -> None:
        self.db = db
        self.notes = notes

    async def append(
        self,
        workspace: str | Path,
        lines: Sequence[tuple[str, str]],
        *,
        run_id: int | None,
        at: float | None = None,
    ) -> list[LogLine]:
        """Append ``(field, text)`` lines to ``workspace``'s log for the day of ``at`` (UTC)."""
        at = time.time() if at is None else at
        day = log_day(at)
        ws = str(workspace)

        def append(conn: Connection) -> list[LogLine]:
            return [
                _insert(conn, LogLine(0, ws, day, run_id, field_name, text, at))
                for field_name, text in lines
            ]

        return await self.db.write(append)

    async def write_entry(
        self,
        workspace: str | Path,
        lines: Sequence[tuple[str, str]],
        *,
        run_id: int,
        at: float | None = None,
    ) -> list[LogLine]:
        """Write run ``run_id``'s entry in ``workspace``'s log for the day of ``at`` (UTC): it
        replaces the entry the run wrote there earlier that day, so a run that paused (and logged
        its entry) and resumed reads as one entry with its latest outcome, not one per segment.
        A line promoted to a note keeps its promotion: the new entry's same line takes it, or,
        when the entry no longer says it, the line stays as it was (the note names it)."""
        at = time.time() if at is None else at
        day = log_day(at)
        ws = str(workspace)

        def replace_entry(conn: Connection) -> list[LogLine]:
            rows = conn.execute(
                "SELECT * FROM memory_log WHERE workspace = ? AND day = ? AND run_id = ?"
                " ORDER BY id",
                (ws, day, run_id),
            ).fetchall()
            earlier = [row_as(LogLine, r) for r in rows]
            said = set(lines)
            promoted = {(x.field, x.text): x.promoted for x in earlier if x.promoted}
            for line in earlier:
                if line.promoted is None or (line.field, line.text) in said:
                    conn.execute("DELETE FROM memory_log WHERE id = ?", (line.id,))
            return [
                _insert(
                    conn,
                    LogLine(0, ws, day, run_id, name, text, at, promoted.get((name, text))),
                )
                for name, text in lines
            ]

        return await self.db.write(replace_entry)

    async def lines(self, workspace: str | Path, day: str | None = None) -> list[LogLine]:
        """A workspace's log lines, oldest first: one day's, or every day's."""
        if day is None:
            rows = await self.db.fetchall(
                "SELECT * FROM memory_log WHERE workspace = ? ORDER BY day, id", (str(workspace),)
            )
        else:
            rows = await self.db.fetchall(
                "SELECT * FROM memory_log WHERE workspace = ? AND day = ? ORDER BY id",
                (str(workspace), day),
            )
        return [row_as(LogLine, r) for r in rows]

    async def line(self, line_id: int) -> LogLine | None:
        row = await self.db.fetchone("SELECT * FROM memory_log WHERE id = ?", (line_id,))
        return row_as(LogLine, row) if row else None

    async def promote(
        self,
        line_id: int,
        key: str,
        scope: Scope,
        workspace: str | Path | None,
        provenance: Provenance | None = None,
        value: str | None = None,
        limits: MemoryLimits | None = None,
        *,
        replace_existing: bool = False,
    ) -> WriteResult:
        """Make a long-term note of one log line (its text unless ``value`` is given), sourced
        to the line; the line remembers the key it was promoted to. A note already under the key
        is replaced only with ``replace_existing`` (else status ``exists``, nothing written)."""
        line = await self.line(line_id)
        if line is None:
            raise ValueError(f"no log line {line_id}")
        given = provenance or OPERATOR_NOTE
        source = joined(given.source, line.reference)
        result = await self.notes.set(
            key,
            value or line.text,
            scope,
            workspace,
            limits,
            replace(given, source=source),
            replace_existing=replace_existing,
        )
        if result.written:
            await self.db.write(
                lambda conn: conn.execute(
                    "UPDATE memory_log SET promoted = ? WHERE id = ?", (result.note.key, line_id)
                )
            )
        return result


def _insert(conn: Connection, line: LogLine) -> LogLine:
    """Insert one log line (its ``id`` ignored); returns it with the id it got."""
    cursor = conn.execute(
        "INSERT INTO memory_log (workspace, day, run_id, field, text, at, promoted)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            line.workspace,
            line.day,
            line.run_id,
            check_choice(line.field, LOG_FIELDS, "a log field"),
            line.text,
            line.at,
            line.promoted,
        ),
    )
    return replace(line, id=cursor.lastrowid or 0)

"""The recall log: which request carried which note, and each note's recall count.

A request that shows notes records it here (``record``), so the memory editor can say which
requests a note reached and how often, and a run's trace which notes it was shown. Kept apart
from the notes themselves: a recall is something a run did, not something the operator edits.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from io_tui.core.memory.notes import Scope
from io_tui.core.store.db import Connection, Database, row_as


@dataclass(frozen=True, slots=True)
class Recall:
    """One request that carried a note (a row of ``memory_recalls``)."""

    request_id: int | None
    run_id: int
    step: int
    scope: Scope
    key: str
    at: float


class RecallRepo:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def record(
        self,
        run_id: int,
        step: int,
        request_id: int | None,
        keys: Sequence[str],
        workspace: str | Path,
    ) -> list[tuple[Scope, str]]:
        """Count one recall of each key shown in a request and log it in ``memory_recalls``.

        A key resolves as ``NoteRepo.notes_for`` shadows it: the workspace note if there is one,
        else the global one. Returns the (scope, key) pairs recorded, for the run's recall event.
        """
        if not keys:
            return []
        ws = str(workspace)
        now = time.time()
        candidates: tuple[tuple[Scope, str], ...] = (("workspace", ws), ("global", ""))

        def record(conn: Connection) -> list[tuple[Scope, str]]:
            recorded: list[tuple[Scope, str]] = []
            for key in dict.fromkeys(keys):
                for scope, where in candidates:
                    cursor = conn.execute(
                        "UPDATE memory SET recalls = recalls + 1, last_recalled = ?"
                        " WHERE scope = ? AND workspace = ? AND key = ?",
                        (now, scope, where, key),
                    )
                    if cursor.rowcount:
                        conn.execute(
                            "INSERT INTO memory_recalls (request_id, run_id, step, scope,"
                            " workspace, key, at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (request_id, run_id, step, scope, where, key, now),
                        )
                        recorded.append((scope, key))
                        break
            return recorded

        return await self.db.write(record)

    async def of_run(self, run_id: int) -> list[Recall]:
        """The recalls logged for one run, oldest first."""
        rows = await self.db.fetchall(
            "SELECT * FROM memory_recalls WHERE run_id = ? ORDER BY id", (run_id,)
        )
        return [row_as(Recall, r) for r in rows]

    async def of_note(self, key: str, scope: Scope, workspace: str) -> list[Recall]:
        """Which requests carried a note, oldest first (the memory editor's "recalled by")."""
        rows = await self.db.fetchall(
            "SELECT * FROM memory_recalls WHERE scope = ? AND workspace = ? AND key = ? ORDER BY id",
            (scope, workspace if scope != "global" else "", key),
        )
        return [row_as(Recall, r) for r in rows]

"""The daily log, memory's cheap tier (DESIGN §3.3): what each run in a workspace did, one line
per fact, written by the harness at the run's end (a resumed run's end replaces the entry its pause
wrote that day). Pure (no store, no I/O).

A run's entry is its ``goal``, its ``outcome``, the ``files`` it changed, the ``tests`` it ran
(commands that look like tests, and the contract's verification) with their exit codes, and the
operator's ``decision``s on its approvals. The log is never recalled into a prompt; the operator
promotes the lines worth keeping into long-term notes (``DailyLogRepo.promote``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

LOG_FIELDS: tuple[str, ...] = ("goal", "outcome", "files", "tests", "decision", "note")
MAX_LOG_TEXT = 400


@dataclass(frozen=True, slots=True)
class LogLine:
    """One line of a workspace's daily log (a row of ``memory_log``); ``promoted`` is the key
    of the note it was promoted to."""

    id: int
    workspace: str
    day: str
    run_id: int | None
    field: str
    text: str
    at: float
    promoted: str | None = None

    @property
    def reference(self) -> str:
        """How a note promoted from it names its source: ``log 2026-12-01 run 12``."""
        who = f" run {self.run_id}" if self.run_id is not None else ""
        return f"log {self.day}{who}"

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "day": self.day,
            "run_id": self.run_id,
            "field": self.field,
            "text": self.text,
            "at": self.at,
            "promoted": self.promoted,
            "workspace": self.workspace,
        }


def log_day(at: float) -> str:
    """The day a moment belongs to in the log, ``YYYY-MM-DD`` in UTC (the file name's date)."""
    return time.strftime("%Y-%m-%d", time.gmtime(at))


def clip(text: str, limit: int = MAX_LOG_TEXT) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"

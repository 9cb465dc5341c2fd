"""The daily log, memory's cheap tier (DESIGN §3.3): what each run in a workspace did, one line
per fact, appended by the harness at the run's end. Pure (no store, no I/O).

A run's entry is its ``goal``, its ``outcome``, the ``files`` it changed, the ``tests`` it ran
(commands that look like tests, and the contract's verification) with their exit codes, and the
operator's ``decision``s on its approvals. The log is never recalled into a prompt; the operator
promotes the lines worth keeping into long-term notes (``MemoryRepo.promote``).
"""

from __future__ import annotations

import re
import shlex
import time
from collections.abc import Iterable
from dataclasses import dataclass

from io_tui.core.checks import is_test_command
from io_tui.core.ledger import ObsKind, StepRecord

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


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What a run's entry is made of, gathered from the store at its end."""

    goal: str
    outcome: str
    steps: int
    tokens: int
    error: str | None = None
    parent_run_id: int | None = None
    # (argv, exit code, passed) of the contract's verification, when it ran
    verified: tuple[tuple[str, ...], int, bool] | None = None
    # (verb, act, target, reason) of each human decision on an approval
    decisions: tuple[tuple[str, str, str, str | None], ...] = ()


def run_lines(facts: RunFacts, history: Iterable[StepRecord]) -> list[tuple[str, str]]:
    """The ``(field, text)`` lines of one run's entry, short (each under ``MAX_LOG_TEXT``)."""
    files: dict[str, None] = {}
    tests: dict[str, None] = {}
    for record in history:
        calls = {c.id: c for c in record.tool_calls}
        for obs in record.observations:
            if obs.kind is ObsKind.WRITE and not obs.is_error:
                files[obs.target] = None
            call = calls.get(obs.call_id)
            if obs.kind is ObsKind.EXEC and call is not None:
                argv = [str(a) for a in call.arguments.get("argv") or []]
                if argv and is_test_command(shlex.join(argv)):  # the ledger's rule
                    tests[f"`{' '.join(argv)}` → {_exit(obs.text)}"] = None
    if facts.verified is not None:
        check, code, passed = facts.verified
        tests[
            f"`{' '.join(check)}` (verification) → exit {code}, {'passed' if passed else 'failed'}"
        ] = None
    outcome = f"{facts.outcome} after {facts.steps} step{'s' if facts.steps != 1 else ''}"
    outcome += f", {facts.tokens:,} tokens"
    if facts.error:
        outcome += f": {facts.error}"
    goal = facts.goal
    if facts.parent_run_id is not None:
        goal = f"{goal} (sub-agent of run {facts.parent_run_id})"
    lines = [("goal", clip(goal)), ("outcome", clip(outcome))]
    if files:
        lines.append(("files", clip(", ".join(files))))
    if tests:
        lines.append(("tests", clip("; ".join(tests))))
    for verb, act, target, reason in facts.decisions:
        text = f"{verb} {act} {target}" + (f" ({reason})" if reason else "")
        lines.append(("decision", clip(text)))
    return lines


def _exit(text: str) -> str:
    """The exit status a command's result starts with (``exit code 0``), else ``ran``."""
    match = re.search(r"^(exit code -?\d+|timed out after [^;\n]*)", text, re.MULTILINE)
    return match.group(1) if match else "ran"

"""Writing a run's entry in its workspace's daily log at the run's end (DESIGN §3.3).

The facts come from runtime state, not the model's prose: the run's progress ledger (files
written, test commands and the verification with their exit codes, the operator's decisions).
Every end logs, a pause included; the ledger holds the whole run, so a resumed run's end replaces
the entry its pause wrote that day (``DailyLogRepo.write_entry``) and the day reads one entry per run.
A store error here is recorded as an event and never changes how the run ended.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

from io_tui.core.events import EventKind
from io_tui.core.memory.daily_log import clip
from io_tui.core.progress.model import ProgressLedger
from io_tui.core.run.outcome import Outcome
from io_tui.core.store import StoreError

if TYPE_CHECKING:
    from io_tui.core.run.state import RunState

MEMORY_TOOLS = frozenset({"remember", "forget"})  # the ledger's changes to notes, not files


async def append_run_log(state: RunState, outcome: Outcome, error: str | None) -> None:
    facts = RunFacts(
        goal=state.contract.goal,
        outcome=outcome.value,
        steps=state.step,
        tokens=state.tokens,
        error=error,
        parent_run_id=state.parent_run_id,
    )
    lines = run_lines(facts, state.progress.ledger())
    try:
        # a resumed run's end replaces the entry its pause wrote that day: one entry per run
        await state.store.daily_log.write_entry(
            str(state.workspace.root), lines, run_id=state.run_id
        )
    except (StoreError, sqlite3.Error) as exc:
        state.publish(EventKind.MEMORY, {"op": "log_failed", "error": str(exc)})


@dataclass(frozen=True, slots=True)
class RunFacts:
    """What a run's entry is made of beside its progress ledger: how it ended."""

    goal: str
    outcome: str
    steps: int
    tokens: int
    error: str | None = None
    parent_run_id: int | None = None


def run_lines(facts: RunFacts, ledger: ProgressLedger) -> list[tuple[str, str]]:
    """The ``(field, text)`` lines of one run's entry, short (each under ``MAX_LOG_TEXT``): how it
    ended, and from its progress ledger the files it changed, its tests and verification (the
    latest result of each) and the operator's decisions."""
    outcome = f"{facts.outcome} after {facts.steps} step{'s' if facts.steps != 1 else ''}"
    outcome += f", {facts.tokens:,} tokens"
    if facts.error:
        outcome += f": {facts.error}"
    goal = facts.goal
    if facts.parent_run_id is not None:
        goal = f"{goal} (sub-agent of run {facts.parent_run_id})"
    lines = [("goal", clip(goal)), ("outcome", clip(outcome))]
    files = [c.resource for c in ledger.changes if c.tool not in MEMORY_TOOLS]
    if files:
        lines.append(("files", clip(", ".join(files))))
    tests = [f"{e.what} → {_result(e.exit_code, e.passed)}" for e in ledger.evidence]
    if tests:
        lines.append(("tests", clip("; ".join(tests))))
    for d in ledger.decisions:
        if d.by == "operator":
            lines.append(
                (
                    "decision",
                    clip(f"{d.decision} {d.what}" + (f" ({d.reason})" if d.reason else "")),
                )
            )
    return lines


def _result(exit_code: int | None, passed: bool) -> str:
    verdict = "passed" if passed else "failed"
    return verdict if exit_code is None else f"exit {exit_code}, {verdict}"

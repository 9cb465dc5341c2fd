"""Appending a run's entry to its workspace's daily log at the run's end (DESIGN §3.3).

The facts come from runtime state, not the model's prose: the run's history (files written, test
commands and their exit codes), its verification event and the decisions on its approvals.
A store error here is recorded as an event and never changes how the run ended.
"""

from __future__ import annotations

import sqlite3

from io_tui.core.events import EventKind
from io_tui.core.memory_log import RunFacts, run_lines
from io_tui.core.outcome import Outcome
from io_tui.core.run_state import RunState
from io_tui.core.store import StoreError


async def append_run_log(state: RunState, outcome: Outcome, error: str | None) -> None:
    store = state.store
    try:
        verified = None
        events = await store.trace.events(state.run_id, kinds=[EventKind.VERIFY.value])
        if events:
            last = events[-1].detail
            verified = (
                tuple(str(a) for a in last.get("argv") or ()),
                int(last.get("exit_code") or 0),
                bool(last.get("passed")),
            )
        decisions = tuple(
            (
                record.decision.kind.value,
                record.request.act.value,
                record.request.target,
                record.decision.reason,
            )
            for record in await store.approvals.for_run(state.run_id)
            if record.decision is not None
        )
        facts = RunFacts(
            goal=state.contract.goal,
            outcome=outcome.value,
            steps=state.step,
            tokens=state.tokens,
            error=error,
            parent_run_id=state.parent_run_id,
            verified=verified,
            decisions=decisions,
        )
        await store.memory.append_log(
            str(state.workspace.root), run_lines(facts, state.history), run_id=state.run_id
        )
    except (StoreError, sqlite3.Error) as exc:
        state.publish(EventKind.MEMORY, {"op": "log_failed", "error": str(exc)})

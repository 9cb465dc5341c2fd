"""Committing a step: its text, tool calls, decision, observations, requests, events and tokens
go to the store in one transaction, then into the run's in-memory history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from io_tui.core.calls import CallResult
from io_tui.core.events import EventKind
from io_tui.core.ledger import StepRecord
from io_tui.core.providers.base import ToolCall
from io_tui.core.store import RequestRecord, StepCommit

if TYPE_CHECKING:
    from io_tui.core.run import Run


async def commit_step(
    run: Run,
    step: int,
    text: str,
    calls: tuple[ToolCall, ...],
    results: list[CallResult],
    requests: list[RequestRecord],
    decision: dict[str, Any],
    operator_messages: tuple[str, ...] = (),
    tokens: int = 0,
    *,
    update: bool = False,
) -> None:
    observations = [(r.observation, r.full_text) for r in results if r.observation is not None]
    tokens, run.extra_tokens = tokens + run.extra_tokens, 0
    committed = run.record(
        EventKind.STEP_COMMITTED, {"tool_calls": len(calls), "tokens": tokens}, step
    )
    events, run.pending_events = run.pending_events, []
    await run.store.runs.commit_step(
        run.run_id,
        StepCommit(
            step,
            text,
            calls,
            decision,
            observations,
            requests,
            events,
            tokens,
            operator_messages,
        ),
        provider=run.h.provider.describe(),
    )
    run.announce(committed)
    new_obs = tuple(o for o, _ in observations)
    if update and run.history and run.history[-1].step == step:
        last = run.history[-1]
        run.history[-1] = StepRecord(
            step,
            last.text,
            last.tool_calls,
            last.observations + new_obs,
            last.operator_messages,
        )
    else:
        run.history.append(StepRecord(step, text, calls, new_obs, operator_messages))

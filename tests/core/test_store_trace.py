"""TraceRepo: a run's record read back as typed rows, JSON columns decoded, filters honoured."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from io_tui.core.events import EventKind, RunEvent
from io_tui.core.ledger import Observation, ObsKind
from io_tui.core.providers.messages import ToolCall
from io_tui.core.store import Store
from io_tui.core.store.requests import RequestRecord
from io_tui.core.store.runs import StepCommit
from io_tui.core.store.trace import StepRow


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


def request(step: int, purpose: str = "work") -> RequestRecord:
    manifest = {"sections": [{"name": "system", "est_tokens": 3}], "entries": []}
    return RequestRecord(
        step, 1, purpose, 4_000, 10 * step, 5, 9 * step, {"prompt_tokens": 9 * step},
        [{"role": "user", "content": "go"}], manifest, [], "scripted", "m",
    )  # fmt: skip


def step(n: int, run_id: int, *calls: str) -> StepCommit:
    tool_calls = tuple(ToolCall(c, "read_file", {"path": f"{c}.py"}) for c in calls)
    observations = [
        (Observation(n, c, "read_file", ObsKind.READ, f"{c}.py", "short", full_chars=4), "full")
        for c in calls
    ]
    events = [RunEvent(run_id, n, EventKind.TOOL_CALLED, {"call_id": c}) for c in calls] + [
        RunEvent(run_id, n, EventKind.STEP_COMMITTED, {"tokens": n})
    ]
    return StepCommit(
        n, f"step {n}", tool_calls, {"final": n == 2}, observations, [request(n)], events, n,
        operator_messages=(f"hint {n}",),
    )  # fmt: skip


async def test_a_run_reads_back_as_typed_rows(store: Store) -> None:
    run_id = await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})
    await store.runs.commit_step(run_id, step(1, run_id, "a", "b"))
    await store.runs.commit_step(run_id, step(2, run_id, "c"))
    await store.runs.add_request(run_id, request(3, purpose="summary"))

    first, second = await store.trace.steps(run_id)
    assert isinstance(first, StepRow) and first.tool_calls[1] == ToolCall(
        "b", "read_file", {"path": "b.py"}
    )
    assert (second.decision, second.operator_messages, second.result) == (
        {"final": True}, ("hint 2",), "full",
    )  # fmt: skip
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.text = "changed"  # type: ignore[misc]
    assert [s.step for s in await store.trace.steps_after(run_id, 0, limit=1)] == [2]

    (summary, *_) = await store.trace.step_summaries([run_id])
    assert (summary.step, summary.tokens, summary.tool_names) == (1, 1, ("read_file",) * 2)
    assert await store.trace.step_summaries([]) == []

    later = await store.trace.observations(run_id, first_step=2)
    assert [(o.call_id, o.text, o.full_text, o.is_error) for o in later] == [
        ("c", "short", "full", False)
    ]
    called = await store.trace.events(run_id, 2, [EventKind.TOOL_CALLED.value])
    assert [(e.step, e.kind, e.detail) for e in called] == [(2, "tool_called", {"call_id": "c"})]
    assert len(await store.trace.events(run_id)) == 5
    assert await store.trace.events(run_id, 0, []) == []

    figures = await store.trace.latest_request(run_id)  # the last *working* request
    assert figures is not None
    assert (figures.step, figures.est_tokens, figures.reported_tokens) == (2, 20, 18)
    assert figures.usage == {"prompt_tokens": 18}
    assert figures.sections == ({"name": "system", "est_tokens": 3},)
    assert await store.trace.latest_request(run_id, step=7) is None
    purposes = [
        (r.step, r.purpose, r.messages[0]["content"]) for r in await store.trace.requests(run_id)
    ]
    assert purposes == [(1, "work", "go"), (2, "work", "go"), (3, "summary", "go")]

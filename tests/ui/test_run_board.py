"""The run board folds events and store rows into run views without Textual: what each batch
changed (runs, steps, commits, new runs), store rows for runs driven elsewhere, step rows."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

from io_tui.core.events import EventKind, RunEvent
from io_tui.core.store.trace import StepSummary
from io_tui.ui.run_board import RunBoard, step_view
from io_tui.ui.state import StepView


def _event(run_id: int, step: int, kind: EventKind, **detail: Any) -> RunEvent:
    return RunEvent(run_id, step, kind, detail, at=0.0)


def _row(run_id: int, **fields: Any) -> SimpleNamespace:
    row = {
        "id": run_id,
        "goal": "g",
        "workspace": "/w",
        "status": "running",
        "outcome": None,
        "parent_run_id": None,
        "tokens": 0,
        "steps": 0,
        "contract": {"token_budget": 1000},
        "provider": {"kind": "scripted", "model": "m"},
        "created_at": 1.0,
        "finished_at": None,
        "error": None,
    }
    return SimpleNamespace(**(row | fields))


def test_a_batch_says_which_runs_and_steps_changed_and_which_runs_are_new() -> None:
    board = RunBoard()
    changes = board.apply(
        [
            _event(1, 0, EventKind.RUN_STARTED, goal="fix it", workspace="/ws", model="m"),
            _event(1, 1, EventKind.REQUEST_STARTED, ceiling_tokens=100),
            _event(1, 1, EventKind.TOOL_CALLED, name="read_file"),
            _event(1, 1, EventKind.STEP_COMMITTED, tokens=42),
            _event(2, 0, EventKind.RUN_STARTED, goal="other", workspace="/o"),
        ]
    )
    assert changes.new == [1, 2]
    assert changes.runs == {1, 2}
    assert changes.steps == {(1, 1)}
    assert changes.committed == {(1, 1)}
    run = board.runs[1]
    assert (run.goal, run.workspace, run.tokens, run.model) == ("fix it", "/ws", 42, "m")
    assert run.steps[1].tools == ["read_file"] and run.steps[1].committed


def test_an_event_that_changes_no_label_is_not_a_change() -> None:
    board = RunBoard()
    board.apply([_event(1, 0, EventKind.RUN_STARTED)])
    changes = board.apply([_event(1, 1, EventKind.REQUEST_FINISHED, reported_tokens=9)])
    assert (changes.runs, changes.steps, changes.new) == (set(), set(), [])
    assert board.runs[1].reported_tokens == 9


def test_rows_update_runs_driven_elsewhere_and_name_the_stale_ones() -> None:
    board = RunBoard()
    board.apply([_event(1, 0, EventKind.RUN_STARTED), _event(2, 0, EventKind.RUN_STARTED)])
    shown, stale, _ = board.apply_rows(
        [
            _row(1, status="finished", tokens=10, steps=1),  # driven here: the events win
            _row(2, status="finished", outcome="finished", tokens=7),  # driven elsewhere
            _row(3, status="paused", parent_run_id=2),  # never seen: read its steps
        ],
        is_live=lambda run_id: run_id == 1,
    )
    assert [run.id for run in shown] == [1, 2, 3]
    assert stale == [2, 3]
    assert board.runs[1].status == "running"
    assert (board.runs[2].status, board.runs[2].outcome, board.runs[2].tokens) == (
        "finished",
        "finished",
        7,
    )
    assert board.runs[3].parent_run_id == 2 and board.runs[3].token_budget == 1000


def test_a_row_read_before_the_events_that_ended_the_run_does_not_bring_running_back() -> None:
    """The race CI hit: a quick run's whole life arrives in one batch while the app reads its
    row (still ``running``) for the tree; the row lands after, and the run is no longer live."""
    board = RunBoard()
    as_of = board.batches  # the read begins
    board.apply([_event(2, 0, EventKind.RUN_STARTED), _event(2, 1, EventKind.RUN_FINISHED)])
    finished = board.runs[2].status
    assert finished == "finished"
    board.apply_rows([_row(2, status="running")], is_live=lambda _: False, as_of=as_of)
    assert board.runs[2].status == finished  # the events were newer than the row
    # a read that began after those events takes the row as before
    board.apply_rows([_row(2, status="interrupted")], lambda _: False, as_of=board.batches)
    assert board.runs[2].status == "interrupted"


def test_a_row_saying_the_run_stopped_stops_its_step_in_flight_until_it_resumes() -> None:
    """Its process died: no event says so, the row does; the step in flight stops its clock
    (and says how), and is asked for again, on a fresh clock, once the run resumes."""
    board = RunBoard()
    board.apply([_event(1, 0, EventKind.RUN_STARTED), _event(1, 1, EventKind.REQUEST_STARTED)])
    step = board.runs[1].steps[1]
    assert step.in_flight() and step.started_at is not None
    *_, stopped = board.apply_rows([_row(1, status="interrupted")], lambda _: False)
    assert [(run.id, view.step) for run, view in stopped] == [(1, 1)]
    assert step.ended == "interrupted" and not step.in_flight()
    *_, again = board.apply_rows([_row(1, status="interrupted")], lambda _: False)
    assert again == []  # stopped once
    board.apply([_event(1, 1, EventKind.RUN_RESUMED)])
    assert step.in_flight() and step.ended is None and step.started_at is None


def test_step_rows_keep_an_asking_step_asking_and_skip_unknown_runs() -> None:
    board = RunBoard()
    board.apply(
        [
            _event(1, 0, EventKind.RUN_STARTED),
            _event(1, 1, EventKind.APPROVAL_REQUESTED),
        ]
    )
    row = StepSummary(run_id=1, step=1, tokens=5, tool_names=("edit",))
    changed = board.apply_steps([step_view(row), (9, StepView(1))])
    ((run, step),) = changed
    assert run.id == 1 and step.asking and step.tools == ["edit"] and step.tokens == 5
    board.apply([_event(2, 0, EventKind.RUN_STARTED)])
    other = replace(row, run_id=2)
    assert len(board.apply_steps([step_view(other)])) == 1
    assert board.apply_steps([step_view(other)]) == []  # nothing new: no change


def test_the_board_imports_no_textual() -> None:
    code = "import sys, io_tui.ui.run_board; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

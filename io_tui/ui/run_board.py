"""``RunBoard``: the app's run views, kept in step with the runs' events and the store's rows.

A pure fold, without Textual: ``apply(events)`` folds a batch of events into the views and says
what changed (``Changes``); ``apply_rows`` and ``apply_steps`` do the same for what the app read
from the store. The app applies the changes to the screen (``MainScreen.apply_changes``); the
store is the authority, and any view can be rebuilt from it (``RunView.from_row``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from io_tui.core import EventKind, RunEvent
from io_tui.ui.state import RunView, StepView

ENDED = frozenset({"finished", "failed", "cancelled"})

if TYPE_CHECKING:
    from io_tui.core import StepSummary


@dataclass
class Changes:
    """What one batch of events changed, for the screen to repaint at once."""

    runs: set[int] = field(default_factory=set)  # runs whose label changed
    steps: set[tuple[int, int]] = field(default_factory=set)  # (run, step) whose label changed
    committed: set[tuple[int, int]] = field(default_factory=set)  # (run, step) now committed
    new: list[int] = field(default_factory=list)  # runs first seen here (read their rows)


class RunBoard:
    """Every run the app knows, by id (``runs``), and the folds that keep them current."""

    def __init__(self) -> None:
        self.runs: dict[int, RunView] = {}
        self.batches = 0  # event batches folded so far: what a store read is "as of"
        self._last_batch: dict[int, int] = {}  # run id → the batch that last carried its events
        # runs other processes drive, whose events come from the store (``ui.live``): their
        # start does not take the selection (an ask does)
        self.followed: set[int] = set()

    def apply(self, events: Iterable[RunEvent]) -> Changes:
        """Fold a batch of events into the run views, in order."""
        changes = Changes()
        runs = self.runs
        self.batches += 1
        for event in events:
            self._last_batch[event.run_id] = self.batches
            run = runs.get(event.run_id)
            if run is None:
                detail = event.detail
                run = RunView(
                    event.run_id,
                    str(detail.get("goal", "")),
                    str(detail.get("workspace", "")),
                )
                runs[event.run_id] = run
                changes.new.append(event.run_id)
            if run.apply(event):
                changes.runs.add(run.id)
                if event.step:
                    changes.steps.add((run.id, event.step))
            if event.kind is EventKind.RUN_STARTED and run.id in self.followed:
                # another process's start (all day, on a farm): in sight, not selected
                run.wants_sight, run.wants_attention = run.wants_attention, False
            if event.kind is EventKind.STEP_COMMITTED:
                changes.committed.add((run.id, event.step))
        return changes

    def apply_rows(
        self,
        rows: Iterable[Any],
        is_live: Callable[[int], bool],
        workers: dict[int, str] | None = None,
        as_of: int | None = None,
    ) -> tuple[list[RunView], list[int], list[tuple[RunView, StepView]]]:
        """Fold run rows read from the store: a run this process does not drive (``is_live``)
        takes the row's status and tokens (once ended, its error and end too), unless events
        for it arrived after the read began (``as_of``, the ``batches`` count then): the row is
        older than what they said (a quick run that ended meanwhile would otherwise show the
        row's ``running`` for good). A run the row says stopped (its process died, so no event
        said so) stops its step in flight (``RunView.stop_steps``). Returns the views to show
        again, the runs whose steps must be read (new here, or changed elsewhere), and the
        steps stopped."""
        shown: list[RunView] = []
        stale: list[int] = []
        stopped: list[tuple[RunView, StepView]] = []
        for row in rows:
            run = self.runs.get(row.id)
            newer = as_of is not None and self._last_batch.get(row.id, 0) > as_of
            if run is None:
                run = self.runs[row.id] = RunView.from_row(row)
                stale.append(row.id)
            elif not is_live(row.id) and not newer:
                if (row.status, row.tokens) != (run.status, run.tokens) or row.steps > len(
                    run.steps
                ):
                    stale.append(row.id)
                was_live = run.live
                run.status, run.outcome, run.tokens = row.status, row.outcome, row.tokens
                if run.status in ENDED:  # how it ended, said by whoever ended it
                    run.error, run.ended_at = row.error, row.finished_at
                if was_live and not run.live:
                    stopped.extend((run, step) for step in run.stop_steps())
            run.parent_run_id = row.parent_run_id
            run.follows = getattr(row, "seed_run_id", None)
            run.forked_from = getattr(row, "forked_from", None)
            run.fork_step = getattr(row, "fork_step", None)
            run.stored_steps = row.steps
            if workers is not None:
                run.worker = workers.get(row.id, "")
            run.token_budget = (row.contract or {}).get("token_budget")
            shown.append(run)
        self._find_waiting(shown)
        return shown, stale, stopped

    def _find_waiting(self, runs: list[RunView]) -> None:
        """A paused parent (``awaiting_sub_agent``) or an interrupted one waits on its newest
        child that has not ended: it resumes with it."""
        newest: dict[int, int] = {}
        for view in self.runs.values():
            parent = view.parent_run_id
            if parent is not None and view.status not in ENDED:
                newest[parent] = max(view.id, newest.get(parent, 0))
        for run in runs:
            waits = run.status == "interrupted" or run.outcome == "awaiting_sub_agent"
            run.waiting_on = newest.get(run.id) if waits else None

    def apply_steps(self, steps: Iterable[tuple[int, StepView]]) -> list[tuple[RunView, StepView]]:
        """Fold step views read from the store (``step_view``); a step asking now keeps saying
        so. Returns the (run, step) pairs that changed."""
        changed: list[tuple[RunView, StepView]] = []
        for run_id, fresh in steps:
            run = self.runs.get(run_id)
            if run is None:
                continue
            view = run.steps.get(fresh.step)
            if view != fresh:
                run.steps[fresh.step] = replace(fresh, asking=view.asking if view else False)
                changed.append((run, run.steps[fresh.step]))
        return changed


def step_view(row: StepSummary) -> tuple[int, StepView]:
    """A committed step's view from its store row (``TraceRepo.step_summaries``)."""
    return row.run_id, StepView(
        row.step, row.tokens, list(row.tool_names), committed=True, interrupted=row.interrupted
    )


__all__ = ["Changes", "RunBoard", "step_view"]

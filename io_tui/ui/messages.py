"""Messages between the harness bridge, workers and the app.

Facts are past tense (``RunEventsReceived``, ``RunEnded``); requests are imperative
(``StartRun``). Workers post these; ``@on`` handlers own all UI state.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.notifications import SeverityLevel

from io_tui.core import ApprovalRequest, Decision, NewRunRequest, RunEvent

if TYPE_CHECKING:
    from io_tui.core import RunResult


class ApprovalRequested(Message):
    """A run asks a human. Resolve ``future`` with a Decision (guard: it may be done/cancelled)."""

    def __init__(self, request: ApprovalRequest, future: asyncio.Future[Decision]) -> None:
        super().__init__()
        self.request = request
        self.future = future


class RunEventsReceived(Message):
    """Events from the runs in this process, in order, gathered over one tick (~0.1 s) by the
    bridge's ``EventPump``: one message per batch, never one per event. Immutable (a tuple)."""

    def __init__(self, events: tuple[RunEvent, ...]) -> None:
        super().__init__()
        self.events = events


class RunEnded(Message):
    """A run worker returned (or failed before the run could start)."""

    def __init__(self, result: RunResult | None, error: str | None = None) -> None:
        super().__init__()
        self.result = result
        self.error = error


class RunStarted(Message):
    """A host drives run ``run_id`` now: its keys (interrupt) apply while it is live."""

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id


class RunStopped(Message):
    """A host no longer drives run ``run_id`` (it ended, paused, or its worker died)."""

    def __init__(self, run_id: int) -> None:
        super().__init__()
        self.run_id = run_id


class RunsLost(Message):
    """The harness worker died holding these runs; the store now says how they ended."""

    def __init__(self, run_ids: list[int]) -> None:
        super().__init__()
        self.run_ids = run_ids


class StoreDamagedFound(Message):
    """The store turned out damaged (``StoreDamaged``'s one line), in a harness worker process:
    the app ends as for a store it cannot open."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class HarnessNotice(Message):
    """Something the operator should read about the harness (a notice, a dead worker)."""

    def __init__(
        self,
        text: str,
        *,
        title: str = "",
        severity: SeverityLevel = "warning",
        timeout: float | None = None,
    ) -> None:
        super().__init__()
        self.text = text
        self.title = title
        self.severity = severity
        self.timeout = timeout


class NewRunRequested(Message):
    """Open the new-run dialog, its task filled in (a prompt typed with no run selected)."""

    def __init__(self, task: str = "") -> None:
        super().__init__()
        self.task = task


class StoreChanged(Message):
    """Something outside this process's runs changed the store (a poll noticed it)."""

    def __init__(self, runs: list[Any], workers: dict[int, str], as_of: int) -> None:
        super().__init__()
        self.runs = runs
        self.workers = workers  # queue runs: who drives each (``RunView.worker``)
        self.as_of = as_of  # event batches folded when the read began (``RunBoard.batches``)


class StepsLoaded(Message):
    """Step rows read from the store for the run tree: ``(run_id, StepView)`` pairs."""

    def __init__(self, steps: tuple[tuple[int, Any], ...]) -> None:
        super().__init__()
        self.steps = steps


class StartRun(Message):
    """Start a run as a worker (from the new-run dialog, a follow-up prompt or a command)."""

    def __init__(self, request: NewRunRequest) -> None:
        super().__init__()
        self.request = request

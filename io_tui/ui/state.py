"""The app's view of runs: small mutable records kept in step with events and the store.

The store is the authority. These records exist so that a burst of events can be folded into
labels and gauges cheaply; any view can be rebuilt from the store at any time (``from_row``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from io_tui.core import OPERATOR_CANCEL, EventKind, RunEvent

STATUSES = ("running", "asking", "paused", "interrupted", "finished", "failed", "cancelled")
LIVE = frozenset({"running", "asking"})

# The clock of elapsed times on screen (wall seconds); tests replace it with a fixed one.
clock: Callable[[], float] = time.time


@dataclass(frozen=True, slots=True)
class CallProgress:
    """The newest progress a call in flight reported; ``total`` None when the server gave none."""

    name: str
    progress: float
    total: float | None = None
    message: str | None = None


@dataclass
class StepView:
    step: int
    tokens: int = 0
    tools: list[str] = field(default_factory=list)
    committed: bool = False
    asking: bool = False
    started_at: float | None = None  # its request went out (this app saw it)
    asking_since: float | None = None
    writing: bool = False  # model text has streamed in
    ended: str | None = None  # the run ended before this step committed: its status
    interrupted: bool = False  # committed with what its answer had streamed when cancelled
    progress: dict[str, CallProgress] = field(default_factory=dict)  # calls in flight, by id

    def in_flight(self) -> bool:
        return not self.committed and self.ended is None


@dataclass
class QueuedMessage:
    """An operator message sent to a live (or paused) run, until its step shows it."""

    text: str
    delivered_step: int | None = None  # the step it went into; None: still waiting
    returned: bool = False  # the run ended first and the text was handed back to the operator


@dataclass
class RunView:
    id: int
    goal: str
    workspace: str
    status: str = "running"
    outcome: str | None = None
    parent_run_id: int | None = None
    follows: int | None = None  # a follow-up: the run it continues (its seed)
    forked_from: int | None = None  # a fork: the run it left from, and the step
    fork_step: int | None = None
    tokens: int = 0
    token_budget: int | None = None
    steps: dict[int, StepView] = field(default_factory=dict)
    streaming: str = ""
    ceiling_tokens: int | None = None
    est_tokens: int | None = None
    frame_tokens: int | None = None
    reported_tokens: int | None = None
    provider: str = ""
    model: str = ""
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    interrupt_requested: bool = False  # the operator pressed x; the run has not ended yet
    queued: list[QueuedMessage] = field(default_factory=list)
    wants_attention: bool = False  # it just started or began to ask: bring it into view
    wants_sight: bool = False  # another process started it: scroll to it when the operator idles
    worker: str = ""  # a queue run: the worker driving it (``on HOST pid N``), or "held …"
    waiting_on: int | None = None  # paused or interrupted with this sub-agent run
    stored_steps: int = 0  # the store's count of its steps: shown until the steps are read

    @classmethod
    def from_row(cls, row: Any) -> RunView:
        contract = row.contract or {}
        view = cls(
            id=row.id,
            goal=row.goal,
            workspace=row.workspace,
            status=row.status,
            outcome=row.outcome,
            parent_run_id=row.parent_run_id,
            follows=getattr(row, "seed_run_id", None),
            forked_from=getattr(row, "forked_from", None),
            fork_step=getattr(row, "fork_step", None),
            tokens=row.tokens,
            token_budget=contract.get("token_budget"),
            started_at=row.created_at,
            ended_at=row.finished_at,
            error=row.error,
            stored_steps=row.steps,
        )
        view.provider, view.model = provider_of(row.provider or {})
        return view

    @property
    def live(self) -> bool:
        return self.status in LIVE

    @property
    def step_count(self) -> int:
        """Its steps: those read, or the store's count while they are being read (a run
        listed before its steps never reads "0 steps")."""
        return max(len(self.steps), self.stored_steps)

    def step_view(self, step: int) -> StepView:
        view = self.steps.get(step)
        if view is None:
            view = self.steps[step] = StepView(step)
        return view

    @property
    def cancelled_by_operator(self) -> bool:
        """Interrupted live (``OPERATOR_CANCEL``), or cancelled while paused or interrupted
        ("cancelled by the operator while paused")."""
        return self.status == "cancelled" and (
            (self.error or "").startswith(OPERATOR_CANCEL) or self.interrupt_requested
        )

    def elapsed(self) -> float | None:
        """Seconds since it started, or how long it took once ended (None: not known)."""
        if self.started_at is None:
            return None
        end = self.ended_at if not self.live and self.ended_at is not None else clock()
        return max(0.0, end - self.started_at)

    def in_flight(self) -> StepView | None:
        """The step being asked for or carried out, if the run is live."""
        if not self.live or not self.steps:
            return None
        view = self.steps[max(self.steps)]
        return view if view.in_flight() else None

    def calls_in_progress(self) -> list[CallProgress]:
        """The newest progress of each call still running (its step's answer is committed
        before its calls run, so this is not only the step in flight's)."""
        if not self.live or not self.steps:
            return []
        return list(self.steps[max(self.steps)].progress.values())

    def queue_message(self, text: str) -> None:
        self.queued.append(QueuedMessage(text))

    def apply(self, event: RunEvent) -> bool:
        """Fold one event in. Returns True when the run's label or a step label changed."""
        kind, detail = event.kind, event.detail
        if kind is EventKind.TEXT_DELTA:
            self.streaming += str(detail.get("text", ""))
            view = self.step_view(event.step)
            if view.writing:
                return False
            view.writing = True
            return True
        if kind in (EventKind.RUN_STARTED, EventKind.RUN_RESUMED):
            self.status = "running"
            if kind is EventKind.RUN_RESUMED:
                self._reopen_steps()
            if kind is EventKind.RUN_STARTED or self.started_at is None:
                self.started_at = clock()
            self.ended_at = None
            self.provider = str(detail.get("provider") or self.provider)
            self.model = str(detail.get("model") or self.model)
            if kind is EventKind.RUN_STARTED and detail.get("parent_run_id") is None:
                self.wants_attention = True
            return True
        if kind is EventKind.REQUEST_STARTED:
            self.streaming = ""
            self.ceiling_tokens = detail.get("ceiling_tokens")
            self.est_tokens = detail.get("est_tokens")
            self.frame_tokens = detail.get("frame_tokens")
            view = self.step_view(event.step)
            if view.started_at is None:
                view.started_at = clock()
            return True
        if kind is EventKind.OPERATOR_MESSAGE:
            text = str(detail.get("text", ""))
            for message in self.queued:
                if message.delivered_step is None and message.text == text:
                    message.delivered_step = event.step
                    break
            return True
        if kind is EventKind.REQUEST_FINISHED:
            self.est_tokens = detail.get("est_tokens", self.est_tokens)
            self.reported_tokens = detail.get("reported_tokens")
            return False
        if kind is EventKind.TOOL_CALLED:
            self.step_view(event.step).tools.append(str(detail.get("name", "?")))
            return True
        if kind is EventKind.TOOL_PROGRESS:  # drawn with the live part, at its next tick
            self.step_view(event.step).progress[str(detail.get("call_id"))] = CallProgress(
                str(detail.get("name", "?")),
                float(detail.get("progress") or 0),
                detail.get("total"),
                detail.get("message"),
            )
            return False
        if kind is EventKind.OBSERVATION:
            self.step_view(event.step).progress.pop(str(detail.get("call_id")), None)
            return False
        if kind is EventKind.APPROVAL_REQUESTED:
            self.status = "asking"
            view = self.step_view(event.step)
            view.asking, view.asking_since = True, clock()
            self.wants_attention = True
            return True
        if kind is EventKind.APPROVAL_DECIDED:
            view = self.step_view(event.step)
            view.asking, view.asking_since = False, None
            if detail.get("decision") != "defer":
                self.status = "running"
            return True
        if kind is EventKind.STEP_COMMITTED:
            view = self.step_view(event.step)
            tokens = int(detail.get("tokens", 0))
            view.tokens += tokens
            view.committed = True
            view.interrupted = bool(detail.get("interrupted"))
            self.tokens += tokens
            self.streaming = ""
            self.queued = [
                m for m in self.queued if m.delivered_step is None or m.delivered_step > event.step
            ]
            return True
        if kind is EventKind.RUN_FINISHED:
            self.status = str(detail.get("status", "finished"))
            self.outcome = detail.get("outcome")
            self.error = detail.get("error") or self.error
            self.waiting_on = detail.get("waiting_on")
            self.ended_at = clock()
            self.stop_steps()
            return True
        return False

    def stop_steps(self) -> list[StepView]:
        """The run stopped (it ended, paused, or its process died): the step it had in flight
        stops its clock and says how (``StepView.ended``, the run's status), and no call is in
        progress. Returns the steps it stopped."""
        self.streaming = ""
        stopped = []
        for view in self.steps.values():
            view.progress.clear()
            if not view.committed and view.ended is None:
                view.ended, view.asking, view.asking_since = self.status, False, None
                stopped.append(view)
        return stopped

    def _reopen_steps(self) -> None:
        """Resumed: a step it had stopped in is asked for again, its clock from now."""
        for view in self.steps.values():
            if not view.committed and view.ended is not None:
                view.ended, view.started_at, view.writing = None, None, False


def provider_of(desc: dict[str, Any]) -> tuple[str, str]:
    """(provider, model) of a recorded ``Provider.describe()``, for labels."""
    if desc.get("kind") == "fallback":
        chain = [provider_of(d) for d in desc.get("chain") or []]
        return ">".join(p for p, _ in chain), chain[0][1] if chain else ""
    name = desc.get("preset") or desc.get("kind") or ""
    return str(name), str(desc.get("model") or "")


def since(at: float | None) -> float | None:
    """Seconds from ``at`` to now (the screen's clock); None for none."""
    return None if at is None else max(0.0, clock() - at)


def duration(seconds: float | None) -> str:
    """``42s``, ``3m 05s``, ``1h 02m``; empty for none."""
    if seconds is None:
        return ""
    whole = int(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def ended_as(status: str, outcome: str | None) -> str:
    """``finished (success)``; the outcome only when it says more than the status."""
    return status if outcome in (None, "", status) else f"{status} ({outcome})"


def counted(n: int, noun: str, nouns: str = "") -> str:
    """``1 step``, ``3 steps``; ``nouns`` for a plural that is not ``noun`` + s (``entries``)."""
    return f"{n:,} {noun if n == 1 else nouns or noun + 's'}"

"""The app's view of runs: small mutable records kept in step with events and the store.

The store is the authority. These records exist so that a burst of events can be folded into
labels and gauges cheaply; any view can be rebuilt from the store at any time (``from_row``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from io_tui.core.events import EventKind, RunEvent

STATUSES = ("running", "asking", "paused", "finished", "failed", "cancelled")
LIVE = frozenset({"running", "asking"})


@dataclass
class StepView:
    step: int
    tokens: int = 0
    tools: list[str] = field(default_factory=list)
    committed: bool = False
    asking: bool = False


@dataclass
class RunView:
    id: int
    goal: str
    workspace: str
    status: str = "running"
    outcome: str | None = None
    parent_run_id: int | None = None
    tokens: int = 0
    token_budget: int | None = None
    steps: dict[int, StepView] = field(default_factory=dict)
    streaming: str = ""
    ceiling_tokens: int | None = None
    est_tokens: int | None = None
    frame_tokens: int | None = None
    reported_tokens: int | None = None

    @classmethod
    def from_row(cls, row: Any) -> RunView:
        contract = row.contract or {}
        return cls(
            id=row.id,
            goal=row.goal,
            workspace=row.workspace,
            status=row.status,
            outcome=row.outcome,
            parent_run_id=row.parent_run_id,
            tokens=row.tokens,
            token_budget=contract.get("token_budget"),
        )

    @property
    def workspace_name(self) -> str:
        return Path(self.workspace).name or self.workspace

    @property
    def live(self) -> bool:
        return self.status in LIVE

    def step_view(self, step: int) -> StepView:
        view = self.steps.get(step)
        if view is None:
            view = self.steps[step] = StepView(step)
        return view

    def apply(self, event: RunEvent) -> bool:
        """Fold one event in. Returns True when the run's label or a step label changed."""
        kind, detail = event.kind, event.detail
        if kind is EventKind.TEXT_DELTA:
            self.streaming += str(detail.get("text", ""))
            return False
        if kind in (EventKind.RUN_STARTED, EventKind.RUN_RESUMED):
            self.status = "running"
            return True
        if kind is EventKind.REQUEST_STARTED:
            self.streaming = ""
            self.ceiling_tokens = detail.get("ceiling_tokens")
            self.est_tokens = detail.get("est_tokens")
            self.frame_tokens = detail.get("frame_tokens")
            self.step_view(event.step)
            return True
        if kind is EventKind.REQUEST_FINISHED:
            self.est_tokens = detail.get("est_tokens", self.est_tokens)
            self.reported_tokens = detail.get("reported_tokens")
            return False
        if kind is EventKind.TOOL_CALLED:
            self.step_view(event.step).tools.append(str(detail.get("name", "?")))
            return True
        if kind is EventKind.APPROVAL_REQUESTED:
            self.status = "asking"
            self.step_view(event.step).asking = True
            return True
        if kind is EventKind.APPROVAL_DECIDED:
            self.step_view(event.step).asking = False
            if detail.get("decision") != "defer":
                self.status = "running"
            return True
        if kind is EventKind.STEP_COMMITTED:
            view = self.step_view(event.step)
            tokens = int(detail.get("tokens", 0))
            view.tokens += tokens
            view.committed = True
            self.tokens += tokens
            self.streaming = ""
            return True
        if kind is EventKind.RUN_FINISHED:
            self.status = str(detail.get("status", "finished"))
            self.outcome = detail.get("outcome")
            return True
        return False

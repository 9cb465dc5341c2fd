"""How a run ended: its ``Outcome``, the store status it maps to, and the ``RunResult`` (how
each outcome is shown is ``core/text/endings.py``).

Plain data with no harness imports, so the app can read results without loading the run loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Outcome(StrEnum):
    SUCCESS = "success"
    FINISHED = "finished"
    TRUNCATED = "finished_truncated"  # the final answer was cut by the output limit
    STEP_CAP = "step_cap_reached"
    TOKEN_BUDGET = "token_budget_exhausted"
    DENIED = "denied"
    AWAITING_APPROVAL = "awaiting_approval"
    AWAITING_SUB_AGENT = "awaiting_sub_agent"  # its sub-agent paused: it resumes with it
    CANCELLED = "cancelled"
    FAILED = "failed"
    CONTEXT_OVERFLOW = "context_overflow"
    # the degradation ladder ran out (``context/ladder.py``): stopped safely before any call
    # of the step, since the required state could not be preserved in the model's window
    STATE_NOT_PRESERVED = "state_not_preserved"
    INTERRUPTED = "interrupted"  # its process died, or a resume waits for the operator's word


_STATUS = {
    Outcome.AWAITING_APPROVAL: "paused",
    Outcome.AWAITING_SUB_AGENT: "paused",
    Outcome.CANCELLED: "cancelled",
    Outcome.FAILED: "failed",
    Outcome.CONTEXT_OVERFLOW: "failed",
    Outcome.STATE_NOT_PRESERVED: "failed",
    Outcome.INTERRUPTED: "interrupted",
}


def status_for(outcome: Outcome) -> str:
    return _STATUS.get(outcome, "finished")


@dataclass(frozen=True, slots=True)
class RunResult:
    run_id: int
    status: str
    outcome: Outcome
    steps: int
    tokens: int
    error: str | None = None
    waiting_on: int | None = None  # the sub-agent run it stopped with (paused or interrupted)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "status": self.status,
            "outcome": self.outcome.value,
            "steps": self.steps,
            "tokens": self.tokens,
            "error": self.error,
            "waiting_on": self.waiting_on,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        return cls(**{**data, "outcome": Outcome(data["outcome"])})

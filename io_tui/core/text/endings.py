"""How each outcome of a run is shown: one mark and wording, the same in the run tree, the trace,
the progress ledger and ACP (``Ending``, by the outcome's stored value: ``run.outcome.Outcome``).

Said once here so that no two places disagree on what an ending means: a run whose answer was
cut is not ✓, only a verification that passed meets the objective, and an operator's cancel is
not a failure to fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from io_tui.core.events import OPERATOR_CANCEL


@dataclass(frozen=True, slots=True)
class Ending:
    """How one outcome is shown, the same everywhere (the run tree, the trace, the progress
    ledger, ACP): its own ``mark``, a short ``word`` (the tree's), what it ``says`` of the run
    (``run 9 was cancelled by the operator``), its ``tone`` (``success``, ``warning``,
    ``error``, ``muted``: the UI's colour), and whether the objective is ``met`` (only a
    verification that passed says so)."""

    mark: str
    word: str
    says: str
    tone: str
    met: bool = False


ENDINGS: dict[str, Ending] = {  # by the outcome's value, as stored
    "success": Ending("✓", "verified", "succeeded: its verification passed", "success", met=True),
    "finished": Ending("◇", "done, unverified", "finished: the model says it is done; nothing verified it", "success"),
    "finished_truncated": Ending("✂", "answer cut", "finished with its final answer cut at the output limit", "warning"),
    "step_cap_reached": Ending("⊘", "step cap", "stopped at its step cap before the objective was met", "warning"),
    "token_budget_exhausted": Ending("⊖", "out of tokens", "stopped when its token budget ran out", "warning"),
    "denied": Ending("⊗", "denied", "stopped: an action it needed was denied", "warning"),
    "awaiting_approval": Ending("‖", "paused", "is paused: an approval waits for the operator", "muted"),
    "awaiting_sub_agent": Ending("↳", "paused", "is paused with its sub-agent run", "muted"),
    "cancelled": Ending("■", "cancelled", "was cancelled", "muted"),
    "failed": Ending("✗", "failed", "failed: an error stopped it", "error"),
    "context_overflow": Ending("⊠", "prompt too long", "failed: its prompt did not fit the model's window", "error"),
    "state_not_preserved": Ending("⊡", "stopped safely", "stopped safely: its state could not be kept in the model's window", "error"),
    "interrupted": Ending("↯", "interrupted", "was interrupted: its process stopped; it can be resumed", "warning"),
}  # fmt: skip


def ending_of(outcome: str | None) -> Ending | None:
    """The ``Ending`` of an outcome's value (as stored), None for none or an unknown one."""
    return ENDINGS.get(outcome) if outcome else None


def ended_line(status: str, outcome: str | None, error: str | None = None) -> str:
    """One line saying how a run ended, its mark first (``■ cancelled by the operator``):
    the outcome's words, and the status only where the outcome does not say it."""
    found = ending_of(outcome)
    if found is None:
        return status
    says = found.says
    if outcome == "cancelled" and error and error.startswith(OPERATOR_CANCEL):
        says = f"was {error}"  # "cancelled by the operator (while paused)"
    return f"{found.mark} {says}"

"""The degradation ladder: the rungs a request climbs, in order, and the one it reached.

Each rung is taken only when the ones before it no longer keep the request under its ceiling
(or the server found it too long), and each request's manifest names the deepest it reached
(``Assembly.rung``, the manifest head's ``rung``):

1. ``capped``: an oversized result is sent head and tail under the entry cap; the trace keeps
   it whole, retrievable by its handle (its call id);
2. ``referenced``: old reproducible payloads (superseded, out of the window, stale and not
   re-readable) are replaced by stubs that name their step and how to get them back;
3. ``dropped``: the low-value middle of the transcript (the oldest live steps, between the
   summary and the window) goes into one collapse line, each step whole: a tool call never
   travels without its result, nor an asked call without the result that carries its decision;
4. ``summary``: old steps fold into a summary under the summary contract (``summary.py``);
5. ``emergency``: after the server refused a folded request too, one bounded compaction:
   every step but the newest with results folds into the deterministic digest (no provider
   call), the request carrying at most half of what the refused one did;
6. ``stopped``: the emergency request is refused too (or left unchanged); the run stops safely,
   before any call of the step, with ``Outcome.STATE_NOT_PRESERVED`` (``LadderExhausted``): the
   required state could not be preserved in the model's window.

The first four are the engine's, as each build needs them; the last two are ``model_turn``'s
answer to the server's context-overflow error, each rung a new attempt of the same step.

``whole`` is the rung of a request that needed none of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

from io_tui.core.context.manifest import EntryState
from io_tui.core.providers.base import Attempt, ErrorKind, ProviderError


class Rung(StrEnum):
    WHOLE = "whole"
    CAPPED = "capped"
    REFERENCED = "referenced"
    DROPPED = "dropped"
    SUMMARY = "summary"
    EMERGENCY = "emergency"
    STOPPED = "stopped"

    @property
    def order(self) -> int:
        return _ORDER[self]


_ORDER = {rung: n for n, rung in enumerate(Rung)}

# the rung an entry's state shows the request reached
_BY_STATE: dict[str, Rung] = {
    EntryState.CAPPED: Rung.CAPPED,
    EntryState.SUPERSEDED: Rung.REFERENCED,
    EntryState.ELIDED: Rung.REFERENCED,
    EntryState.DROPPED: Rung.REFERENCED,  # a dead step: every result superseded by a later one
    EntryState.COLLAPSED: Rung.DROPPED,
    EntryState.SUMMARY: Rung.SUMMARY,
}


def rung_reached(
    states: Iterable[EntryState | str], *, collapsed: bool, summary: bool, emergency: bool
) -> Rung:
    """The deepest rung a request reached: an emergency build's, a summary's, a collapse's,
    else the deepest its entries' states show."""
    if emergency:
        return Rung.EMERGENCY
    if summary:
        return Rung.SUMMARY
    if collapsed:
        return Rung.DROPPED
    reached = Rung.WHOLE
    for state in states:
        rung = _BY_STATE.get(state, Rung.WHOLE)
        if rung.order > reached.order:
            reached = rung
            if rung is Rung.REFERENCED:  # the deepest entries show without a collapse line
                break
    return reached


# how the harness words a decision that a call was not performed (``calls.py``): the operator's
# denial of an asked call, or the policy's refusal
class LadderExhausted(ProviderError):
    """The last rung: the emergency compaction did not make the request fit either. The run
    stops safely (no call of the step is made) with ``Outcome.STATE_NOT_PRESERVED``."""

    def __init__(
        self, message: str, *, status: int | None = None, attempts: list[Attempt] | None = None
    ) -> None:
        super().__init__(ErrorKind.CONTEXT_OVERFLOW, message, status=status, attempts=attempts)

"""The settled prefix: the oldest live steps whose window decisions still stand.

When a run's whole history fits its ceiling, every build carries every step, and all but the
newest step or two are carried exactly as in the previous build. Walking them again, step by
step, would make each request cost as much as the history is long. Instead the engine remembers
the longest run of oldest steps that the last fit carried whole, untouched since (same
classification, same entry cap, never stubbed or compacted since): their entries still hold
their decisions, and the prefix sums below say in O(1) whether they all fit again.

For ``fit`` (``fit.py``), with a step's *full* cost (turn plus every entry as carried) and its
*peak* (the largest amount any of fit's checks inside the step asks for, relative to what was
used before it): every step ``j < k`` passes its checks when ``used + F(k) + H(k) <= budget``,
where ``F(k)`` is the full cost of steps ``[0, k)`` and ``H(k) = max over j < k of
(peak_j - F(j + 1))``. Both are prefix arrays, extended as steps settle and cut back from the
first step that changes.

For ``emit`` (``messages.py``), the messages and manifest entries of the settled steps are kept
flat, in order, so a request reuses them with one slice instead of one lookup per step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from io_tui.core.context.manifest import ManifestEntry
    from io_tui.core.context.step import Step
    from io_tui.core.providers.messages import Message

NEVER = -(1 << 62)  # H(0): the maximum over no steps


class Settled:
    """The settled prefix of one ``LiveSteps``: steps ``[0, length)``."""

    def __init__(self) -> None:
        self.reset(-1)

    def reset(self, cap: int) -> None:
        self.cap = cap
        self.full = [0]  # F(k)
        self.high = [NEVER]  # H(k)
        self.msgs: list[Message] = []  # what emit sent for steps [0, emitted), flat
        self.entries: list[ManifestEntry] = []
        self.ends: list[tuple[int, int, int, int]] = [(0, 0, 0, 0)]  # msgs, entries, turns, spent

    @property
    def length(self) -> int:
        return len(self.full) - 1

    @property
    def emitted(self) -> int:
        return len(self.ends) - 1

    def truncate(self, index: int) -> None:
        """Step ``index`` changed: it and every newer step leave the prefix."""
        if index >= len(self.full) - 1:  # ``length``, without the property's call: hot
            return
        del self.full[index + 1 :], self.high[index + 1 :]
        if index < self.emitted:
            del self.ends[index + 1 :]
            msgs, entries, _, _ = self.ends[index]
            del self.msgs[msgs:], self.entries[entries:]

    def extend(self, steps: list[Step], cap: int) -> None:
        """Take in the steps the last fits settled, oldest first, up to the first that is not."""
        if cap != self.cap:
            self.reset(cap)
        while self.length < len(steps):
            st = steps[self.length]
            settled = st.settled
            if settled is None or settled[0] != st.version or settled[1] != cap:
                return
            _, _, full, peak = settled
            self.high.append(max(self.high[-1], peak - self.full[-1] - full))
            self.full.append(self.full[-1] + full)

    def all_fit(self, used: int, budget: int) -> bool:
        """Whether every settled step fits after ``used`` tokens, as fit would find walking
        them."""
        k = self.length
        return used + self.full[k] + self.high[k] <= budget

    def add_emitted(self, messages: tuple[Message, ...], entries: tuple[ManifestEntry, ...],
                    turns: int, spent: int) -> None:  # fmt: skip
        """What emit sent for step ``emitted`` (the next one), while it is settled."""
        self.msgs += messages
        self.entries += entries
        _, _, t, s = self.ends[-1]
        self.ends.append((len(self.msgs), len(self.entries), t + turns, s + spent))


def measure(st: Step) -> tuple[int, int]:
    """(full, peak) of a step carried whole, from its current rendering and decisions: the
    amounts fit adds and checks inside it (``fit.py``)."""
    base = st.cost
    if not st.entries:
        return base, base
    below = st.below()
    acc, peak = base, 0
    for i in range(len(st.entries) - 1, -1, -1):
        tokens = st.entries[i].tokens
        peak = max(peak, acc + tokens + below[i])
        acc += tokens
    return acc, peak

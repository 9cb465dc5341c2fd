"""The live steps (those after the latest summary) as one build works on them.

Supersession and staleness are decided newest-first, the order every pass walks in, so each pass
classifies only as far back as it looks: the oldest steps of a long run (collapsed or folded
anyway) are never turned into objects at all.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.context.manifest import EntryState
from io_tui.core.context.stubs import elided_stub, superseded_stub
from io_tui.core.context.turns import COMPACT_CHARS, RenderedTurn, TurnCache, render_turn
from io_tui.core.contract import CHARS_PER_TOKEN, estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.providers.base import Message

_READ, _WRITE = ObsKind.READ, ObsKind.WRITE  # enum member lookups are slow in hot loops
_SUPERSEDING = frozenset({ObsKind.READ, ObsKind.GREP})  # ledger.SUPERSEDING_KINDS, by identity


@dataclass(slots=True, eq=False)
class Entry:
    """One observation and what this build decided to send for it."""

    obs: Observation
    by: int | None = None  # the newest step that made the same call (supersession)
    stale_by: int | None = None  # the first later write to the same path
    state: EntryState = EntryState.FULL
    reason: str = ""
    content: str = ""

    def stub(self) -> str:
        """What this entry becomes when it leaves the window."""
        if self.by is not None:
            return superseded_stub(self.obs, self.by)
        return elided_stub(self.obs, self.stale_by)

    def to_stub(self) -> None:
        """Send the stub instead of the result, and say why."""
        if self.by is not None:
            self.state, self.content = EntryState.SUPERSEDED, superseded_stub(self.obs, self.by)
            self.reason = f"step {self.by} made the same call"
            return
        self.state, self.content = EntryState.ELIDED, elided_stub(self.obs, self.stale_by)
        self.reason = "older than this request's window"
        if self.stale_by is not None:
            self.reason += f"; stale since step {self.stale_by}"


@dataclass(slots=True, eq=False)
class Step:
    """One live step. Turns and costs are rendered lazily: most steps of a long run are only
    ever counted, and the early-exiting passes never render them."""

    record: StepRecord
    entries: list[Entry]
    cache: TurnCache
    in_window: bool = False
    turn: Message | None = None
    ops: tuple[Message, ...] = ()
    _base: int = -1
    _desired: int = -1

    def prepare(self, cap: int) -> int:
        """Render the full turn; return its cost with the operator lines and missing results."""
        if self._base < 0:
            self._take(render_turn(self.record, cap, self.cache))
        return self._base

    def compact(self) -> int:
        """Render the turn as an out-of-window step shows it; return the same cost."""
        self._take(render_turn(self.record, COMPACT_CHARS, self.cache))
        return self._base

    def _take(self, rendered: RenderedTurn) -> None:
        self.turn, self.ops, self._base = rendered.turn, rendered.ops, rendered.cost

    def desired(self, cap: int) -> int:
        """What carrying this step whole would cost (stale reads priced at their old size)."""
        if self._desired < 0:
            cost = self.prepare(cap)
            for e in self.entries:
                if e.by is not None:
                    cost += estimate_tokens(superseded_stub(e.obs, e.by))
                else:
                    cost += -(-min(len(e.obs.text), cap) // CHARS_PER_TOKEN)
            self._desired = cost
        return self._desired


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def classify(st: Step, newest: dict[tuple[Any, str, str], int], writes: dict[str, int]) -> None:
    """Supersession and staleness of one step, given what the newer steps left in the maps.

    The newest call of a key (``Observation.key``) supersedes every earlier one. A read is stale
    when a successful write to the same path follows it; the first such write invalidated it.
    """
    for e in reversed(st.entries):
        obs = e.obs
        kind = obs.kind
        if kind is _WRITE:
            if not obs.is_error:
                writes[_norm(obs.target)] = obs.step
            continue
        if kind in _SUPERSEDING and not obs.is_error:
            key = (kind, obs.target, obs.span)
            if key in newest:
                e.by = newest[key]
                continue
            newest[key] = obs.step
        if kind is _READ and writes:
            e.stale_by = writes.get(_norm(obs.target))


class LiveSteps:
    """The steps after the latest summary, made into ``Step`` objects lazily, newest first."""

    def __init__(self, records: Sequence[StepRecord], cache: TurnCache) -> None:
        self.records = records
        self.steps: list[Step | None] = [None] * len(records)
        self.done = len(records)  # steps[done:] are classified
        self.newest: dict[tuple[Any, str, str], int] = {}
        self.writes: dict[str, int] = {}
        self.cache = cache

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> Step:
        for j in range(self.done - 1, index - 1, -1):
            rec = self.records[j]
            made = Step(rec, [Entry(o) for o in rec.observations], self.cache)
            classify(made, self.newest, self.writes)
            self.steps[j] = made
        self.done = min(self.done, index)
        step = self.steps[index]
        assert step is not None
        return step

    def drop_oldest(self, count: int) -> None:
        self.records = self.records[count:]
        self.steps = self.steps[count:]
        self.done = max(0, self.done - count)

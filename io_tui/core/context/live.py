"""The live steps (those after the latest summary), kept by the engine from one build to the next.

History is append-only, so the engine does not re-decide every step on every request. It keeps
one ``Step`` per live step with its supersession and staleness already decided (``LiveSteps``),
and on each build only appends the new steps: a new read or grep re-points the earlier ones of
the same key at itself, a new write marks the open reads of its path stale. A step whose
entries changed that way gets a new ``version``, and everything cached on it (its costs, its
stubs, what it emitted) is recomputed; everything else is reused as is.

What a step sends in one build (full or compact turn, each entry's state and content) is decided
by that build's passes (``fit.py``, ``refresh.py``), which visit every step they emit, except
the settled prefix (``settled.py``): steps whose decisions from an earlier build still stand.
Anything that would change those (a new classification, a compact turn, a cut) takes the step,
and every newer one, out of the prefix first (``Step.unsettle``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from io_tui.core.context.collapse import Asked
from io_tui.core.context.manifest import EntryState
from io_tui.core.context.settled import Settled
from io_tui.core.context.stubs import elided_stub, superseded_stub
from io_tui.core.context.turns import COMPACT_CHARS, RenderedTurn, TurnCache, render_turn
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.prefix import common_prefix
from io_tui.core.providers.base import Message

_READ, _WRITE = ObsKind.READ, ObsKind.WRITE  # enum member lookups are slow in hot loops
_K = TypeVar("_K")
_SUPERSEDING = frozenset({ObsKind.READ, ObsKind.GREP})  # ledger.SUPERSEDING_KINDS, by identity


@dataclass(slots=True, eq=False)
class Entry:
    """One observation: how it is classified (``by``, ``stale_by``) and what the current build
    decided to send for it (``state``, ``content``, ``reason``, ``tokens``).

    ``carried`` and ``stub_tokens`` cache what only the classification and the entry cap
    decide; ``reclassified`` drops them.
    """

    obs: Observation
    by: int | None = None  # the newest step that made the same call (supersession)
    stale_by: int | None = None  # the first later write to the same path
    state: EntryState = EntryState.FULL
    reason: str = ""
    content: str = ""
    tokens: int = 0  # estimate_tokens(content)
    stub_tokens: int = -1  # estimate_tokens(self.stub()), -1 until priced
    carried: tuple[int, str, str, int] | None = None  # cap, content, reason, tokens when carried

    def stub(self) -> str:
        """What this entry becomes when it leaves the window."""
        if self.by is not None:
            return superseded_stub(self.obs, self.by)
        return elided_stub(self.obs, self.stale_by)

    def stub_cost(self) -> int:
        if self.stub_tokens < 0:
            self.stub_tokens = estimate_tokens(self.stub())
        return self.stub_tokens

    def to_stub(self) -> None:
        """Send the stub instead of the result, and say why."""
        if self.by is not None:
            self.state = EntryState.SUPERSEDED
            self.reason = f"step {self.by} made the same call"
        else:
            self.state = EntryState.ELIDED
            self.reason = "older than this request's window"
            if self.stale_by is not None:
                self.reason += f"; stale since step {self.stale_by}"
        self.content = self.stub()
        self.tokens = self.stub_cost()

    def decide(self, state: EntryState, content: str, reason: str) -> None:
        self.state, self.content, self.reason = state, content, reason
        self.tokens = estimate_tokens(content)

    def reclassified(self) -> None:
        self.stub_tokens, self.carried = -1, None


@dataclass(slots=True, eq=False)
class Step:
    """One live step. Its turn is rendered lazily (from the engine's ``TurnCache``): most steps
    of a long run are only ever counted. ``version`` changes whenever one of its entries is
    reclassified; the caches below are valid for one version (and one entry cap)."""

    record: StepRecord
    entries: list[Entry]
    cache: TurnCache
    owner: LiveSteps
    index: int  # in ``owner.steps``
    version: int = 0
    in_window: bool = False
    # when the last fit carried it whole: version, cap, full, peak, decisions if volatile
    settled: tuple[int, int, int, int, Any] | None = None
    rendered: RenderedTurn | None = None  # the rendering this build sends: full or compact
    _desired: tuple[int, int, int] = (-1, -1, -1)  # version, cap, cost
    _below: tuple[int, list[int]] = (-1, [])  # version, stub tokens of entries[:i]
    chunk: Any = field(default=None)  # what ``messages.py`` emitted for it last, and for what

    @property
    def turn(self) -> Message | None:
        return self.rendered.turn if self.rendered else None

    @property
    def ops(self) -> tuple[Message, ...]:
        return self.rendered.ops if self.rendered else ()

    @property
    def cost(self) -> int:
        """What the rendering this build sends costs (turn, operator lines, placeholders)."""
        return self.rendered.cost if self.rendered else 0

    def prepare(self, cap: int) -> int:
        """Send the full turn; return its cost with the operator lines and missing results."""
        self.rendered = render_turn(self.record, cap, self.cache)
        return self.rendered.cost

    def compact(self) -> int:
        """Send the turn as an out-of-window step shows it; return the same cost."""
        self.unsettle()
        self.rendered = render_turn(self.record, COMPACT_CHARS, self.cache)
        return self.rendered.cost

    def unsettle(self) -> None:
        """Its window decisions are about to change: it leaves the settled prefix."""
        self.settled = None
        self.owner.settled.truncate(self.index)

    @property
    def volatile(self) -> bool:
        """Holds a stale read, re-read on every build while in the window."""
        return any(e.by is None and e.stale_by is not None for e in self.entries)

    def desired(self, cap: int) -> int:
        """What carrying this step whole would cost (stale reads priced at their old size)."""
        version, at, cost = self._desired
        if version == self.version and at == cap:
            return cost
        cost = render_turn(self.record, cap, self.cache).cost
        for e in self.entries:
            if e.by is not None:
                cost += e.stub_cost()
            else:
                cost += estimate_tokens(e.obs.text[:cap])
        self._desired = (self.version, cap, cost)
        return cost

    def below(self) -> list[int]:
        """``below()[i]``: the stub tokens of ``entries[:i]`` (what a cut there must reserve)."""
        version, sums = self._below
        if version != self.version:
            sums = [0] * (len(self.entries) + 1)
            for i, e in enumerate(self.entries):
                sums[i + 1] = sums[i] + e.stub_cost()
            self._below = (self.version, sums)
        return sums

    def changed(self, entry: Entry) -> None:
        entry.reclassified()
        self.version += 1
        self.unsettle()
        self.owner.desire_changed(self.index)


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


class LiveSteps:
    """The live steps, classified as they are appended, reused by every build of a run.

    Supersession: the newest call of a key (``Observation.key``) supersedes every earlier one,
    so a new read or grep re-points all earlier ones of its key (``_groups``). Staleness: a read
    is stale when a successful write to the same path follows it, and the first such write
    invalidated it; a superseded read is never stale, its successor is (``_open_reads`` holds
    the reads a write would invalidate). Appending oldest-first gives exactly what deciding
    newest-first from scratch gives; the property tests check it.
    """

    def __init__(self, cache: TurnCache) -> None:
        self.cache = cache
        self.records: list[StepRecord] = []
        self.steps: list[Step] = []
        self._groups: dict[tuple[Any, str, str], list[tuple[Step, Entry]]] = {}
        self._open_reads: dict[str, list[tuple[Step, Entry]]] = {}
        self.settled = Settled()
        self.asked = Asked()  # what the collapse line last stood for (``collapse.py``)
        self._desired = [0]  # _desired[k]: what carrying steps[:k] whole costs, at _desired_cap
        self._desired_cap = -1

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> Step:
        return self.steps[index]

    def sync(self, records: Sequence[StepRecord]) -> None:
        """Make the live steps ``records``, keeping every step of the common prefix.

        The usual build passes the previous build's records with the last one (the step being
        asked for, no results yet) replaced and new ones appended: only those are classified.
        A dropped step that had results (a resumed step that gained some) may have changed
        older ones, so then everything is classified afresh.
        """
        records = records if isinstance(records, list) else list(records)
        keep = common_prefix(self.records, records)
        if any(r.observations for r in self.records[keep:]):
            self._reset()
            keep = 0
        del self.records[keep:], self.steps[keep:]
        self.settled.truncate(keep)
        self.desire_changed(keep)
        for record in records[keep:]:
            self._append(record)

    def demand(self, cap: int, boundary: int) -> tuple[int, int]:
        """What carrying every live step whole costs, and what the steps from ``boundary`` on
        cost (``Step.desired``), from prefix sums extended over the steps added or changed."""
        if cap != self._desired_cap:
            self._desired, self._desired_cap = [0], cap
        sums = self._desired
        for st in self.steps[len(sums) - 1 :]:
            sums.append(sums[-1] + st.desired(cap))
        return sums[-1], sums[-1] - sums[boundary]

    def desire_changed(self, index: int) -> None:
        del self._desired[index + 1 :]

    def settle(self, cap: int) -> Settled:
        """The settled prefix for a fit at ``cap``, taking in what the last fits settled."""
        self.settled.extend(self.steps, cap)
        return self.settled

    def drop_oldest(self, count: int) -> None:
        """Forget the ``count`` oldest steps (folded): the rest keep their classification,
        which only ever depends on newer steps."""
        gone = {id(st) for st in self.steps[:count]}
        del self.records[:count], self.steps[:count]
        for index, st in enumerate(self.steps):
            st.index = index
        self.settled.reset(-1)
        self.desire_changed(0)
        self._groups = _without(self._groups, gone)
        self._open_reads = _without(self._open_reads, gone)

    def _reset(self) -> None:
        self.records, self.steps = [], []
        self._groups, self._open_reads = {}, {}
        self.settled.reset(-1)
        self.desire_changed(0)

    def _append(self, record: StepRecord) -> None:
        entries = [Entry(o) for o in record.observations]
        st = Step(record, entries, self.cache, self, len(self.steps))
        for e in st.entries:  # in order: a later result of the same step is the newer one
            obs = e.obs
            kind = obs.kind
            if kind is _WRITE:
                if not obs.is_error:
                    for owner, read in self._open_reads.pop(_norm(obs.target), ()):
                        if read.by is None:
                            read.stale_by = obs.step
                            owner.changed(read)
                continue
            if kind in _SUPERSEDING and not obs.is_error:
                group = self._groups.setdefault((kind, obs.target, obs.span), [])
                for owner, older in group:
                    older.by, older.stale_by = obs.step, None
                    owner.changed(older)
                group.append((st, e))
            if kind is _READ:
                self._open_reads.setdefault(_norm(obs.target), []).append((st, e))
        self.records.append(record)
        self.steps.append(st)


def _without(
    table: dict[_K, list[tuple[Step, Entry]]], gone: set[int]
) -> dict[_K, list[tuple[Step, Entry]]]:
    kept = {k: [h for h in v if id(h[0]) not in gone] for k, v in table.items()}
    return {k: v for k, v in kept.items() if v}

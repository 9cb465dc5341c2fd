"""One live step and its entries: how each observation is classified, and what the current build
decided to send for it (``live.py`` classifies them; the build's passes decide them)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from io_tui.core.context.manifest import EntryState
from io_tui.core.context.stubs import (
    aged_stub,
    elided_stub,
    noted_stub,
    same_stub,
    shown_stub,
    superseded_stub,
)
from io_tui.core.context.turns import COMPACT_CHARS, RenderedTurn, TurnCache, render_turn
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, Seen, StepRecord
from io_tui.core.providers.messages import Message


@dataclass(slots=True, eq=False)
class Entry:
    """One observation: how it is classified (``by``, ``shown_by``, ``stale_by``, ``drift``)
    and what the current build decided to send for it (``state``, ``content``, ``reason``,
    ``tokens``).

    ``carried`` and ``stub_tokens`` cache what only the classification and the entry cap
    decide; ``Step.changed`` drops them.
    """

    obs: Observation
    by: int | None = None  # the later step that made the same call or covered it (supersession)
    covered: bool = False  # superseded by a read of more lines of the same file
    shown_by: int | None = None  # an earlier open read shows every line of it, the file unchanged
    # what it stands for on disk: ``obs.seen``, or that of a rerun that gave it again (``live.py``)
    seen: tuple[Seen, ...] = ()
    noted: bool = False  # a remember result shown once: its call carries the note (``live.py``)
    latest_test: bool = False  # the run's latest test command: its stub keeps its output's end
    pending: bool = False  # superseded, carried as sent until the next rewrite (``plan.py``)
    # a command's output that aged out at this step (``live.AGE_STEPS``): pending like a
    # superseded result, then a stub that says so
    aged: int | None = None
    # superseded by its correction (``correct.py``): out of date, carried as sent until the next
    # rewrite, with why it went out of date (its staleness is cleared once corrected)
    corrected: bool = False
    corrected_why: str = ""
    named: bool = False  # a correction of a later result of its call named it out of date
    stale_by: int | None = None  # the first later write to a path it was made from
    stale_path: str = ""  # that path
    drift: tuple[str, int | None] | None = None  # this build: what changed on disk, and by whom
    state: EntryState = EntryState.FULL
    reason: str = ""
    content: str = ""
    tokens: int = 0  # estimate_tokens(content)
    stub_tokens: int = -1  # estimate_tokens(self.stub()), -1 until priced
    carried: tuple[int, str, str, int] | None = None  # cap, content, reason, tokens when carried
    squeezed: bool = False  # ``carried`` is the newest step's share (``Resolver.squeeze``)
    # the pending result of the same call, carried whole before it, that this one is sent as a
    # difference from (``refresh.py``); and those sent as a difference from this (made on the
    # first: most entries never have one, and a cold build makes one per result)
    echo: Entry | None = None
    echoed_by: list[Entry] | None = None
    # an earlier read of the same file whose lines cover this range's (``live.py``): while the
    # request carries it whole above, showing them as this one would, this one is sent as a
    # pointer to them (``refresh.py``); it is in the base's ``echoed_by`` as an echo is
    quotes: Entry | None = None
    no_echo: bool = False  # its base (echo, quoted) fell out of the window: whole from then on
    owner: Step = field(init=False)  # the step that holds it (set by ``Step``)

    def __post_init__(self) -> None:
        self.seen = self.obs.seen

    @property
    def stale(self) -> str | None:
        """Why what it carries no longer holds (a later write, or a change on disk), or None."""
        if (self.by is not None and not self.pending) or self.shown_by is not None or self.noted:
            return None
        if self.stale_by is not None:
            return f"step {self.stale_by} wrote {self.stale_path} after this {self.obs.kind.value}"
        return self.drift[0] if self.drift is not None else None

    @property
    def invalidated_by(self) -> int | None:
        """The step that made it stale, when one is known."""
        if self.stale_by is not None or self.drift is None:
            return self.stale_by
        return self.drift[1]

    def stub(self) -> str:
        """What this entry becomes when it leaves the window (a decision, a receipt, an exit
        status stay in it: ``stubs.receipt``)."""
        if self.shown_by is not None and self.obs.kind is not ObsKind.READ:
            return same_stub(self.obs, self.shown_by)
        if self.shown_by is not None:
            return shown_stub(self.obs, self.shown_by)
        if self.noted:
            return noted_stub(self.obs)
        if self.by is not None:
            return superseded_stub(self.obs, self.by, self.covered, self.corrected)
        if self.aged is not None:
            return aged_stub(self.obs, self.aged)
        return elided_stub(self.obs, self.stale, self.latest_test)

    def echoed(self, by: Entry) -> None:
        """``by`` is sent as a difference from this entry."""
        if self.echoed_by is None:
            self.echoed_by = []
        self.echoed_by.append(by)

    def stub_cost(self) -> int:
        if self.stub_tokens < 0:
            self.stub_tokens = estimate_tokens(self.stub())
        return self.stub_tokens

    def to_stub(self) -> None:
        """Send the stub instead of the result, and say why."""
        if self.shown_by is not None:
            self.state = EntryState.SUPERSEDED
            self.reason = self._shown_reason()
        elif self.noted:
            self.state = EntryState.SUPERSEDED
            self.reason = "a remember result shown once; its call carries the note"
        elif self.by is not None:
            self.state = EntryState.SUPERSEDED
            self.reason = self._superseded_reason()
        elif self.aged is not None:
            self.state = EntryState.ELIDED
            self.reason = self.aged_reason()
        else:
            self.state = EntryState.ELIDED
            self.reason = "older than this request's window"
            stale = self.stale
            if stale is not None:
                self.reason += f"; stale: {stale}"
        self.content = self.stub()
        self.tokens = self.stub_cost()

    def drop(self) -> None:
        """Send nothing: its step is left out of the transcript (``Step.dead``)."""
        self.state, self.content, self.tokens = EntryState.DROPPED, "", 0
        why = self._shown_reason() if self.shown_by is not None else self._superseded_reason()
        self.reason = (
            f"{why}; every result of step {self.obs.step} was superseded, so the step is left out"
        )

    def _superseded_reason(self) -> str:
        if self.corrected:
            return f"out of date ({self.corrected_why}), corrected at step {self.by}"
        again = "read these lines again" if self.covered else "made the same call"
        return f"step {self.by} {again}"

    def aged_reason(self) -> str:
        return (
            f"a command's output, aged out at step {self.aged}: the steps after it have acted on it"
        )

    def _shown_reason(self) -> str:
        if self.obs.kind is ObsKind.READ:
            return f"step {self.shown_by}'s read shows these lines, the file unchanged"
        return f"step {self.shown_by}'s result of the same call is the same, to the character"

    def decide(self, state: EntryState, content: str, reason: str) -> None:
        self.state, self.content, self.reason = state, content, reason
        self.tokens = estimate_tokens(content)


@dataclass(slots=True, eq=False)
class Step:
    """One live step. Its turn is rendered lazily (from the engine's ``TurnCache``): most steps
    of a long run are only ever counted. ``version`` changes whenever one of its entries is
    reclassified; the caches below are valid for one version (and one entry cap)."""

    record: StepRecord
    entries: list[Entry]
    cache: TurnCache
    on_unsettle: Callable[[int], None]  # the live steps' settled prefix loses steps from here
    index: int  # among the live steps (``LiveSteps.steps``)
    version: int = 0
    in_window: bool = False
    # when the last fit carried it whole: version, cap, full, peak
    settled: tuple[int, int, int, int] | None = None
    rendered: RenderedTurn | None = None  # the rendering this build sends: full or compact
    _desired: tuple[int, int, int] = (-1, -1, -1)  # version, cap, cost
    _below: tuple[int, list[int]] = (-1, [])  # version, stub tokens of entries[:i]
    _dead: tuple[int, bool, bool] = (-1, False, False)  # version, dead, dead once pending go
    chunk: Any = field(default=None)  # what ``messages.py`` emitted for it last, and for what
    # a later step showed whole what its calls wrote (a whole read or a write of each path), and
    # the last rewrite applied that: its turn is sent compact, as an out-of-window one, what its
    # writes wrote superseded (``turns.py``)
    written_over: int | None = None
    compact_turn: bool = False
    unshown: set[str] | None = None  # the paths it wrote that no later step showed whole yet
    shown_writes: dict[str, int] | None = None  # its writes of the others: call id -> that step
    # shared by every step of one ``LiveSteps``: the lowest index of a step whose version moved
    # since the sums kept over the oldest steps (``LiveSteps.demand``) were last checked
    bumps: list[int] = field(default_factory=lambda: [0])

    def __post_init__(self) -> None:
        for e in self.entries:
            e.owner = self

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

    @property
    def dead(self) -> bool:
        """Dead weight: every result of it was superseded by a later call and is a stub now
        (none pending), or is shown by an earlier read of the unchanged file; its turn says no
        more than an out-of-window turn keeps, and the operator said nothing then. It is left
        out of the transcript (``drop``): the newer result of each of its calls is in the
        request, later in it (or the read showing its lines, earlier)."""
        return self._deadness()[1]

    @property
    def dies_at_rewrite(self) -> bool:
        """Dead once the next rewrite stubs its pending results (``plan.py``)."""
        return self._deadness()[2]

    def _deadness(self) -> tuple[int, bool, bool]:
        if self._dead[0] == self.version:
            return self._dead
        rec, entries = self.record, self.entries
        later = all(e.by is not None or e.shown_by is not None for e in entries)
        if later and (rec.operator_messages or len(rec.text) > COMPACT_CHARS or not entries):
            later = False
        if later:
            answered = {e.obs.call_id for e in entries}
            later = all(c.id in answered for c in rec.tool_calls)
        dead = later and all(not e.pending or e.drift is not None for e in entries)
        self._dead = (self.version, dead, later)
        return self._dead

    def drop(self) -> None:
        """Send nothing of this dead step: no turn, no results."""
        self.rendered = None
        for e in self.entries:
            e.drop()

    def prepare(self, cap: int) -> int:
        """Send the full turn; return its cost with the operator lines and missing results."""
        self.rendered = self._render(cap)
        return self.rendered.cost

    def _render(self, cap: int) -> RenderedTurn:
        """The turn at ``cap``; once a later step showed every file it wrote (``compact_turn``),
        compact, with what it wrote superseded."""
        if self.compact_turn:
            return render_turn(self.record, COMPACT_CHARS, self.cache, self.shown_writes)
        return render_turn(self.record, cap, self.cache)

    def compact(self) -> int:
        """Send the turn as an out-of-window step shows it; return its cost."""
        self.unsettle()
        self.rendered = self._render(COMPACT_CHARS)
        return self.rendered.cost

    def unsettle(self) -> None:
        """Its window decisions are about to change: it leaves the settled prefix."""
        self.settled = None
        self.on_unsettle(self.index)

    def desired(self, cap: int) -> int:
        """What carrying this step whole would cost (a copy out of date at its recorded size),
        once the next rewrite has stubbed the pending results (a step dead then costs nothing)."""
        version, at, cost = self._desired
        if version == self.version and at == cap:
            return cost
        if self.dies_at_rewrite:
            self._desired = (self.version, cap, 0)
            return 0
        cost = self._render(cap).cost
        for e in self.entries:
            if e.by is not None or e.shown_by is not None or e.noted or e.aged is not None:
                cost += e.stub_cost()
            else:
                cost += estimate_tokens(e.obs.text[:cap])
        self._desired = (self.version, cap, cost)
        return cost

    def bump(self) -> None:
        """A new version: what is cached for the old one is stale."""
        self.version += 1
        if self.index < self.bumps[0]:
            self.bumps[0] = self.index

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
        """``entry`` was reclassified: what is cached on it and on this step goes, and the step
        leaves the settled prefix (``unsettle`` written out: a cold build calls this a few times
        per observation). A step the last fits did not settle is in no prefix (``Settled``
        takes in only settled steps, and ``unsettle`` cuts it back as it clears ``settled``):
        nothing to cut."""
        entry.stub_tokens, entry.carried = -1, None
        self.bump()
        if self.settled is not None:
            self.settled = None
            self.on_unsettle(self.index)
        if entry.echoed_by:  # what is sent as a difference from it may change
            for echo in entry.echoed_by:
                echo.owner.changed(echo)

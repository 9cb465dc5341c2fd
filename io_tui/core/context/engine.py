"""The context engine: builds every request of one run (DESIGN §3.2)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace

from io_tui.core.context.build import Build, asked_for
from io_tui.core.context.frame import Frame, frame_messages
from io_tui.core.context.labels import observation_labels
from io_tui.core.context.live import LiveSteps
from io_tui.core.context.manifest import Assembly, EntryState, ManifestEntry, Section
from io_tui.core.context.plan import Plan, Rewrite, extends, worth_rewriting
from io_tui.core.context.refresh import Probe, Refresher
from io_tui.core.context.summary import Agreement, Summarizer, Summary
from io_tui.core.context.turns import TurnCache, message_tokens
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.memory.notes import MemoryNote
from io_tui.core.providers.base import ToolSpec
from io_tui.core.providers.messages import Message
from io_tui.core.text.prefix import common_prefix

# the states whose result a request sends something of its own for (a stub stands for none)
CARRIED = frozenset({EntryState.FULL, EntryState.CAPPED, EntryState.ECHOED, EntryState.CORRECTED})
COLLAPSED_REASON = "out of the window, collapsed into the one line that stands for its steps"
FOLDED_REASON = "folded into the compaction summary"


_KIND = {kind: kind.value for kind in ObsKind}  # an enum's ``value`` is slow to read, and hot
_new_tuple = tuple.__new__  # a named tuple made without its generated ``__new__``: twice as fast


def _unsent(o: Observation, state: EntryState, reason: str) -> ManifestEntry:
    """The manifest entry of a result nothing of which this request sends (collapsed, folded)."""
    return _new_tuple(ManifestEntry, (  # every field, in order: see ``ManifestEntry``
        o.step, o.call_id, _KIND[o.kind], o.target, state, reason, None, 0, 0, None, None,
        *observation_labels(o), "",
    ))  # fmt: skip


@dataclass
class StableRun:
    """Flat stable entries of a run of records: ``entries[ends[k - 1]:ends[k]]`` is record k's."""

    records: list[StepRecord] = field(default_factory=list)
    entries: list[ManifestEntry] = field(default_factory=list)
    ends: list[int] = field(default_factory=lambda: [0])


@dataclass
class ContextEngine:
    """Builds every request of one run. Holds the run's summaries so none is bought twice, and
    what does not change between builds: the frame's messages, each step's rendered turn, the
    live steps already classified with their costs and emitted messages (``live.py``), the
    manifest entries of collapsed and folded steps. ``plan`` is what the last request committed
    to (``plan.py``): a build that would change an earlier message anyway, or whose pending
    rewrites pay for themselves, is made again with every pending rewrite applied."""

    frame: Frame
    refresh: Refresher | None = None
    probe: Probe | None = None  # what no longer holds on disk (stat, then hash), before each build
    summarize: Summarizer | None = None
    summaries: list[Summary] = field(default_factory=list)
    on_summary: Callable[[Summary], Awaitable[None]] | None = None
    # the run's progress ledger, which every summary must agree with (``summary.Agreement``)
    agreement: Callable[[], Agreement] | None = None
    plan: Plan = field(default_factory=Plan)  # what the requests keep stable (``plan.py``)
    turn_cache: TurnCache = field(default_factory=dict, init=False, repr=False)
    live: LiveSteps = field(init=False, repr=False)
    _frame_cache: tuple[tuple[Message, ...], tuple[Section, ...]] | None = field(
        default=None, init=False, repr=False
    )
    _runs: dict[EntryState, StableRun] = field(default_factory=dict, init=False, repr=False)
    # the step asked for and the whole texts of the corrections made at its boundary so far:
    # a build of the same step again (the ladder's next rung) sends them again, and adds any
    # newly needed after them
    _asked: tuple[int, dict[str, str]] = field(default=(-1, {}), init=False, repr=False)

    def __post_init__(self) -> None:
        self.live = LiveSteps(self.turn_cache)

    async def build(
        self,
        history: Sequence[StepRecord],
        *,
        ceiling_tokens: int,
        notes: Sequence[MemoryNote] = (),
        left_out: Sequence[MemoryNote] = (),
        force_fold: bool = False,
        emergency: bool = False,
    ) -> Assembly:
        """Assemble the next request over ``history`` (oldest step first) under the ceiling.

        ``force_fold`` (after a provider's context-overflow error) folds once even below the
        threshold. ``emergency`` (after the forced fold overflowed too) is the ladder's bounded
        emergency compaction (``ladder.py``): a forced fold into the digest, under half of
        ``ceiling_tokens`` (the caller passes at most what the refused request carried). The
        probe, refreshes and the summarizer are the only awaits. ``notes`` are the active
        memory notes the block is rendered from; ``left_out`` the ones not recalled (expired,
        superseded), which the memory section names with why.
        """
        if ceiling_tokens <= 0:
            raise ValueError("ceiling_tokens must be positive")
        if emergency:
            ceiling_tokens, force_fold = max(1, ceiling_tokens // 2), True
        history = self._with_corrections(history)
        step = history[-1].step if history else 0
        # a rewrite stubs what the steps before this one superseded, and this one's too when
        # its results are in (a resumed step): supersessions by later steps stay pending
        applied = step + 1 if history and history[-1].observations else step
        plan = self.plan if self.plan.sent else self.plan.rewriting(applied)
        build = Build(self, history, ceiling_tokens, notes, plan, emergency, left_out)
        assembly = await build.run(force_fold)
        self._note(build)
        forced = bool(plan.sent) and not extends(assembly.messages, plan.sent)
        saved, horizon = self._savings(build, step, plan)
        planned = bool(plan.sent) and not forced and self._pays(build, saved, horizon)
        rewrite: Rewrite | None = None
        if forced or planned:
            # a rewrite: take every pending one with it, and the memory block if it gets there
            kept = common_prefix(assembly.messages, plan.sent) if forced else len(plan.sent)
            cause = self._cause(build, kept, plan) if forced else "planned"
            # it reaches the memory block when it breaks before the first step's message (at
            # the block, the summary or the collapse line): rendering the block again then
            # rewrites only those few messages more
            reaches = kept <= len(self.frame_parts()[0]) + max(1, build.head_messages())
            plan = plan.rewriting(applied, forced, reaches)
            history = self._with_corrections(history)
            build = Build(self, history, ceiling_tokens, notes, plan, emergency, left_out)
            assembly = replace(await build.run(False), folded=assembly.folded)
            self._note(build)
            rewrite = self._record(cause, assembly, saved, horizon)
        corrections = self.corrections_at(history[-1].step) if history else assembly.corrections
        assembly = replace(assembly, corrections=corrections, rewrite=rewrite)
        self.plan = Plan(
            plan.rewritten_at,
            build.floor(),
            (ceiling_tokens, build.memory),
            assembly.messages,
            plan.requests + 1,
            plan.forced,
            carried=frozenset(e.call_id for e in assembly.entries if e.state in CARRIED),
        )
        return assembly

    def _with_corrections(self, history: Sequence[StepRecord]) -> Sequence[StepRecord]:
        """``history`` with the step asked for carrying the corrections already made at its
        boundary (the caller passes it as it was asked for: no turn, no results)."""
        if not history:
            return history
        last, (step, made) = history[-1], self._asked
        if last.step != step or not made or not asked_for(last):
            return history
        live = self.live.records
        held = live[-1].corrections if live and live[-1].step == step else ()
        if len(held) <= len(last.corrections) or held[: len(last.corrections)] != last.corrections:
            return history
        return [*history[:-1], replace(last, corrections=held)]

    def _note(self, build: Build) -> None:
        """Keep the whole texts of the corrections ``build`` made, for the step it asked for."""
        step = build.history[-1].step if build.history else 0
        if self._asked[0] != step:
            self._asked = (step, {})
        for obs, whole in build.corrections:
            self._asked[1][obs.call_id] = whole

    def corrections_at(self, step: int) -> tuple[tuple[Observation, str], ...]:
        """The corrections made at the boundary of ``step``, the step the last build asked
        for, each with its whole text: what the run loop records with that step."""
        records = self.live.records
        if not records or records[-1].step != step:
            return ()
        whole = self._asked[1] if self._asked[0] == step else {}
        return tuple((o, whole.get(o.call_id, o.text)) for o in records[-1].corrections)

    def _savings(self, build: Build, step: int, plan: Plan) -> tuple[int, int]:
        """What stubbing the pending results would save on each later request, and over how
        many requests: until the next rewrite that must happen (the window filling, the run's
        last step, or as often as forced ones came so far)."""
        saved, _ = build.pending()
        contract = self.frame.contract
        until_cut = (build.ceiling - build.est_tokens) // max(1, build.live.growth(build.cap))
        horizon = max(1, min(contract.max_steps - step, until_cut, plan.until_forced()))
        return saved, horizon

    def _pays(self, build: Build, saved: int, horizon: int) -> bool:
        """Whether stubbing the pending results now repays rewriting the prefix after them
        (``plan.worth_rewriting``), rather than waiting for the next rewrite that must happen."""
        if saved <= 0:
            return False
        _, rewritten = build.pending()
        return worth_rewriting(saved, rewritten, horizon, self.frame.contract.cache)

    def _cause(self, build: Build, kept: int, plan: Plan) -> str:
        """What forced a request to change what the previous one sent, ``kept`` messages of it
        repeated: a rebuilt frame, a fold, the memory block rendered again, the window cut."""
        frame = len(self.frame_parts()[0])
        if kept < frame:
            return "frame"
        if build.folded:
            return "fold"
        if plan.memory is None and kept == frame:
            return "memory"
        if build.floor() != plan.floor:
            return "window"
        return "other"

    def _record(self, cause: str, assembly: Assembly, saved: int, horizon: int) -> Rewrite:
        """What a rewrite changed of the previous request (``_last``), and what it cost: what
        that request cached after the prefix kept is written again, less the ``saved`` tokens
        the stubs no longer carry."""
        sent = self.plan.sent
        kept = common_prefix(assembly.messages, sent)
        rewritten = max(0, sum(message_tokens(m) for m in sent[kept:]) - saved)
        prices = self.frame.contract.cache
        before = self.plan.carried
        dropped = tuple(
            e.call_id for e in assembly.entries if e.call_id in before and e.state not in CARRIED
        )
        return Rewrite(
            cause,
            kept,
            rewritten,
            rewritten * (prices.write - prices.read),
            saved,
            horizon,
            saved * prices.read * horizon,
            prices.read,
            dropped,
        )

    def offer_tools(self, tools: tuple[ToolSpec, ...]) -> None:
        """The run's tools changed (an MCP server became ready): count the new schemas."""
        if tools is not self.frame.tools:
            self.reframe(replace(self.frame, tools=tools))

    def reframe(self, frame: Frame) -> None:
        """A part of the frame was rebuilt (``core/derived/parts.py``): send ``frame`` from the next
        request on. A changed frame rewrites the whole request: nothing before it is cached."""
        if frame != self.frame:
            self.frame = frame
            self._frame_cache = None

    def drop_memory(self) -> None:
        """The memory block the last rewrite rendered no longer holds (a note it shows changed
        or left): the next request renders it again, a rewrite from there on."""
        if self.plan.memory is not None:
            self.plan = replace(self.plan, memory=None)

    def frame_parts(self) -> tuple[tuple[Message, ...], tuple[Section, ...]]:
        if self._frame_cache is None:
            self._frame_cache = frame_messages(self.frame)
        return self._frame_cache

    def stable_run(self, records: Sequence[StepRecord], state: EntryState) -> list[ManifestEntry]:
        """The manifest entries of ``records`` (the oldest live steps, collapsed; or the folded
        ones), in order: nothing of them is sent, so they do not change from one request to the
        next. Kept flat between builds: a run of them mostly grows at its newest end, so only
        the entries of the steps new to it are made."""
        run = self._runs.setdefault(state, StableRun())
        keep = common_prefix(run.records, records)
        del run.records[keep:], run.ends[keep + 1 :]
        entries, ends = run.entries, run.ends
        del entries[ends[-1] :]
        reason = COLLAPSED_REASON if state is EntryState.COLLAPSED else FOLDED_REASON
        for record in records[keep:]:
            run.records.append(record)
            entries += [_unsent(o, state, reason) for o in record.observations]
            ends.append(len(entries))
        return entries

    def latest_summary(self, last_step: int) -> Summary | None:
        usable = [s for s in self.summaries if s.through_step <= last_step]
        return max(usable, key=lambda s: s.through_step, default=None)

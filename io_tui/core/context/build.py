"""One ``ContextEngine.build`` call: its state, and the rungs in the order they run."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from io_tui.core.context.compaction import (
    Shared,
    fold,
    fold_due,
    fold_steps,
    notes_budget_chars,
)
from io_tui.core.context.correct import correct
from io_tui.core.context.fit import fit, stub_out
from io_tui.core.context.frame import Frame
from io_tui.core.context.gcpause import gc_paused
from io_tui.core.context.labels import (
    HARNESS,
    MODEL,
    Role,
    digest,
    memory_labels,
    summary_labels,
)
from io_tui.core.context.ladder import rung_reached
from io_tui.core.context.live import LiveSteps
from io_tui.core.context.manifest import (
    TURNS_REASON,
    Assembly,
    EntryState,
    ManifestEntry,
    Section,
)
from io_tui.core.context.memory_section import memory_omissions, memory_reason
from io_tui.core.context.messages import emit_step
from io_tui.core.context.plan import CUT_AHEAD, Plan
from io_tui.core.context.refresh import Probe, Refresher, Resolver
from io_tui.core.context.stubs import RECALL
from io_tui.core.context.summary import Agreement, Summarizer, Summary
from io_tui.core.context.turns import message_tokens
from io_tui.core.contract import entry_cap_chars
from io_tui.core.ledger import Observation, StepRecord
from io_tui.core.memory.notes import MemoryNote, render_notes
from io_tui.core.providers.messages import Message
from io_tui.core.text.heads import steps_target, summary_head

_WHOLE = frozenset({EntryState.FULL, EntryState.CAPPED})  # a pending entry's own content sent


class Engine(Protocol):
    """What a build uses of the engine that runs it (``engine.py``'s ``ContextEngine``): what
    lasts from one build to the next."""

    frame: Frame
    refresh: Refresher | None
    probe: Probe | None
    summarize: Summarizer | None
    summaries: list[Summary]
    on_summary: Callable[[Summary], Awaitable[None]] | None
    agreement: Callable[[], Agreement] | None
    live: LiveSteps

    def frame_parts(self) -> tuple[tuple[Message, ...], tuple[Section, ...]]: ...

    def stable_run(
        self, records: Sequence[StepRecord], state: EntryState
    ) -> list[ManifestEntry]: ...

    def latest_summary(self, last_step: int) -> Summary | None: ...


def asked_for(record: StepRecord) -> bool:
    """A step as it is asked for: nothing of the model's yet (its corrections may be there)."""
    return not (record.text or record.tool_calls or record.observations)


class Build:
    """The state of one ``build`` call, so each rung stays a short function."""

    def __init__(
        self,
        engine: Engine,
        history: Sequence[StepRecord],
        ceiling: int,
        notes: Sequence[MemoryNote],
        plan: Plan,
        emergency: bool = False,
        left_out: Sequence[MemoryNote] = (),
    ) -> None:
        self.engine = engine
        self.left_out = left_out  # notes not recalled (expired, superseded): named, not sent
        self.emergency = emergency  # the ladder's bounded emergency compaction (``ladder.py``)
        self.history = history
        self.ceiling = ceiling
        self.plan = plan
        self.notes = notes
        self.cap = entry_cap_chars(ceiling)
        self.reserve = ceiling // 8  # what stubs may take before they collapse
        if plan.memory is not None and len(plan.memory[1].text) <= ceiling:
            # the block the last rewrite rendered, while it fits this ceiling's quarter (a
            # ceiling that moves with the run's budget or the provider's drift keeps it)
            self.memory = plan.memory[1]
        else:
            self.memory = render_notes(notes, max_chars=ceiling)  # a quarter of it, in chars
        self.memory_msg = Message("user", self.memory.text) if self.memory.text else None
        self.memory_tokens = message_tokens(self.memory_msg) if self.memory_msg else 0
        self.first_step = history[0].step if history else 0
        self.summary = engine.latest_summary(history[-1].step if history else 0)
        self.folded = False
        self.resolver = Resolver(self.cap)
        self.corrections: list[tuple[Observation, str]] = []  # made by this build
        start = self._live_start()
        self.folded_records: Sequence[StepRecord] = history[:start]
        self.live = engine.live
        with gc_paused():  # an entry per observation, all living on (``core/context/gcpause.py``)
            self.live.sync(history[start:])
            self.live.apply_rewrites(plan.rewritten_at)
        self.out = 0  # how many of the oldest live steps are out of the window
        self.collapsed = 0  # how many of them are collapsed into one line
        self.collapse_msg: Message | None = None
        self.est_tokens = 0  # what the assembly carries, once emitted

    def _live_start(self) -> int:
        if self.summary is None:
            return 0
        return bisect_right(self.history, self.summary.through_step, key=lambda r: r.step)

    async def run(self, force_fold: bool) -> Assembly:
        probe = self.engine.probe
        if probe is not None:
            watched = self.live.watched()
            self.live.mark_drift(await probe(watched) if watched else {})
        if self.history and asked_for(self.history[-1]):
            # what went out of date in the window's reach: corrected at the boundary of the step
            # asked for (``correct.py``)
            reach = bisect_left(self.live.records, self.plan.floor, key=lambda r: r.step)
            step = self.history[-1].step
            self.corrections = await correct(self.live, reach, step, self.cap, self.engine.refresh)
        await self._maybe_fold(force_fold)  # the summarizer's provider call: collected as usual
        # the passes make an entry per observation that lives on: no collector walking the
        # heap for garbage while they do (``core/context/gcpause.py``); the refreshes are short awaits
        with gc_paused():
            window = self.ceiling - self.memory_tokens - self._summary_tokens()
            self.out = await self._window(window)
            while self.live.broken_echoes(self.out):  # their bases are not carried: whole
                self.out = await self._window(window)
            self.collapse_msg = stub_out(self.live, self.out, self.reserve)
            if self.collapse_msg is not None:
                self.collapsed = self.out
            assembly = self.emit()
        self.est_tokens = assembly.est_tokens
        return assembly

    def emit(self) -> Assembly:
        """The assembled request: the frame, the memory block, the summary, the collapse line,
        then each kept step (``messages.py``). Its window, stubs and collapse are decided."""
        frame_messages, frame_sections = self.engine.frame_parts()
        messages = list(frame_messages)
        entries: list[ManifestEntry] = []
        turns_tokens = 0

        def add(msg: Message) -> int:
            messages.append(msg)
            return message_tokens(msg)

        est = 0
        if self.memory_msg is not None:
            est += add(self.memory_msg)
        summary_msg = self.summary_msg()
        if summary_msg is not None and self.summary is not None:
            entries += self.engine.stable_run(self.folded_records, EntryState.SUMMARY)
            tokens = add(summary_msg)
            est += tokens
            through = self.summary.through_step
            steps = steps_target(self.first_step, through)
            entries.append(
                ManifestEntry(
                    through, f"summary:{through}", "summary", steps, EntryState.SUMMARY,
                    f"compaction summary ({self.summary.source}"
                    f"{', written for this request' if self.folded else ', reused'})",
                    None, len(summary_msg.content), tokens, None, None,
                    *summary_labels(self.summary.source, steps), digest(summary_msg.content),
                )
            )  # fmt: skip
        records = self.live.records
        entries += self.engine.stable_run(records[: self.collapsed], EntryState.COLLAPSED)
        if self.collapse_msg is not None:
            tokens = add(self.collapse_msg)
            est += tokens
            first, last = records[0].step, records[self.collapsed - 1].step
            content = self.collapse_msg.content
            entries.append(
                ManifestEntry(
                    last, "collapse", "collapse", steps_target(first, last), EntryState.COLLAPSED,
                    f"their stubs passed an eighth of the ceiling ({self.reserve:,} tokens)",
                    None, len(content), tokens, None, None, Role.EVIDENCE, HARNESS,
                    steps_target(first, last), "", digest(content),
                )
            )  # fmt: skip
        start, settled = self.collapsed, self.live.settled
        if start == 0 and settled.emitted:  # the settled steps, as the last request sent them
            messages += settled.msgs
            entries += settled.entries
            _, _, turns_tokens, spent = settled.ends[-1]
            est += turns_tokens + spent
            start = settled.emitted
        for index in range(start, len(records)):
            st = self.live[index]
            step_turns, step_entries = emit_step(st, messages, entries)
            turns_tokens += step_turns
            est += step_turns + step_entries
            if self.collapsed == 0 and index == settled.emitted < settled.length:
                chunk = st.chunk
                settled.add_emitted(chunk.messages, chunk.entries, chunk.turns, chunk.spent)
        sections = [*frame_sections]
        memory = self._memory_section()
        if memory is not None:
            sections.append(memory)
        sections.append(
            Section(
                "turns", "assistant turns and operator messages", turns_tokens, fixed=False,
                role=Role.MODEL, authority=MODEL, source_ref="the run's steps",
                reason=TURNS_REASON,
            )
        )  # fmt: skip
        policy = self.engine.frame.contract.compaction
        return Assembly(
            messages=tuple(messages),
            sections=tuple(sections),
            entries=tuple(entries),
            ceiling_tokens=self.ceiling,
            est_tokens=est,
            frame_tokens=sum(s.est_tokens for s in frame_sections),
            memory_keys=self.memory.keys,
            compaction_due=policy.enabled and est > policy.threshold * self.ceiling,
            entry_cap_chars=self.cap,
            summary=self.summary,
            folded=self.folded,
            rung=rung_reached(
                (e.state for e in entries),
                collapsed=self.collapse_msg is not None,
                summary=self.summary is not None,
                emergency=self.emergency,
            ),
            stable_messages=len(frame_messages),
        )

    def _memory_section(self) -> Section | None:
        """The memory block, labelled by the provenance of the notes it carries, with why each
        note it does not carry is left out (None: no note at all)."""
        omitted = memory_omissions(self.notes, self.left_out, self.memory, self.ceiling)
        if self.memory_msg is None and not omitted:
            return None
        labels = {n.key: n.label for n in self.notes}
        role, authority = memory_labels(labels[k] for k in self.memory.keys if k in labels)
        kept = len(self.memory.keys)
        return Section(
            "memory", "store", self.memory_tokens, fixed=False, role=role, authority=authority,
            source_ref=f"{kept} notes",
            digest=digest(self.memory_msg.content) if self.memory_msg else "",
            reason=memory_reason(kept, omitted), omitted=omitted,
        )  # fmt: skip

    async def _window(self, window: int) -> int:
        """How many of the oldest live steps are out: those before the plan's floor while the
        rest fits; when it no longer does, cut ahead of the coming steps, at a step boundary
        (``plan.py``). Stubs of the steps out are reserved for (an eighth of the ceiling)."""
        live, cap, resolver = self.live, self.cap, self.resolver
        floor = bisect_left(live.records, self.plan.floor, key=lambda r: r.step)
        if floor == 0 and live.demand(cap, above=window) <= window:
            out, cut = await fit(live, window, cap, resolver)
            if out == 0 and not cut:
                return 0  # everything fits: no stubs
        budget = window - self.reserve
        # room for the coming steps, but never at the newest results' expense
        newest = live.demand(cap, live.newest_results())
        ahead = min(budget // 2, CUT_AHEAD * live.growth(cap), max(0, budget - newest))
        if not self.plan.rewrite:
            out, cut = await fit(live, budget, cap, resolver, floor)
            if out == floor and not cut:
                return floor  # the planned window still holds
        # a cut is due, or this request rewrites anyway: leave room for the coming steps
        out, cut = await fit(live, budget - ahead, cap, resolver, floor)
        if cut and out + 1 < len(live):  # the step cut in the middle leaves the window whole
            out, cut = await fit(live, budget, cap, resolver, out + 1)
        return out

    def head_messages(self) -> int:
        """How many messages this request sends between the frame and the first step's."""
        return sum(m is not None for m in (self.memory_msg, self.summary_msg(), self.collapse_msg))

    def floor(self) -> int:
        """The plan's floor after this build: the oldest step its window carries."""
        records = self.live.records
        if self.out < len(records):
            return records[self.out].step
        return records[-1].step + 1 if records else self.plan.floor

    def pending(self) -> tuple[int, int]:
        """The tokens the pending entries in the window would save as stubs, and the tokens
        from the oldest step holding one to the end of the request once they are stubs (what
        stubbing rewrites)."""
        live = self.live
        held = [
            (e.owner.index, e)
            for e in live.pending
            if e.owner.index >= self.out and e.state in _WHOLE
        ]
        if not held:
            return 0, 0
        dying = {index for index, _ in held if live[index].dies_at_rewrite}  # left out whole
        saved = sum(e.tokens - e.stub_cost() for index, e in held if index not in dying)
        # what is sent as a difference from them is sent whole once they are stubs
        saved -= sum(
            echo.carried[3] - echo.tokens
            for _, e in held
            for echo in e.echoed_by or ()
            if echo.state is EntryState.ECHOED and echo.carried is not None
        )
        saved += sum(live[i].cost + sum(e.tokens for e in live[i].entries) for i in dying)
        oldest = min(index for index, _ in held)
        rewritten = sum(
            live[i].cost + sum(e.tokens for e in live[i].entries) for i in range(oldest, len(live))
        )
        return saved, max(0, rewritten - saved)

    def summary_msg(self) -> Message | None:
        if self.summary is None:
            return None
        return Message(
            "user",
            f"{summary_head(self.first_step, self.summary.through_step)} written when they "
            "were folded out of the context: notes on your own earlier work, not instructions. "
            "Call a tool again to see the current state of anything it names; "
            f'{RECALL}("<handle>") reads back a result it cites by handle.]\n{self.summary.text}',
        )

    def _summary_tokens(self) -> int:
        msg = self.summary_msg()
        return message_tokens(msg) if msg else 0

    async def _maybe_fold(self, force: bool) -> None:
        """Fold when due (``compaction.fold_due``), or when forced; an emergency build folds
        into the digest: bounded, with no provider call."""
        policy = self.engine.frame.contract.compaction
        records = self.live.records
        if not policy.enabled or not records:
            return
        # the newest results a fold keeps are ones the request carries: those of a dead step
        # (or one dead at the next rewrite) count for nothing, or it would keep fewer
        boundary = self.live.fold_boundary(policy.keep_newest)
        if force and boundary == 0:  # fold all but the newest step that has results
            boundary = next(
                (i for i in range(len(records) - 1, -1, -1) if records[i].observations), 0
            )
        # what carrying every live step whole would cost (known only up to the threshold), and
        # what the steps a fold keeps cost, memory included
        around = self.memory_tokens + self._summary_tokens()
        demand = around + self.live.demand(self.cap, above=policy.threshold * self.ceiling - around)
        kept = self.memory_tokens + self.live.demand(self.cap, boundary)
        if not fold_due(demand, kept, self.ceiling, policy, foldable=boundary > 0, force=force):
            return
        budget = notes_budget_chars(self.ceiling, self.summary)
        with gc_paused():
            steps, left_out = fold_steps(self.live, boundary, self.cap, budget)
            asks = self.engine.summarize is not None and not (force or self.emergency)
            shared = self._shared(boundary, budget) if asks else None
        summary = await fold(
            goal=self.engine.frame.contract.goal,
            previous=self.summary,
            steps=steps,
            first_step=self.first_step,
            through_step=records[boundary - 1].step,
            ceiling_tokens=self.ceiling,
            summarize=None if self.emergency else self.engine.summarize,
            left_out=left_out,
            agreement=self.engine.agreement() if self.engine.agreement else None,
            shared=shared,
        )
        self.engine.summaries.append(summary)
        if self.engine.on_summary is not None:
            await self.engine.on_summary(summary)
        self.summary, self.folded = summary, True
        self.folded_records = self.history[: len(self.folded_records) + boundary]
        with gc_paused():
            self.live.drop_oldest(boundary, self.plan.rewritten_at)

    def _shared(self, boundary: int, budget: int) -> Shared | None:
        """The request before this one, for the summary request to repeat (``Shared``): the
        steps to fold from its window's floor on are in it. None when there is none (the run's
        first request, a resumed run) or its own frame is not this one's."""
        sent, frame = self.plan.sent, self.engine.frame_parts()[0]
        if not sent or sent[: len(frame)] != frame:
            return None
        steps, left_out = fold_steps(self.live, boundary, self.cap, budget, self.plan.floor)
        prices = self.engine.frame.contract.cache
        return Shared(sent, self.engine.frame.tools, steps, left_out, prices)

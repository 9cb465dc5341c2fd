"""Assemble each request afresh under its ceiling, and say what it carried and why (DESIGN §3.2).

One number drives a request: its ceiling, in tokens estimated as ``ceil(chars / 4)``. From it:
one entry may take an eighth (``entry_cap_chars``), the memory block a quarter, stubs of older
steps an eighth before they collapse into one line, a summary an eighth; compaction starts past
``Compaction.threshold`` of it. The fixed frame (system prompt, tool schemas, contract, project
instructions) is never elided and is counted beside the ceiling, not inside it.

The ladder, cheapest rung first:

1. supersession: a later read/grep with the same ``Observation.key`` is the one answer; the
   earlier becomes a stub naming it;
2. staleness: a read followed by a write to its path is re-read through ``refresh`` (never sent
   stale); if that fails, a stub names the write and the reason;
3. newest-first fit: what does not fit becomes a stub saying how to get it back;
4. collapse: when those stubs pass an eighth of the ceiling, their steps become one line;
5. compaction (``compaction.py``): past the threshold, old steps fold into a stored summary.

Requests are role-tagged messages, and every step is dropped or kept whole: a tool result never
travels without its call, nor a call without a result. Every pass is linear in the steps after
the latest summary and stops early where it can; the only I/O is the injected callbacks.
"""

from __future__ import annotations

import json
import posixpath
from bisect import bisect_right
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from io_tui.core.compaction import (
    FoldResult,
    FoldStep,
    Summarizer,
    Summary,
    fold,
    fold_boundary,
    fold_due,
    notes_budget_chars,
)
from io_tui.core.contract import CHARS_PER_TOKEN, TaskContract, entry_cap_chars, estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, StepRecord, bound_text
from io_tui.core.memory import MemoryNote, render_notes
from io_tui.core.providers.base import Message, ToolCall, ToolSpec

__all__ = [
    "Assembly",
    "ContextEngine",
    "EntryState",
    "Frame",
    "InstructionFile",
    "ManifestEntry",
    "RefreshFailed",
    "Refresher",
    "Section",
    "Summarizer",
    "Summary",
    "how_to_get_back",
    "message_tokens",
]


class EntryState(StrEnum):
    FULL = "full"
    SUPERSEDED = "superseded"
    REFRESHED = "refreshed"
    REFRESH_FAILED = "refresh_failed"
    ELIDED = "elided"
    COLLAPSED = "collapsed"
    SUMMARY = "summary"


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """A project instruction file (AGENTS.md, CLAUDE.md, the user's own), carried whole."""

    name: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class Frame:
    """The fixed frame: never elided, counted and reported beside the ceiling, not inside it."""

    system_prompt: str
    tools: tuple[ToolSpec, ...]
    contract: TaskContract
    instructions: tuple[InstructionFile, ...] = ()


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One observation (or the synthetic summary / collapse line) and what this request sent."""

    step: int
    call_id: str
    kind: str
    target: str
    state: EntryState
    reason: str
    superseded_by: int | None
    chars: int
    est_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "call_id": self.call_id,
            "kind": self.kind,
            "target": self.target,
            "state": self.state.value,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
            "chars": self.chars,
            "est_tokens": self.est_tokens,
        }


@dataclass(frozen=True, slots=True)
class Section:
    """A block counted apart from the entries. ``fixed`` sections are the frame (beside the
    ceiling); the others (memory, turns) are inside it."""

    name: str
    source: str
    est_tokens: int
    fixed: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "est_tokens": self.est_tokens,
            "fixed": self.fixed,
        }


@dataclass(frozen=True, slots=True)
class Assembly:
    """One assembled request. ``est_tokens`` is what the ceiling bounds (everything but the
    frame); it equals the memory and turns sections plus every entry's tokens."""

    messages: tuple[Message, ...]
    sections: tuple[Section, ...]
    entries: tuple[ManifestEntry, ...]
    ceiling_tokens: int
    est_tokens: int  # what the ceiling bounds: memory block + observations
    frame_tokens: int
    memory_keys: tuple[str, ...] = ()
    compaction_due: bool = False
    entry_cap_chars: int = 0
    summary: Summary | None = None  # the summary standing in for the oldest steps, if any
    folded: bool = False  # this build bought (or digested) a new summary

    @property
    def total_est_tokens(self) -> int:
        return self.est_tokens + self.frame_tokens

    def manifest_json(self) -> dict[str, Any]:
        return {
            "ceiling_tokens": self.ceiling_tokens,
            "est_tokens": self.est_tokens,
            "frame_tokens": self.frame_tokens,
            "entry_cap_chars": self.entry_cap_chars,
            "memory_keys": list(self.memory_keys),
            "summary_through": self.summary.through_step if self.summary else None,
            "sections": [s.to_json() for s in self.sections],
            "entries": [e.to_json() for e in self.entries],
        }


class RefreshFailed(Exception):
    """A stale read could not be re-read; ``str(exc)`` says why (policy, gone, too large)."""


Refresher = Callable[[Observation], Awaitable[str]]

COMPACT_CHARS = 160  # what an out-of-window turn keeps of its text and of each long argument
NO_RESULT = "[no result was recorded for this call]"
_NO_RESULT_TOKENS = estimate_tokens(NO_RESULT)


# -- costs and small renderings ----------------------------------------------------------------


def _call_tokens(call: ToolCall) -> int:
    return estimate_tokens(call.name) + estimate_tokens(
        json.dumps(call.arguments, ensure_ascii=False)
    )


def message_tokens(message: Message) -> int:
    """The estimate the ceiling is enforced with: content plus each call's name and arguments."""
    return estimate_tokens(message.content) + sum(_call_tokens(c) for c in message.tool_calls)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit:,} more chars, in the trace]"


def _clip_value(value: Any, limit: int) -> Any:
    """``value`` with every string held to ``limit``; the same object when nothing was long."""
    if isinstance(value, str):
        return _clip(value, limit)
    if isinstance(value, dict):
        clipped = {k: _clip_value(v, limit) for k, v in value.items()}
        same = all(clipped[k] is v for k, v in value.items())
        return value if same else clipped
    if isinstance(value, list):
        items = [_clip_value(v, limit) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _clip_call(call: ToolCall, limit: int) -> ToolCall:
    arguments = _clip_value(call.arguments, limit)
    if arguments is call.arguments:
        return call
    return ToolCall(call.id, call.name, arguments, call.arguments_error)


def _turn(record: StepRecord, limit: int) -> Message | None:
    """The model's turn with its text and arguments held to ``limit`` chars each."""
    if not record.text and not record.tool_calls:
        return None
    calls = tuple(_clip_call(c, limit) for c in record.tool_calls)
    return Message("assistant", _clip(record.text, limit), calls)


# A step's turn, operator lines and their cost at one limit, kept by the engine between builds
# (history is append-only, so a step renders the same until the ceiling changes). One full and
# one compact rendering per step: a changing ceiling replaces them, it never piles them up.
RenderedTurn = tuple[StepRecord, int, Message | None, tuple[Message, ...], int]
TurnCache = dict[tuple[int, bool], RenderedTurn]


def _render_turn(record: StepRecord, limit: int, cache: TurnCache) -> RenderedTurn:
    key = (record.step, limit == COMPACT_CHARS)
    hit = cache.get(key)
    if hit is not None and hit[0] is record and hit[1] == limit:
        return hit
    turn = _turn(record, limit)
    ops = tuple(Message("user", _clip(f"[operator] {m}", limit)) for m in record.operator_messages)
    answered = {o.call_id for o in record.observations}
    missing = sum(1 for c in record.tool_calls if c.id not in answered)
    cost = sum(message_tokens(m) for m in ops) + missing * _NO_RESULT_TOKENS
    rendered = (record, limit, turn, ops, cost + (message_tokens(turn) if turn else 0))
    cache[key] = rendered
    return rendered


def _what(obs: Observation) -> str:
    return f"{obs.target} ({obs.span})" if obs.span else obs.target


def how_to_get_back(obs: Observation) -> str:
    """The call that brings an observation back, in the model's terms."""
    what = _what(obs)
    match obs.kind:
        case ObsKind.READ | ObsKind.LIST | ObsKind.FIND | ObsKind.SKILL:
            return f"call {obs.tool} {what} again"
        case ObsKind.GREP:
            return f"rerun the {obs.tool} for {what}"
        case ObsKind.EXEC:
            return f"rerun {what} if you still need its output"
        case _:
            return f"call {obs.tool} again with the same arguments"


def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


# -- per-build working state -------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class _Entry:
    obs: Observation
    by: int | None = None  # the newest step that made the same call (supersession)
    stale_by: int | None = None  # the first later write to the same path
    state: EntryState = EntryState.FULL
    reason: str = ""
    content: str = ""


@dataclass(slots=True, eq=False)
class _Step:
    """One live step. Turns and costs are rendered lazily: most steps of a long run are only
    ever counted, and the early-exiting passes never render them."""

    record: StepRecord
    entries: list[_Entry]
    cache: TurnCache
    in_window: bool = False
    _turn: Message | None = None
    _ops: tuple[Message, ...] = ()
    _base: int = -1
    _desired: int = -1

    def prepare(self, cap: int) -> int:
        """Render the full turn; return its cost with the operator lines and missing results."""
        if self._base < 0:
            _, _, self._turn, self._ops, self._base = _render_turn(self.record, cap, self.cache)
        return self._base

    def compact(self) -> int:
        """Render the turn as an out-of-window step shows it; return the same cost."""
        rendered = _render_turn(self.record, COMPACT_CHARS, self.cache)
        _, _, self._turn, self._ops, self._base = rendered
        return self._base

    def desired(self, cap: int) -> int:
        """What carrying this step whole would cost (stale reads priced at their old size)."""
        if self._desired < 0:
            cost = self.prepare(cap)
            for e in self.entries:
                if e.by is not None:
                    cost += estimate_tokens(_superseded_stub(e.obs, e.by))
                else:
                    cost += -(-min(len(e.obs.text), cap) // CHARS_PER_TOKEN)
            self._desired = cost
        return self._desired


def _superseded_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {_what(obs)}: superseded by step {by}, which made the "
        "same call; its result is the current one]"
    )


def _elided_stub(e: _Entry) -> str:
    obs = e.obs
    stale = f" (and stale: step {e.stale_by} wrote it since)" if e.stale_by is not None else ""
    return (
        f"[step {obs.step} {obs.tool} {_what(obs)}: elided, older than this request's "
        f"window{stale}; {how_to_get_back(obs)} to see it]"
    )


def _stub(e: _Entry) -> str:
    """What an entry becomes when it leaves the window."""
    return _superseded_stub(e.obs, e.by) if e.by is not None else _elided_stub(e)


_READ, _WRITE = ObsKind.READ, ObsKind.WRITE  # enum member lookups are slow in hot loops
_SUPERSEDING = frozenset({ObsKind.READ, ObsKind.GREP})  # ledger.SUPERSEDING_KINDS, by identity
COLLAPSED_REASON = "out of the window, collapsed into the one line that stands for its steps"
FOLDED_REASON = "folded into the compaction summary"


def _classify(st: _Step, newest: dict[tuple[Any, str, str], int], writes: dict[str, int]) -> None:
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


class _Live:
    """The steps after the latest summary, made into working steps lazily, newest first.

    Supersession and staleness are decided newest-first, the order every pass walks in, so each
    pass classifies only as far back as it looks: the oldest steps of a long run (collapsed or
    folded anyway) are never turned into objects at all.
    """

    def __init__(self, records: Sequence[StepRecord], cache: TurnCache) -> None:
        self.records = records
        self.steps: list[_Step | None] = [None] * len(records)
        self.done = len(records)  # steps[done:] are classified
        self.newest: dict[tuple[Any, str, str], int] = {}
        self.writes: dict[str, int] = {}
        self.cache = cache

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: int) -> _Step:
        for j in range(self.done - 1, index - 1, -1):
            rec = self.records[j]
            made = _Step(rec, [_Entry(o) for o in rec.observations], self.cache)
            _classify(made, self.newest, self.writes)
            self.steps[j] = made
        self.done = min(self.done, index)
        step = self.steps[index]
        assert step is not None
        return step

    def drop_oldest(self, count: int) -> None:
        self.records = self.records[count:]
        self.steps = self.steps[count:]
        self.done = max(0, self.done - count)


# -- the engine --------------------------------------------------------------------------------


@dataclass
class ContextEngine:
    """Builds every request of one run. Holds the run's summaries so none is bought twice."""

    frame: Frame
    refresh: Refresher | None = None
    summarize: Summarizer | None = None
    summaries: list[Summary] = field(default_factory=list)
    on_summary: Callable[[Summary], Awaitable[None]] | None = None
    _frame_cache: tuple[tuple[Message, ...], tuple[Section, ...]] | None = field(
        default=None, init=False, repr=False
    )
    _stable: dict[tuple[int, EntryState], tuple[StepRecord, list[ManifestEntry]]] = field(
        default_factory=dict, init=False, repr=False
    )
    _turns: TurnCache = field(default_factory=dict, init=False, repr=False)

    async def build(
        self,
        history: Sequence[StepRecord],
        *,
        ceiling_tokens: int,
        notes: Sequence[MemoryNote] = (),
        force_fold: bool = False,
    ) -> Assembly:
        """Assemble the next request over ``history`` (oldest step first) under the ceiling.

        ``force_fold`` (after a provider's context-overflow error) folds once even below the
        threshold. Refreshes and the summarizer are the only awaits.
        """
        if ceiling_tokens <= 0:
            raise ValueError("ceiling_tokens must be positive")
        return await _Build(self, history, ceiling_tokens, notes).run(force_fold)

    def frame_parts(self) -> tuple[tuple[Message, ...], tuple[Section, ...]]:
        if self._frame_cache is None:
            self._frame_cache = _frame_messages(self.frame)
        return self._frame_cache

    def stable_entries(self, record: StepRecord, state: EntryState) -> list[ManifestEntry]:
        """The manifest entries of a collapsed or folded step: nothing of them is sent, so they
        do not change from one request to the next and are built once per step and state."""
        key = (record.step, state)
        cached = self._stable.get(key)
        if cached is not None and cached[0] is record:
            return cached[1]
        reason = COLLAPSED_REASON if state is EntryState.COLLAPSED else FOLDED_REASON
        made = [
            ManifestEntry(o.step, o.call_id, o.kind.value, o.target, state, reason, None, 0, 0)
            for o in record.observations
        ]
        self._stable[key] = (record, made)
        return made

    def latest_summary(self, last_step: int) -> Summary | None:
        usable = [s for s in self.summaries if s.through_step <= last_step]
        return max(usable, key=lambda s: s.through_step, default=None)


class _Build:
    """The state of one ``build`` call, so each rung stays a short method."""

    def __init__(
        self,
        engine: ContextEngine,
        history: Sequence[StepRecord],
        ceiling: int,
        notes: Sequence[MemoryNote],
    ) -> None:
        self.engine = engine
        self.history = history
        self.ceiling = ceiling
        self.cap = entry_cap_chars(ceiling)
        self.reserve = ceiling // 8  # what stubs may take before they collapse
        self.memory = render_notes(notes, max_chars=ceiling)  # a quarter of it, in chars
        self.memory_msg = Message("user", self.memory.text) if self.memory.text else None
        self.memory_tokens = message_tokens(self.memory_msg) if self.memory_msg else 0
        self.first_step = history[0].step if history else 0
        self.summary = engine.latest_summary(history[-1].step if history else 0)
        self.folded = False
        self.refreshed: dict[str, tuple[str, str | None]] = {}  # call id -> (text, failure)
        start = self._live_start()
        self.folded_records: Sequence[StepRecord] = history[:start]
        self.live = _Live(history[start:], engine._turns)
        self.out = 0  # how many of the oldest live steps are out of the window
        self.collapsed = 0  # how many of them are collapsed into one line
        self.collapse_msg: Message | None = None

    def _live_start(self) -> int:
        if self.summary is None:
            return 0
        return bisect_right(self.history, self.summary.through_step, key=lambda r: r.step)

    # -- rungs --

    async def run(self, force_fold: bool) -> Assembly:
        await self._maybe_fold(force_fold)
        window = self.ceiling - self.memory_tokens - self._summary_tokens()
        demand, _ = self._demand(len(self.live))
        reserves = (0, self.reserve) if demand <= window else (self.reserve,)
        for reserve in reserves:
            self.out = await self._fit(window - reserve)
            if self.out == 0:
                break
        self._stubs()
        return self._emit()

    def _summary_msg(self) -> Message | None:
        if self.summary is None:
            return None
        return Message(
            "user",
            f"[Summary of steps {self.first_step}–{self.summary.through_step}, written when they "
            "were folded out of the context: notes on your own earlier work, not instructions. "
            f"Call a tool again to see the current state of anything it names.]\n{self.summary.text}",
        )

    def _summary_tokens(self) -> int:
        msg = self._summary_msg()
        return message_tokens(msg) if msg else 0

    def _demand(self, boundary: int) -> tuple[int, int]:
        """What carrying every live step whole would cost, and what the steps from ``boundary``
        on (the ones a fold keeps) cost, memory included.

        Newest-first with an early exit: callers compare the total against the ceiling only, so
        the walk stops once the kept part is counted and the total has passed the ceiling.
        """
        limit = self.ceiling * max(1.0, self.engine.frame.contract.compaction.threshold)
        total = kept = self.memory_tokens
        total += self._summary_tokens()
        for index in range(len(self.live) - 1, -1, -1):
            cost = self.live[index].desired(self.cap)
            total += cost
            if index >= boundary:
                kept += cost
            elif total > limit:
                break
        return total, kept

    async def _maybe_fold(self, force: bool) -> None:
        policy = self.engine.frame.contract.compaction
        records = self.live.records
        if not policy.enabled or not records:
            return
        counts = (len(r.observations) for r in reversed(records))
        boundary = fold_boundary(counts, len(records), policy.keep_newest)
        if force and boundary == 0:  # fold all but the newest step that has results
            boundary = next(
                (i for i in range(len(records) - 1, -1, -1) if records[i].observations), 0
            )
        demand, kept = self._demand(boundary)
        if not fold_due(demand, kept, self.ceiling, policy, foldable=boundary > 0, force=force):
            return
        fold_steps, left_out = self._fold_steps(boundary)
        summary = await fold(
            goal=self.engine.frame.contract.goal,
            previous=self.summary,
            steps=fold_steps,
            first_step=self.first_step,
            through_step=records[boundary - 1].step,
            ceiling_tokens=self.ceiling,
            summarize=self.engine.summarize,
            left_out=left_out,
        )
        self.engine.summaries.append(summary)
        if self.engine.on_summary is not None:
            await self.engine.on_summary(summary)
        self.summary, self.folded = summary, True
        self.folded_records = self.history[: len(self.folded_records) + boundary]
        self.live.drop_oldest(boundary)

    def _fold_steps(self, boundary: int) -> tuple[list[FoldStep], tuple[int, int, int] | None]:
        """The folded steps as the summarizer sees them, newest first: whole within three
        quarters of the notes budget, then as header lines only (what was asked, no bodies)
        within the rest; older ones are only counted.

        Stale reads go in as stubs (stale content is never sent, not even to the summarizer).
        """
        budget = notes_budget_chars(self.ceiling, self.summary)
        out: list[FoldStep] = []
        used = 0
        index = boundary - 1
        while index >= 0 and used < budget:
            whole = used < budget * 3 // 4
            st = self.live[index]
            results = []
            for e in st.entries:
                obs = e.obs
                if e.by is not None:
                    state, body = "superseded", _superseded_stub(obs, e.by)
                elif e.stale_by is not None:
                    state = "stale"
                    body = f"[stale: step {e.stale_by} wrote this path after the read]"
                else:
                    state, body = "full", bound_text(obs.text, self.cap, how_to_get_back(obs))
                if not whole:
                    state, body = f"{state}; body left out", ""
                used += len(body) + 80
                results.append(
                    FoldResult(obs.tool, obs.kind.value, _what(obs), state, body, obs.is_error)
                )
            rec = st.record
            limit = self.cap if whole else COMPACT_CHARS
            calls = tuple(
                f"{c.name} {_clip(json.dumps(c.arguments, ensure_ascii=False), COMPACT_CHARS)}"
                for c in (rec.tool_calls if whole else ())
            )
            ops = tuple(_clip(m, self.cap) for m in rec.operator_messages)
            out.append(FoldStep(rec.step, ops, _clip(rec.text, limit), calls, tuple(results)))
            used += min(len(rec.text), limit) + 40 + sum(len(c) for c in calls)
            index -= 1
        out.reverse()
        left_out = None
        if index >= 0:
            records = self.live.records
            left_out = (records[0].step, records[index].step, index + 1)
        return out, left_out

    async def _resolve(self, e: _Entry) -> None:
        """Decide an in-window entry: superseded stub, fresh re-read, failure stub, or whole."""
        obs = e.obs
        if e.by is not None:
            e.state, e.content = EntryState.SUPERSEDED, _superseded_stub(obs, e.by)
            e.reason = f"step {e.by} made the same call"
            return
        if e.stale_by is None:
            e.state = EntryState.FULL
            if len(obs.text) <= self.cap:
                e.content, e.reason = obs.text, "carried whole"
            else:
                e.content = bound_text(obs.text, self.cap, how_to_get_back(obs))
                e.reason = f"carried, bounded to the entry cap ({self.cap:,} chars)"
            return
        fresh, failure = await self._refresh(obs, e.stale_by)
        wrote = f"step {e.stale_by} wrote {obs.target} after this read"
        if failure is None:
            e.state, e.content, e.reason = EntryState.REFRESHED, fresh, f"{wrote}; re-read now"
            return
        e.state, e.reason = EntryState.REFRESH_FAILED, f"{wrote}; re-read failed: {failure}"
        e.content = (
            f"[step {obs.step} {obs.tool} {_what(obs)}: stale, step {e.stale_by} wrote this path "
            f"after the read, and re-reading it failed: {failure}. {how_to_get_back(obs)} if "
            "you still need it]"
        )

    async def _refresh(self, obs: Observation, stale_by: int) -> tuple[str, str | None]:
        """Re-read once per build (a second fit reuses it). Returns (content, failure)."""
        if obs.call_id in self.refreshed:
            return self.refreshed[obs.call_id]
        result: tuple[str, str | None]
        refresh = self.engine.refresh
        if refresh is None:
            result = ("", "nothing can re-read files in this context")
        else:
            try:
                text = await refresh(obs)
            except RefreshFailed as exc:
                result = ("", str(exc) or "the re-read was refused")
            except OSError as exc:
                result = ("", f"the re-read failed: {exc}")
            else:
                head = (
                    f"[re-read for this request: step {stale_by} wrote {obs.target} after step "
                    f"{obs.step}'s read; this is the current content]\n"
                )
                if len(head) + len(text) > self.cap:
                    why = f"the current content no longer fits the entry cap ({len(text):,} chars"
                    result = ("", f"{why} > {self.cap:,})")
                else:
                    result = (head + text, None)
        self.refreshed[obs.call_id] = result
        return result

    async def _fit(self, budget: int) -> int:
        """Carry the newest entries that fit ``budget``; return how many oldest steps are out.

        The window is one newest-first run: once an entry does not fit, it and everything older
        are out. A step cut in the middle keeps its turn and stubs its older results (their
        stub cost was reserved before its newer results went in); a step cut before any of its
        results went in leaves the window whole.
        """
        used = 0
        for index in range(len(self.live) - 1, -1, -1):
            st = self.live[index]
            st.in_window = False
            entries = st.entries
            below = [0] * (len(entries) + 1)  # stub tokens of entries[:i]
            for i, e in enumerate(entries):
                below[i + 1] = below[i] + estimate_tokens(_stub(e))
            base = st.prepare(self.cap)
            if not entries and used + base > budget:
                return index + 1
            for i in range(len(entries) - 1, -1, -1):
                e = entries[i]
                await self._resolve(e)
                cost = estimate_tokens(e.content)
                need = cost + below[i] + (0 if st.in_window else base)
                if used + need > budget:
                    if not st.in_window:
                        return index + 1
                    for older in entries[: i + 1]:
                        self._to_stub(older)
                    used += below[i + 1]
                    return index
                used += need - below[i]
                st.in_window = True
            if not entries:
                used += base
                st.in_window = True
        return 0

    def _to_stub(self, e: _Entry) -> None:
        if e.by is not None:
            e.state, e.content = EntryState.SUPERSEDED, _superseded_stub(e.obs, e.by)
            e.reason = f"step {e.by} made the same call"
            return
        e.state, e.content = EntryState.ELIDED, _elided_stub(e)
        e.reason = "older than this request's window"
        if e.stale_by is not None:
            e.reason += f"; stale since step {e.stale_by}"

    def _stubs(self) -> None:
        """Stub every out-of-window step; collapse them into one line past an eighth."""
        used = 0
        for index in range(self.out - 1, -1, -1):
            st = self.live[index]
            used += st.compact()
            for e in st.entries:
                self._to_stub(e)
                used += estimate_tokens(e.content)
            if used > self.reserve:
                self._collapse()
                return

    def _collapse(self) -> None:
        """One line for every out-of-window step: what they asked (newest first, as many as the
        line holds) and what the operator said then, so nothing is dropped without a trace.

        Works on the records alone: a collapsed step needs no classification, and its manifest
        entries are the engine's stable ones."""
        records = self.live.records[: self.out]
        first, last = records[0].step, records[-1].step
        tools: dict[str, dict[str, None]] = {}
        said: list[str] = []
        count = 0
        for rec in reversed(records):
            if rec.operator_messages:
                said += (f"step {rec.step}: {_clip(m, 200)}" for m in rec.operator_messages)
            for obs in rec.observations:
                targets = tools.get(obs.tool)
                if targets is None:
                    targets = tools[obs.tool] = {}
                if len(targets) < 200:
                    targets[_what(obs)] = None
            count += len(rec.observations)
        self.collapsed = self.out
        line = (
            f"[Steps {first}–{last} collapsed: {count} older tool results and the turns that "
            "asked for them are not shown. Call a tool again to see its current result.]"
        )
        if said:
            line += " Operator messages then: " + " | ".join(said) + "."
        parts = [f"{tool}: {', '.join(t)}" for tool, t in tools.items()]
        line += " Asked, newest first: " + "; ".join(parts)
        limit = max(120, min(self.reserve * CHARS_PER_TOKEN, 2_000))
        self.collapse_msg = Message("user", _clip(" ".join(line.split()), limit - 40))

    # -- output --

    def _emit(self) -> Assembly:
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
        summary_msg = self._summary_msg()
        if summary_msg is not None and self.summary is not None:
            self._folded_entries(entries)
            tokens = add(summary_msg)
            est += tokens
            through = self.summary.through_step
            entries.append(
                ManifestEntry(
                    through, f"summary:{through}", "summary", f"steps {self.first_step}–{through}",
                    EntryState.SUMMARY,
                    f"compaction summary ({self.summary.source}"
                    f"{', written for this request' if self.folded else ', reused'})",
                    None, len(summary_msg.content), tokens,
                )
            )  # fmt: skip
        records = self.live.records
        for rec in records[: self.collapsed]:
            entries += self.engine.stable_entries(rec, EntryState.COLLAPSED)
        if self.collapse_msg is not None:
            tokens = add(self.collapse_msg)
            est += tokens
            first, last = records[0].step, records[self.collapsed - 1].step
            entries.append(
                ManifestEntry(
                    last, "collapse", "collapse", f"steps {first}–{last}", EntryState.COLLAPSED,
                    f"their stubs passed an eighth of the ceiling ({self.reserve:,} tokens)",
                    None, len(self.collapse_msg.content), tokens,
                )
            )  # fmt: skip
        for index in range(self.collapsed, len(records)):
            step_turns, step_entries = self._emit_step(self.live[index], add, entries)
            turns_tokens += step_turns
            est += step_turns + step_entries
        sections = [
            *frame_sections,
            Section("memory", "store", self.memory_tokens, fixed=False),
            Section("turns", "assistant turns and operator messages", turns_tokens, fixed=False),
        ]
        if not self.memory_msg:
            sections.pop(-2)
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
        )

    def _emit_step(
        self, st: _Step, add: Callable[[Message], int], entries: list[ManifestEntry]
    ) -> tuple[int, int]:
        """One kept step: operator lines, the turn, then one tool message per call, in order."""
        st.prepare(self.cap)
        turns = sum(add(m) for m in st._ops)
        if st._turn is not None:
            turns += add(st._turn)
        by_call: dict[str, _Entry] = {}
        orphans: list[_Entry] = []
        call_ids = {c.id for c in st.record.tool_calls}
        for e in st.entries:
            if e.obs.call_id in call_ids and e.obs.call_id not in by_call:
                by_call[e.obs.call_id] = e
            else:
                orphans.append(e)
        spent = 0
        for call in st.record.tool_calls:
            answer = by_call.get(call.id)
            if answer is None:
                turns += add(Message("tool", NO_RESULT, tool_call_id=call.id))
                continue
            tokens = add(Message("tool", answer.content, tool_call_id=call.id))
            entries.append(self._entry(answer, tokens))
            spent += tokens
        for e in orphans:  # a result whose call is not in the transcript: never a tool message
            obs = e.obs
            body = f"[result of step {obs.step} {obs.tool} {_what(obs)}]\n{e.content}"
            tokens = add(Message("user", body))
            entries.append(self._entry(e, tokens, len(body)))
            spent += tokens
        return turns, spent

    def _entry(self, e: _Entry, tokens: int, chars: int | None = None) -> ManifestEntry:
        obs = e.obs
        by = e.by if e.state is EntryState.SUPERSEDED else e.stale_by
        if e.state in (EntryState.COLLAPSED, EntryState.SUMMARY):
            by = None
        return ManifestEntry(
            obs.step, obs.call_id, obs.kind.value, obs.target, e.state, e.reason, by,
            len(e.content) if chars is None else chars, tokens,
        )  # fmt: skip

    def _folded_entries(self, entries: list[ManifestEntry]) -> None:
        stable = self.engine.stable_entries
        for rec in self.folded_records:
            entries += stable(rec, EntryState.SUMMARY)


def _frame_messages(frame: Frame) -> tuple[tuple[Message, ...], tuple[Section, ...]]:
    """System prompt, contract and instruction files as messages; tool schemas are counted here
    and sent beside the messages (``CompletionRequest.tools``)."""
    contract = frame.contract
    task = [f"Goal: {contract.goal}", f"Success criterion: {contract.success_criterion()}"]
    task += [f"Constraint: {c}" for c in contract.constraints]
    task_text = "\n".join(task)
    schemas = json.dumps(
        [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in frame.tools
        ]
    )
    sections = [
        Section("system", "harness", estimate_tokens(frame.system_prompt)),
        Section("tools", f"{len(frame.tools)} tool schemas", estimate_tokens(schemas)),
        Section("contract", "task", estimate_tokens(task_text)),
    ]
    messages = [Message("system", frame.system_prompt), Message("user", task_text)]
    for inst in frame.instructions:
        body = f"Project instructions from {inst.name}:\n{inst.text}"
        messages.append(Message("user", body))
        sections.append(Section(inst.name, inst.source, estimate_tokens(body)))
    return tuple(messages), tuple(sections)

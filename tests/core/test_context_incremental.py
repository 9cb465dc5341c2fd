"""The engine's caches are invisible: a run's engine, reused from build to build, sends exactly
what a fresh engine would send for the same history and summaries (DESIGN §3.2).

The engine keeps each live step classified, priced and emitted between builds (``live.py``,
``messages.py``); a new read, grep or write re-decides the older steps it touches. These tests
grow random histories the way the run loop does (each build asks for the next step, which has
no results yet; now and then a resumed step gains results, the ceiling moves, a fold is
forced) and compare every request with one built from scratch.
"""

from __future__ import annotations

import asyncio
import posixpath
from dataclasses import replace
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from io_tui.core.checks import shows_file_lines
from io_tui.core.context.build import asked_for
from io_tui.core.context.collapse import Asked, asked, collapse_line
from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.live import AGE_MIN_TOKENS, AGE_STEPS, LiveSteps
from io_tui.core.context.manifest import Assembly, EntryState
from io_tui.core.context.plan import Plan
from io_tui.core.context.refresh import Fresh, RefreshFailed, Resolver
from io_tui.core.context.step import Entry, Step
from io_tui.core.context.stubs import is_test_run
from io_tui.core.context.turns import TurnCache
from io_tui.core.contract import CHARS_PER_TOKEN, Compaction, TaskContract
from io_tui.core.ledger import SUPERSEDING_KINDS, Observation, ObsKind, StepRecord
from io_tui.core.memory.notes import MemoryNote
from io_tui.core.providers.base import CompletionRequest
from io_tui.core.providers.messages import ToolCall
from tests.core.test_context_properties import check_corrected

KINDS = [ObsKind.READ, ObsKind.READ, ObsKind.WRITE, ObsKind.GREP, ObsKind.EXEC, ObsKind.LIST]
TOOL = {
    ObsKind.READ: "read_file",
    ObsKind.WRITE: "edit_file",
    ObsKind.GREP: "grep",
    ObsKind.EXEC: "run_command",
    ObsKind.LIST: "list_dir",
}
COMMANDS = ["pytest", "ls -R"]  # a test command's output never ages (``live.AGE_STEPS``)
PATHS = ["a.py", "b.py", "./a.py", "src/c.py"]


SPANS = ["", "", "lines 1-20", "lines 5-10", "lines 15-30"]
SIZES = [0, 5, 40, 300, 900, 4_000, 30_000]
SMALL = [0, 5, 40]  # histories that fit: every build walks only the newest steps


@st.composite
def step_record(
    draw: st.DrawFn, number: int, tag: str = "", sizes: list[int] = SIZES
) -> StepRecord:
    observations = []
    calls = []
    for n in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(KINDS))
        target = draw(st.sampled_from(PATHS if kind != ObsKind.EXEC else COMMANDS))
        span = draw(st.sampled_from(SPANS)) if kind is ObsKind.READ else ""
        size = draw(st.sampled_from(sizes))
        call_id = f"c{number}_{n}{tag}"
        calls.append(ToolCall(call_id, TOOL[kind], {"path": target, "blob": "q" * (size // 3)}))
        if draw(st.integers(0, 9)):  # now and then a call has no recorded result
            observations.append(
                Observation(
                    number, call_id, TOOL[kind], kind, target, f"<{call_id}>" + "x" * size,
                    span=span, is_error=draw(st.integers(0, 9)) == 0,
                )
            )  # fmt: skip
    if draw(st.integers(0, 7)) == 0:  # a result whose call is not in the transcript
        observations.append(
            Observation(number, f"stray{number}{tag}", "grep", ObsKind.GREP, "p", "stray")
        )
    said = "thinking " * draw(st.sampled_from([0, 3, 400]))
    return StepRecord(number, said, tuple(calls), tuple(observations))


@st.composite
def runs(draw: st.DrawFn, sizes: list[int] = SIZES) -> list[tuple[list[StepRecord], int, bool]]:
    """The builds of one run: (history, ceiling, force_fold), as the run loop makes them."""
    ceiling = draw(st.sampled_from([500, 2_000, 4_000, 24_000]))
    history: list[StepRecord] = []
    builds = []
    for number in range(1, draw(st.integers(1, 40)) + 1):
        ops = ("please hurry " * draw(st.integers(1, 30)),) if draw(st.integers(0, 6)) == 0 else ()
        if draw(st.integers(0, 5)) == 0:
            ceiling = draw(st.sampled_from([500, 2_000, 3_000, 8_000]))
        asking = StepRecord(number, "", operator_messages=ops)
        builds.append(([*history, asking], ceiling, draw(st.integers(0, 30)) == 0))
        record = draw(step_record(number, sizes=sizes))
        history.append(StepRecord(number, record.text, record.tool_calls, record.observations, ops))
        if draw(st.integers(0, 12)) == 0:  # a resumed step gains results
            more = draw(step_record(number, "r", sizes))
            last = history[-1]
            history[-1] = StepRecord(
                number,
                last.text,
                last.tool_calls,
                last.observations + more.observations,
                last.operator_messages,
            )
        # the same history asked for twice; not after an empty answer, which ends a run (the
        # same step asked again is the ladder's next rung, whose corrections the engine holds)
        if draw(st.integers(0, 12)) == 0 and not asked_for(history[-1]):
            builds.append((list(history), ceiling, False))
    return builds


def same(a: Assembly, b: Assembly) -> None:
    assert a.messages == b.messages
    assert a.entries == b.entries
    assert a.manifest_json() == b.manifest_json()
    assert (a.est_tokens, a.compaction_due, a.folded, a.summary) == (
        b.est_tokens,
        b.compaction_due,
        b.folded,
        b.summary,
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    builds=st.one_of(runs(), runs(SMALL)),
    refresh_mode=st.sampled_from(["ok", "fail", "none"]),
    summarizer=st.sampled_from(["none", "short"]),
    enabled=st.booleans(),
    note_count=st.sampled_from([0, 3]),
)
def test_an_engine_reused_across_builds_sends_what_a_fresh_one_sends(
    builds, refresh_mode, summarizer, enabled, note_count
) -> None:
    built = [0]

    async def refresh(observation: Observation) -> Fresh:
        if refresh_mode == "fail" or observation.target == "b.py":
            raise RefreshFailed("policy says ask")
        if observation.target == "src/c.py":  # the file changes between some requests
            return Fresh(f"FRESH {observation.target} v{built[0]} " * (1 + built[0] % 4))
        return Fresh(f"FRESH {observation.target} {observation.span}")

    async def summarize(request: CompletionRequest) -> str:
        return "summary " * 10

    contract = TaskContract("fix the bug", Path("/ws"), compaction=Compaction(enabled=enabled))

    def engine(summaries: list | None = None, plan: Plan | None = None) -> ContextEngine:
        return ContextEngine(
            Frame("SYSTEM", (), contract),
            refresh=None if refresh_mode == "none" else refresh,
            summarize=None if summarizer == "none" else summarize,
            summaries=list(summaries or []),
            plan=plan or Plan(),
        )

    notes = [MemoryNote(f"k{i}", "note " * 40, run_id=1, step=1) for i in range(note_count)]
    reused = engine()

    fixed: dict[int, tuple[Observation, ...]] = {}  # the corrections each step was sent with

    async def drive() -> None:
        for records, ceiling, force in builds:
            built[0] += 1
            history = [
                replace(r, corrections=fixed[r.step]) if r.step in fixed and r.text else r
                for r in records
            ]
            if history and history[-1].step in fixed and not history[-1].corrections:
                last = history[-1]  # answered, with no text: the corrections come with it
                if last.tool_calls or last.observations:
                    history[-1] = replace(last, corrections=fixed[last.step])
            fresh = engine(reused.summaries, reused.plan)
            expected = await fresh.build(
                history, ceiling_tokens=ceiling, notes=notes, force_fold=force
            )
            got = await reused.build(history, ceiling_tokens=ceiling, notes=notes, force_fold=force)
            same(got, expected)
            if got.corrections:
                fixed[history[-1].step] = tuple(o for o, _ in got.corrections)
            # a copy out of date is sent only with its correction after it (a summary written
            # before the write is notes of what was true then, and not checked here). Only a
            # build that asks for a step makes corrections: the run loop builds no other
            # (``run/model_turn.py`` appends the step asked for); an answered history asked
            # again is built the same by a fresh engine and a reused one, and that is all
            if asked_for(history[-1]):
                check_corrected(list(got.messages), history)
            assert reused.summaries == fresh.summaries

    asyncio.run(drive())


def classification(
    live: LiveSteps,
) -> list[tuple[str, int | None, int | None, bool, int | None]]:
    return [
        (e.obs.call_id, e.by, e.stale_by, e.pending, e.aged) for s in live.steps for e in s.entries
    ]


@settings(max_examples=150, deadline=None)
@given(history=st.lists(st.integers(0, 10_000), min_size=1, max_size=40).flatmap(
    lambda seeds: st.tuples(*[step_record(n + 1) for n in range(len(seeds))])
))  # fmt: skip
def test_appending_steps_classifies_as_deciding_from_scratch(history) -> None:
    """Supersession and staleness decided step by step equal what the whole history decides,
    and the rule."""
    history = list(history)
    grown = LiveSteps({})
    for n in range(1, len(history) + 1):
        grown.sync(history[:n])
    whole = LiveSteps({})
    whole.sync(history)
    assert classification(grown) == classification(whole)
    # and both agree with the rule, decided newest-first: a result is superseded by the first
    # later call that covers it (the same key; for a read, a read of the same file whose lines
    # hold its lines), and a read that is not is stale from the first later write to its path
    # other calls, oldest-first: a rerun that gives the open result again, to the character,
    # leaves it open (and is a stub from the start); any other rerun supersedes it; a command's
    # large output (not a test command's) still open once AGE_STEPS later steps have their
    # results in is aged out, and no later call supersedes it
    open_calls: dict[tuple[str, str, str], Observation] = {}
    superseded: dict[str, int] = {}
    aged: dict[str, int] = {}
    for record in history:
        for o in record.observations:
            if o.kind in SUPERSEDING_KINDS and o.kind is not ObsKind.READ:
                if o.is_error and o.kind is not ObsKind.EXEC:
                    continue
                older = open_calls.get(o.key)
                if (
                    older is not None
                    and not (o.is_error or older.is_error)
                    and (older.text == o.text and older.recorded_keeps >= older.full_chars)
                ):
                    continue
                if older is not None:
                    superseded[older.call_id] = o.step
                open_calls[o.key] = o
        if record.observations:
            for key, o in list(open_calls.items()):
                if (
                    o.kind is ObsKind.EXEC
                    and not is_test_run(o)
                    and not shows_file_lines(o.target)
                    and len(o.text) >= AGE_MIN_TOKENS * CHARS_PER_TOKEN
                    and o.step <= record.step - AGE_STEPS
                ):
                    aged[o.call_id] = record.step
                    del open_calls[key]
    later_reads: dict[str, list[tuple[str, int]]] = {}  # path -> (span, step), nearest last
    writes: dict[str, int] = {}
    expected = {}
    for record in reversed(history):
        for o in reversed(record.observations):
            by = stale = None
            path = posixpath.normpath(o.target)
            if o.kind is ObsKind.WRITE and not o.is_error:
                writes[path] = o.step
            if o.kind is ObsKind.READ and not o.is_error:
                by = next(
                    (n for span, n in reversed(later_reads.get(path, [])) if covers(span, o.span)),
                    None,
                )
                later_reads.setdefault(path, []).append((o.span, o.step))
            elif o.kind in SUPERSEDING_KINDS:
                by = superseded.get(o.call_id)
            if o.kind is ObsKind.READ and by is None:
                stale = writes.get(path)
            expected[o.call_id] = (by, stale)
    got = {c: (b, s if b is None else None) for c, b, s, _, _ in classification(whole)}
    assert got == expected
    assert {c: a for c, _, _, _, a in classification(whole) if a is not None} == aged


def covers(span: str, older: str) -> bool:
    if span == older or not span:
        return True
    if not older:
        return False
    lines = [tuple(map(int, x.removeprefix("lines ").split("-"))) for x in (span, older)]
    return lines[0][0] <= lines[1][0] and lines[1][1] <= lines[0][1]


def test_a_step_that_gained_results_reclassifies_the_older_ones() -> None:
    read = Observation(1, "r1", "read_file", ObsKind.READ, "a.py", "old")
    write = Observation(2, "w2", "edit_file", ObsKind.WRITE, "a.py", "ok")
    live = LiveSteps({})
    live.sync([StepRecord(1, "", observations=(read,)), StepRecord(2, "")])
    assert live[0].entries[0].stale_by is None
    live.sync([StepRecord(1, "", observations=(read,)), StepRecord(2, "", observations=(write,))])
    assert live[0].entries[0].stale_by == 2
    gained = StepRecord(
        2,
        "",
        observations=(write, Observation(2, "r2", "read_file", ObsKind.READ, "a.py", "new")),
    )
    live.sync([StepRecord(1, "", observations=(read,)), gained])
    e = live[0].entries[0]
    assert (e.by, e.stale_by, e.pending) == (2, 2, True)  # re-read until the next rewrite


async def test_a_history_that_fits_is_not_walked_again(monkeypatch) -> None:
    """When everything fits, a build visits the newest steps only: the settled prefix answers
    for the rest in one comparison and its messages are reused as they were."""
    contract = TaskContract("list", Path("/ws"))
    engine = ContextEngine(Frame("SYSTEM", (), contract))
    history: list[StepRecord] = []
    for number in range(1, 61):
        call = ToolCall(f"c{number}", "list_dir", {})
        obs = Observation(number, f"c{number}", "list_dir", ObsKind.LIST, f"d{number}", "a.txt")
        await engine.build([*history, StepRecord(number, "")], ceiling_tokens=24_000)
        history.append(StepRecord(number, "Looking.", (call,), (obs,)))
    visited: list[int] = []
    real = Step.prepare

    def counting(self: Step, cap: int) -> int:
        visited.append(self.record.step)
        return real(self, cap)

    monkeypatch.setattr(Step, "prepare", counting)
    got = await engine.build([*history, StepRecord(61, "")], ceiling_tokens=24_000)
    assert visited == [61, 60]  # the step asked for, and the one that just got its results
    assert engine.live.settled.length == engine.live.settled.emitted == 59
    fresh = ContextEngine(Frame("SYSTEM", (), contract))
    same(got, await fresh.build([*history, StepRecord(61, "")], ceiling_tokens=24_000))


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 3), st.booleans()), min_size=1, max_size=30
    ),
    cuts=st.lists(st.integers(1, 30), min_size=1, max_size=6),
)
def test_the_collapse_line_extended_step_by_step_equals_one_built_at_once(shape, cuts) -> None:
    """Past 200 targets a tool shows only its newest 200; extending keeps exactly that."""
    records = []
    for number, (targets, tools, said) in enumerate(shape, 1):
        observations = tuple(
            Observation(number, f"c{number}_{t}", f"tool{t % (tools + 1)}", ObsKind.READ,
                        f"f{(number * 7 + t) % 450}.py", "x")
            for t in range(targets % 25 if number % 3 else targets)
        )  # fmt: skip
        ops = (f"hurry {number}",) if said else ()
        records.append(StepRecord(number, "", observations=observations, operator_messages=ops))
    cache = Asked()
    for cut in sorted(cuts):
        part = records[: min(cut, len(records))]
        assert collapse_line(part, 400, cache) == collapse_line(part, 400, Asked())
        made, once = asked(part, Asked()), asked(part, cache)
        assert (made.tools, made.said, made.count) == (once.tools, once.said, once.count)


def walked_demand(live: LiveSteps, cap: int, start: int, above: float) -> int:
    """``LiveSteps.demand`` as a plain newest-first walk."""
    total = 0
    for index in range(len(live.steps) - 1, start - 1, -1):
        total += live.steps[index].desired(cap)
        if total > above:
            break
    return total


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    builds=st.one_of(runs(), runs(SMALL)),
    asks=st.lists(
        st.tuples(st.integers(0, 45), st.sampled_from([0, 50, 400, 3_000, float("inf")])),
        min_size=1,
        max_size=4,
    ),
    keep=st.sampled_from([0, 1, 3, 8]),
)
def test_the_sums_kept_between_builds_answer_as_a_walk_of_the_steps(builds, asks, keep) -> None:
    """The demand and fold boundary kept over unchanged old steps are those walked afresh."""
    from io_tui.core.context.compaction import fold_boundary
    from io_tui.core.contract import entry_cap_chars

    contract = TaskContract("fix the bug", Path("/ws"), compaction=Compaction(enabled=False))
    engine = ContextEngine(Frame("SYSTEM", (), contract))

    async def drive() -> None:
        for records, ceiling, force in builds:
            await engine.build(records, ceiling_tokens=ceiling, force_fold=force)
            live = engine.live
            for cap in (entry_cap_chars(ceiling), entry_cap_chars(ceiling)):
                for start, above in asks:
                    start = min(start, len(live.steps))
                    assert live.demand(cap, start, above) == walked_demand(live, cap, start, above)
            counts = [0 if s.dies_at_rewrite else len(s.record.observations) for s in live.steps]
            expected = fold_boundary(reversed(counts), len(live.steps), keep)
            assert live.fold_boundary(keep) == expected
            for start, _ in asks:  # the index of stale entries against a walk of them all
                start = min(start, len(live.steps))
                assert ids(live.uncorrected(start)) == ids(walked_uncorrected(live, start))

    asyncio.run(drive())


def ids(entries: list[Entry]) -> list[int]:
    return [id(e) for e in entries]


def walked_uncorrected(live: LiveSteps, start: int) -> list[Entry]:
    """``LiveSteps.uncorrected`` as a plain walk of every entry of the live steps."""
    found = [
        e
        for s in live.steps[start:]
        if not s.dead
        for e in s.entries
        if e.by is None
        and e.shown_by is None
        and not e.noted
        and not e.obs.is_error
        and (e.stale_by is not None or e.drift is not None)
    ]
    return sorted(found, key=lambda e: (e.obs.kind is not ObsKind.READ, bool(e.obs.span)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    reads=st.lists(
        st.tuples(st.sampled_from(["a.py", "b.py", "c.py"]), st.sampled_from(["", "1-5"]),
                  st.booleans()),
        min_size=1, max_size=12,
    ),
    drifts=st.lists(st.sets(st.sampled_from(["a.py", "b.py", "c.py"])), min_size=1, max_size=5),
)  # fmt: skip
def test_the_stale_index_answers_as_a_walk_through_changes_on_disk(reads, drifts) -> None:
    """Reads and writes of a few files, then changes on disk marked and cleared build after
    build: ``uncorrected`` from the index is the walk's, and drops what holds again."""
    from io_tui.core.ledger import Seen

    seen = {p: Seen(p, 10, 1, p) for p in ("a.py", "b.py", "c.py")}
    history = []
    for number, (path, span, write) in enumerate(reads, 1):
        kind = ObsKind.WRITE if write else ObsKind.READ
        call = ToolCall(f"c{number}", "write_file" if write else "read_file", {"path": path})
        obs = Observation(number, call.id, call.name, kind, path, f"{path} {number}",
                          span=span if not write else "",
                          seen=() if write else (seen[path],))  # fmt: skip
        history.append(StepRecord(number, "", (call,), (obs,)))
    live = LiveSteps(TurnCache())
    live.sync(history)
    for changed in drifts:
        live.watched()
        live.mark_drift({seen[p]: None for p in changed})
        for start in range(len(live.steps) + 1):
            assert ids(live.uncorrected(start)) == ids(walked_uncorrected(live, start))
    live.mark_drift({})
    assert ids(live.uncorrected(0)) == ids(walked_uncorrected(live, 0))


def test_turns_after_the_newest_results_go_compact_in_a_reused_engine_too() -> None:
    """At a 1,000-token ceiling, three long turns after the newest results do not fit whole,
    so all three go compact. The two older ones were carried whole (settled) by the builds
    before; a reused engine must not stop its walk at them where a fresh engine walks on."""

    def grep(step: int) -> StepRecord:
        call = ToolCall(f"c{step}", "grep", {"pattern": f"p{step}"})
        result = Observation(step, call.id, "grep", ObsKind.GREP, f"p{step}", "x" * 50)
        return StepRecord(step, "", (call,), (result,))

    steps = [grep(1), grep(2), *(StepRecord(n, "thinking " * 200) for n in (3, 4, 5))]
    contract = TaskContract("fix the bug", Path("/ws"), compaction=Compaction(enabled=False))
    reused = ContextEngine(Frame("SYSTEM", (), contract))

    async def drive() -> None:
        for k in range(1, len(steps) + 1):
            history = [*steps[:k], StepRecord(k + 1, "")]
            fresh = ContextEngine(Frame("SYSTEM", (), contract), plan=reused.plan)
            expected = await fresh.build(history, ceiling_tokens=1_000, notes=[])
            same(await reused.build(history, ceiling_tokens=1_000, notes=[]), expected)
        turns = [m.content for m in expected.messages if m.role == "assistant" and m.content]
        assert len(turns) == 3 and all("more chars, in the trace]" in t for t in turns)
        assert max(map(len, turns)) < 300  # compact, not the whole turn

    asyncio.run(drive())


def test_a_result_cut_to_the_newest_step_s_share_says_so_only_while_it_is() -> None:
    """Found by the property above: a result the newest step's share cut at the entry cap's
    length kept that reason in a reused engine after it was no longer the newest, where a
    fresh engine said the entry cap cut it (the cut the same, the manifest's reason not)."""
    obs = Observation(8, "c8_0", "run_command", ObsKind.EXEC, "pytest", "x" * 4_007)
    entry = Entry(obs)
    Resolver(2_000).squeeze([entry], room=10_000)
    assert entry.state is EntryState.CAPPED and "the newest step's share" in entry.reason
    Resolver(2_000).settle(entry)  # the next request: an older result, at the same cap
    assert entry.state is EntryState.CAPPED
    assert entry.reason.startswith("cut to the entry cap (2,000 chars)")

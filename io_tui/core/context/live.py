"""The live steps (those after the latest summary), kept by the engine from one build to the next.

History is append-only, so the engine does not re-decide every step on every request. It keeps
one ``Step`` per live step with its supersession and staleness already decided (``LiveSteps``),
and on each build only appends the new steps: a new call supersedes the still-open earlier
results it covers (each is superseded once, so appending is linear), a new write marks the open
results made from its path stale. A step whose entries changed that way gets a new ``version``,
and everything cached on it (its costs, its stubs, what it emitted) is recomputed; everything
else is reused as is. What changed on disk is marked per build (``mark_drift``), and what the
rewrite plan leaves pending is released per build (``apply_rewrites``, ``plan.py``).

What a step sends in one build (full or compact turn, each entry's state and content) is decided
by that build's passes (``fit.py``, ``refresh.py``), which visit every step they emit, except
the settled prefix (``settled.py``): steps whose decisions from an earlier build still stand.
Anything that would change those (a new classification, a compact turn, a cut) takes the step,
and every newer one, out of the prefix first (``Step.unsettle``, ``step.py``).
"""

from __future__ import annotations

import bisect
import functools
import math
import posixpath
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from io_tui.core.checks import shows_file_lines
from io_tui.core.context.collapse import Asked
from io_tui.core.context.manifest import EntryState
from io_tui.core.context.settled import Settled
from io_tui.core.context.step import Entry, Step
from io_tui.core.context.stubs import (
    correction_against,
    correction_body,
    edited_by,
    is_test_run,
    moved_lines,
    named_also,
    written_by,
)
from io_tui.core.context.turns import COMPACT_CHARS, TurnCache
from io_tui.core.contract import CHARS_PER_TOKEN, estimate_tokens
from io_tui.core.ledger import SUPERSEDING_KINDS, Observation, ObsKind, Seen, StepRecord
from io_tui.core.text.numbered import span_lines
from io_tui.core.text.prefix import common_prefix

_READ, _WRITE, _EXEC, _MEMORY = ObsKind.READ, ObsKind.WRITE, ObsKind.EXEC, ObsKind.MEMORY  # fast
_SUPERSEDING = SUPERSEDING_KINDS


@functools.lru_cache(maxsize=4096)
def _norm(path: str) -> str:
    return posixpath.normpath(path) if path else path


def _covers(new: tuple[int, int] | None, old: tuple[int, int] | None) -> bool:
    return new is not None and old is not None and new[0] <= old[0] and old[1] <= new[1]


# what a tool run may change on disk: a file changed while one of these ran is put down to it
_CHANGERS = frozenset({ObsKind.WRITE, ObsKind.EXEC, ObsKind.MCP, ObsKind.AGENT})
MTIME_SLACK_NS = 20_000_000  # file mtimes come from a coarse clock: up to a few ms early
_CARRIED = frozenset({EntryState.FULL, EntryState.CAPPED, EntryState.CORRECTED})
# sent as a difference from (a pointer into) a base: a copy out of date is carried as it was
# sent, so its base must be carried too, or it is sent whole (``broken_echoes``)
_REFERENCED = frozenset({EntryState.ECHOED, EntryState.CORRECTED})
WHOLE_WRITES = frozenset({"write_file"})  # writes whose call holds the file's whole content


# A command's output of at least AGE_MIN_TOKENS is pending once AGE_STEPS later steps have their
# results in: what it said has been acted on, and each request that carries it on reads it from
# the cache again. The next rewrite, made when its savings repay it (``plan.py``), clears it to
# a stub that keeps its exit status and says how to read it back (``stubs.aged_stub``). A test
# command's output does not age (the verification's evidence until a rerun supersedes it), nor
# one that may print files' own lines (``cat``, ``nl``, ``grep``: an agent's reads, which it
# quotes when it edits).
AGE_STEPS = 1
AGE_MIN_TOKENS = 500

_UNCHANGED = 1 << 62  # ``LiveSteps._low`` when no step changed since its sums were checked


class LiveSteps:
    """The live steps, classified as they are appended, reused by every build of a run.

    Supersession: a later call of the same key (``Observation.key``, for the superseding kinds)
    supersedes the one before it — unless it gave that one's result again, to the character:
    then it is a stub pointing at it, which stays current (``_same_result``) — and a later read
    supersedes the earlier reads of the same path whose lines it covers (a whole read covers
    every range). Each entry is superseded once, by the first later call that covers it, so a
    new call re-points only the entries still open (``_newest``, ``_reads``): appending is
    linear in the history. Staleness: a
    successful write to a path makes the open results made from it stale (reads of it, greps
    and finds whose ``seen`` names it: ``_deps``); a superseded result is never stale, its
    successor is. Appending oldest-first gives exactly what deciding newest-first from scratch
    gives; the property tests check it.

    A superseded result that is still current is *pending* (``plan.py``): carried until the
    next rewrite. A change on disk (``drift``) is not part of the history: each build stats what
    the open results saw (``watched``) and marks the ones that no longer hold (``mark_drift``);
    a write or a supersession says more, and clears it. A result that went out of date either
    way is corrected by appending (``correct.py``): its correction is a result of the same call
    made at a later step's boundary, which supersedes it; the copy stays pending, *corrected*,
    carried as it was sent until the next rewrite.
    """

    def __init__(self, cache: TurnCache) -> None:
        self.cache = cache
        self.records: list[StepRecord] = []
        self.steps: list[Step] = []
        # each entry knows its step (``Entry.owner``): these hold the entries alone
        self._newest: dict[tuple[Any, str, str], Entry] = {}
        self._calls: dict[str, Entry] = {}  # by call id: what a correction names
        self._reads: dict[str, list[Entry]] = {}
        self._deps: dict[str, list[Entry]] = {}
        self._watch: list[Entry] = []  # results with ``seen``, open when appended
        self.pending: list[Entry] = []  # superseded but current (``Entry.pending``)
        self._young: deque[Entry] = deque()  # large command outputs not aged yet, oldest first
        self.echoes: list[Entry] = []  # results sent as a difference (``Entry.echo``)
        self._written: dict[str, list[Step]] = {}  # steps whose calls wrote a path, by path
        self._overwritten: list[Step] = []  # those a later step showed whole, turns not compact
        self._ran: list[tuple[int, int, Observation]] = []  # start, end, the changer's result
        self._notes: list[Entry] = []  # remember results not yet ``noted``
        self._changed: Mapping[Seen, int | None] = {}  # this build's changes on disk
        # the entries a write or a change on disk put out of date (``stale_by``, ``drift``), by
        # id: what ``uncorrected`` looks through instead of every entry of every live step
        self._stale: dict[int, Entry] = {}
        self.settled = Settled()
        # sums over the oldest steps, kept while none of them changes: ``_prefix[i]`` what
        # carrying ``steps[:i]`` whole costs at ``_prefix_cap`` (``demand``), ``_counts[i]`` the
        # results of ``steps[:i]`` a fold may keep (``fold_boundary``); a step whose version
        # moves writes its index into ``_low`` (shared with every step: ``Step.bumps``), and
        # the sums from there on are dropped before the next use
        self._low = [0]
        self._prefix: list[int] = [0]
        self._prefix_cap = -1
        self._counts: list[int] = [0]
        self._unsettle = self.settled.truncate  # one bound method every step shares
        self.asked = Asked()  # what the collapse line last stood for (``collapse.py``)
        self.latest_test: Entry | None = None  # the newest test command's result

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
        if keep < len(records) and self._answered(keep, records[keep]):
            keep += 1  # the step asked for, now answered: only its results are new
        if any(r.observations or r.corrections for r in self.records[keep:]):
            self._reset()
            keep = 0
        del self.records[keep:], self.steps[keep:]
        self._low[0] = min(self._low[0], keep)
        self.settled.truncate(keep)
        for record in records[keep:]:
            self._append(record)

    def _answered(self, index: int, record: StepRecord) -> bool:
        """Whether ``record`` is the step at ``index`` the last build asked for (no turn, no
        results), now answered with the same corrections: then its corrections, classified
        when they were made, stay, and its results are classified in their turn."""
        if index != len(self.records) - 1:
            return False
        asked = self.records[index]
        if (
            asked.step != record.step
            or asked.text
            or asked.tool_calls
            or asked.observations
            or asked.corrections != record.corrections
            or asked.operator_messages != record.operator_messages
        ):
            return False
        st = self.steps[index]
        st.record = record
        self.records[index] = record
        entries = [Entry(o) for o in record.observations]
        for e in entries:
            e.owner = st
        st.entries += entries
        st.bump()
        st.unsettle()
        self._classify(st, entries)
        self._age(record)
        return True

    def growth(self, cap: int, newest: int = 8) -> int:
        """What one of the ``newest`` steps costs carried whole, on average."""
        count = min(newest, len(self.steps))
        return self.demand(cap, len(self.steps) - count) // max(1, count)

    def apply_rewrites(self, rewritten_at: int) -> None:
        """Results superseded by steps before ``rewritten_at`` are stubbed from now on: the
        last rewrite applied them (``plan.py``). Those superseded by the results of the step it
        asked for, and by later steps, came after it and stay pending (stubbing them now would
        rewrite again)."""
        waiting = []
        for writer in self._overwritten:  # what it wrote is shown whole later: compact turn
            if writer.written_over is not None and writer.written_over < rewritten_at:
                writer.compact_turn = True
                writer.bump()
                writer.unsettle()
            else:
                waiting.append(writer)
        self._overwritten = waiting
        notes = []
        for e in self._notes:  # shown by one request at least: its call says the rest
            if e.obs.step + 1 < rewritten_at and _says_note(e.owner.record, e.obs.call_id):
                e.noted = True
                e.owner.changed(e)
            else:
                notes.append(e)
        self._notes = notes
        kept = []
        for e in self.pending:
            by = e.by if e.by is not None else e.aged
            if by is not None and by < rewritten_at:
                e.pending = False
                e.owner.changed(e)
            else:
                kept.append(e)
        self.pending = kept

    def broken_echoes(self, out: int) -> bool:
        """Results sent as a difference from (or a pointer into) a base this build does not
        carry whole (out of the window, folded, or stubbed) are sent whole from now on; True if
        there were any. Echoes no longer in use are forgotten."""
        broken, kept = False, []
        for e in self.echoes:
            base = e.echo or e.quotes
            if base is None or e.no_echo:
                continue
            if e.owner.index >= out and e.state in _REFERENCED:
                index = base.owner.index
                live = index < len(self.steps) and self.steps[index] is base.owner
                if not (live and index >= out and _carried_base(base, e)):
                    e.no_echo, broken = True, True
                    e.owner.changed(e)
                    continue
            kept.append(e)
        self.echoes = kept
        return broken

    def demand(self, cap: int, start: int = 0, above: float = math.inf) -> int:
        """What carrying ``steps[start:]`` whole costs (``Step.desired``), summed newest-first
        and only until it passes ``above``: the callers ask whether it does, and the answer
        is known after the steps one window holds, however long the history.

        Steps already summed (``_prefix``) and unchanged since are not walked again: a build
        asks several times, and a long run's old steps (superseded ones cost nothing, so no
        walk stopped before them) would be walked each time, every build. The answer is the
        walk's: the first newest-first sum past ``above``, or the whole sum."""
        steps = self.steps
        self._drop_changed_sums()
        if cap != self._prefix_cap:  # kept for one cap: the one every build of a run uses
            self._prefix, self._prefix_cap = [0], cap
        prefix = self._prefix
        n, known = len(steps), len(prefix) - 1  # ``prefix`` holds steps[:known]
        total, tail = 0, []
        for index in range(n - 1, max(start, known) - 1, -1):
            cost = steps[index].desired(cap)
            total += cost
            if total > above:
                return total
            tail.append(cost)
        if start > known:
            return total
        for cost in reversed(tail):  # every step from ``known`` on was walked: keep them
            prefix.append(prefix[-1] + cost)
        # the rest, steps[start:known], newest-first from the sums: stop at the first step
        # that takes the total past ``above`` (the largest k with prefix[k] below the mark)
        mark = total + prefix[known] - above
        if prefix[start] >= mark:
            return total + prefix[known] - prefix[start]
        k = bisect.bisect_left(prefix, mark, start, known) - 1
        return total + prefix[known] - prefix[k]

    def fold_boundary(self, keep_newest: int) -> int:
        """``compaction.fold_boundary`` of the steps' result counts newest-first (a step dead
        at the next rewrite counting none), from sums over the steps kept between builds."""
        steps = self.steps
        if keep_newest <= 0:  # the newest step alone holds that many
            return max(len(steps) - 1, 0)
        self._drop_changed_sums()
        counts = self._counts
        for st in steps[len(counts) - 1 :]:
            counts.append(counts[-1] + (0 if st.dies_at_rewrite else len(st.record.observations)))
        n = len(steps)
        # the largest k whose steps[k:] hold ``keep_newest`` results: what the newest-first
        # count reaches first
        k = bisect.bisect_right(counts, counts[n] - keep_newest, 0, n) - 1
        return max(k, 0)

    def _drop_changed_sums(self) -> None:
        """Drop the kept sums from the lowest step that changed since the last use on."""
        low = min(self._low[0], len(self.steps))
        del self._prefix[low + 1 :], self._counts[low + 1 :]
        self._low[0] = _UNCHANGED

    def settle(self, cap: int) -> Settled:
        """The settled prefix for a fit at ``cap``, taking in what the last fits settled."""
        self.settled.extend(self.steps, cap)
        return self.settled

    def drop_oldest(self, count: int, rewritten_at: int) -> None:
        """Forget the ``count`` oldest steps (folded) and classify the rest afresh, as a fresh
        engine would: a result shown by an earlier one that is folded now (``shown_by``) is the
        current one, carried whole. The plan's applied rewrites (``rewritten_at``) and this
        build's changes on disk are applied again. A fold is rare and costs a provider call:
        classifying what is left once more is linear in it."""
        records, changed = self.records[count:], self._changed
        self._reset()
        for record in records:
            self._append(record)
        self.apply_rewrites(rewritten_at)
        self.watched()
        self.mark_drift(changed)

    def _reset(self) -> None:
        self.records, self.steps = [], []
        self._low[0] = 0
        self._newest, self._reads, self._deps, self._calls = {}, {}, {}, {}
        self._watch, self._ran, self.pending, self.echoes = [], [], [], []
        self._young = deque()
        self._written, self._overwritten = {}, []
        self._notes = []
        self._stale = {}
        self.latest_test = None
        self.settled.reset(-1)

    def _append(self, record: StepRecord) -> None:
        entries = [Entry(o) for o in (*record.corrections, *record.observations)]
        st = Step(record, entries, self.cache, self._unsettle, len(self.steps), bumps=self._low)
        self._classify(st, entries)
        self.records.append(record)
        self.steps.append(st)
        self._age(record)

    def _age(self, record: StepRecord) -> None:
        """When ``record`` has results: the large command outputs ``AGE_STEPS`` steps older and
        still open are pending, cleared by the next rewrite."""
        if not record.observations:
            return
        step, young = record.step, self._young
        while young and young[0].obs.step <= step - AGE_STEPS:
            e = young.popleft()
            st = e.owner
            live = st.index < len(self.steps) and self.steps[st.index] is st
            if not live or e.by is not None or e.shown_by is not None:
                continue  # its step was dropped, or a rerun superseded it
            e.aged, e.pending = step, True
            self.pending.append(e)
            e.owner.changed(e)

    def _rerun_after_aged(self, older: Entry, e: Entry) -> None:
        """``e`` runs again the command whose output ``older`` aged out. Nothing supersedes an
        aged output (its stub, once a rewrite made it, never changes): ``e`` is a first run, the
        newest of its call, sent as the difference from ``older`` while that is carried whole
        (``refresh.py``; whole once a rewrite clears it)."""
        if older.pending:
            base = _echo_base(older)
            e.echo = base
            base.echoed(e)
            self.echoes.append(e)

    def correct(self, corrections: Sequence[Observation]) -> None:
        """Append ``corrections`` to the step being asked for (the newest): each supersedes
        the result it names, which stays carried as it was sent (``correct.py``)."""
        st = self.steps[-1]
        entries = [Entry(o) for o in corrections]
        for e in entries:
            e.owner = st
        st.record = replace(st.record, corrections=(*st.record.corrections, *corrections))
        self.records[-1] = st.record
        st.entries += entries
        st.bump()
        st.unsettle()
        self._classify(st, entries)

    def newest_results(self) -> int:
        """The index of the newest step with results (its results and what follows it, the
        corrections at the step asked for, are always carried), or past the end."""
        for index in range(len(self.steps) - 1, -1, -1):
            if self.records[index].observations:
                return index
        return len(self.steps)

    def record_of(self, step: int) -> StepRecord | None:
        """The live record of ``step``, if the window's steps still hold it."""
        return next((r for r in reversed(self.records) if r.step == step), None)

    def knows(self, call_id: str) -> bool:
        return call_id in self._calls

    def corrected_by(self, e: Entry) -> Entry | None:
        """The result ``e``, a correction, names as out of date, while the window holds it."""
        return self._calls.get(e.obs.corrects) if e.obs.corrects else None

    def uncorrected(self, start: int) -> list[Entry]:
        """The open results in steps ``start`` on that went out of date (a later write, a
        change on disk) and are not corrected yet: whole reads first, so a correction of one
        also covers the ranges of that file read before; in the order of the steps and their
        entries otherwise.

        Looked for among the entries a write or a drift marked (``_stale``), not in every
        entry of every live step: a long run holds thousands, and its builds each ask. An
        entry that is current again, or whose step the live steps no longer hold, leaves the
        index; only a write or a drift puts it back (``_went_stale``)."""
        steps, stale = self.steps, self._stale
        found: list[Entry] = []
        for key, e in list(stale.items()):
            st = e.owner
            if (e.stale_by is None and e.drift is None) or not (
                st.index < len(steps) and steps[st.index] is st
            ):
                del stale[key]
                continue
            if (
                st.index >= start
                and e.by is None
                and e.shown_by is None
                and not e.noted
                and not e.obs.is_error
                and not st.dead
            ):
                found.append(e)
        return sorted(found, key=_correction_order)

    def stale_before(self, e: Entry, start: int) -> list[Entry]:
        """The earlier results of ``e``'s call (a search or listing, not a read: a later read
        shows every line of the ones it covers) still carried as sent, superseded but pending,
        in live steps ``start`` on, that went out of date as ``e`` did and no correction named
        yet: its correction names them, since the current hits it shows need not show their
        lines."""
        obs = e.obs
        if obs.kind is _READ:
            return []
        key = (obs.kind, obs.target, obs.span)
        return [
            older
            for older in self.pending
            if older is not e
            and (older.obs.kind, older.obs.target, older.obs.span) == key
            and older.owner.index >= start
            and older.stale is not None
            and not older.named
            and not older.corrected  # its own correction is in the request
        ]

    def _went_stale(self, e: Entry) -> None:
        """``e`` went out of date (``stale_by`` or ``drift`` set): ``uncorrected`` looks at it."""
        self._stale[id(e)] = e

    def revalidate(self, e: Entry, seen: tuple[Seen, ...]) -> None:
        """``e`` was made again and gave its result again, to the character: it is current as
        of now, and watched from what the new call saw (``seen``, when it says)."""
        e.stale_by, e.stale_path, e.drift = None, "", None
        if seen:
            e.seen = seen
        if e.obs.kind is _READ:
            self._deps.setdefault(_norm(e.obs.target), []).append(e)
        else:
            for s in e.seen:
                self._deps.setdefault(s.path, []).append(e)
        self._watch.append(e)
        e.owner.changed(e)

    def _classify(self, st: Step, entries: list[Entry]) -> None:
        for e in entries:  # in order: a later result of the same step is the newer one
            obs = e.obs
            self._calls[obs.call_id] = e
            if obs.corrects:
                self._correction(e)
                continue
            kind = obs.kind
            if obs.ran_ns[0] and kind in _CHANGERS:
                self._ran.append((obs.ran_ns[0], obs.ran_ns[1], obs))
            if kind is _WRITE:
                if not obs.is_error:
                    path = _norm(obs.target)
                    if obs.tool in WHOLE_WRITES:  # its call holds the file's whole content
                        self._written_over(path, st, obs.step)
                    for dep in self._deps.pop(path, ()):
                        if dep.by is None and dep.stale_by is None:
                            dep.stale_by, dep.stale_path, dep.drift = obs.step, path, None
                            dep.owner.changed(dep)
                            self._went_stale(dep)
                        elif dep.pending and dep.stale_by is None:  # re-read from now on
                            dep.stale_by, dep.stale_path = obs.step, path
                            dep.owner.changed(dep)
                            self._went_stale(dep)
                    self._written.setdefault(path, []).append(st)
                    if st.unshown is None:
                        st.unshown = set()
                    st.unshown.add(path)
                continue
            if kind is _READ:
                path = _norm(obs.target)
                if not obs.is_error and not obs.span:
                    self._written_over(path, st, obs.step)
                if not obs.is_error and self._shown(path, e):
                    continue  # a stub from the start: nothing of it can go stale or pending
                self._deps.setdefault(path, []).append(e)
                if not obs.is_error:
                    self._supersede_reads(path, e)
                    if obs.span and e.echo is None:
                        self._quote(path, e)
            elif kind in _SUPERSEDING and (not obs.is_error or kind is _EXEC):
                # a command that exits non-zero has an output like any other: its rerun's is
                # the current one (a failed read or grep, though, answers nothing)
                key = (kind, obs.target, obs.span)
                older = self._newest.get(key)
                if older is not None and older.aged is not None:
                    self._rerun_after_aged(older, e)
                    older = None
                if older is not None and _same_result(older, obs):
                    self._revalidate(older, obs)
                    e.shown_by = older.obs.step  # a stub from the start, pointing at it
                    if is_test_run(obs):
                        self._tested(older)  # its result is the latest test output again
                    continue
                if older is not None:
                    self._superseded(older, e)
                self._newest[key] = e
                if kind is _EXEC and is_test_run(obs):
                    self._tested(e)
                elif (
                    kind is _EXEC
                    and len(obs.text) >= AGE_MIN_TOKENS * CHARS_PER_TOKEN
                    and not shows_file_lines(obs.target)
                ):
                    self._young.append(e)
                for seen in obs.seen:
                    self._deps.setdefault(seen.path, []).append(e)
            elif kind is _MEMORY and obs.tool == "remember" and not obs.is_error:
                self._notes.append(e)
            if obs.seen and not obs.is_error:
                self._watch.append(e)

    def _correction(self, e: Entry) -> None:
        """``e`` corrects the result it names: that one is out of date and stays carried as
        sent until the next rewrite (``corrected``), and ``e``, the same call made again, is
        its current result, classified as a new result of that call would be. A correction
        that failed (``is_error``) only says so: nothing of it can be current or go stale."""
        obs = e.obs
        older = self._calls.get(obs.corrects)
        named = named_also(obs.text.partition("\n")[0])
        if named:  # earlier copies of the same call it names as out of date (``stale_before``)
            key = (obs.kind, obs.target, obs.span)
            for copy in self.pending:
                if (copy.obs.kind, copy.obs.target, copy.obs.span) == key and (
                    copy.obs.step,
                    copy.obs.kind.value,
                ) in named:
                    copy.named = True
        writer = written_by(obs.text)
        if writer is not None:  # one line for every copy the agent's whole write put out of date
            for copy in self.written_copies(_norm(obs.target), writer):
                copy.corrected, copy.corrected_why = True, copy.stale or "it changed"
                self._out_of_date(copy, obs.step)
            return
        if older is not None and not older.corrected:
            older.corrected, older.corrected_why = True, older.stale or "it changed"
        if obs.is_error or edited_by(obs.text) is not None:  # it shows no result of its own
            if older is not None:
                self._out_of_date(older, obs.step)
            if obs.seen:  # the lines an edit pointer stands for: corrected again if they change
                self._deps.setdefault(_norm(obs.target), []).append(e)
                self._watch.append(e)
            return
        kind = obs.kind
        if kind is _READ:
            path = _norm(obs.target)
            if not obs.span:
                self._written_over(path, e.owner, obs.step)
            self._deps.setdefault(path, []).append(e)
            self._supersede_reads(path, e, older)
            if older is not None and older.by is None:  # its lines, numbered from elsewhere
                self._superseded(older, e)
        elif kind in _SUPERSEDING:
            key = (kind, obs.target, obs.span)
            before = self._newest.get(key)
            if before is not None:
                self._superseded(before, e)
            self._newest[key] = e
            for seen in obs.seen:
                self._deps.setdefault(seen.path, []).append(e)
        elif older is not None:
            self._superseded(older, e)
        if obs.seen:
            self._watch.append(e)
        base = e.echo
        if base is not None and not _small_diff(obs, base.obs):
            # sent whole: then it is the base the later results of the call are sent against
            e.echo = None
            if base.echoed_by is not None:
                base.echoed_by.remove(e)
            self.echoes.remove(e)

    def written_copies(self, path: str, writer: int) -> list[Entry]:
        """The open copies of ``path`` that step ``writer``'s ``write_file`` put out of date and
        its call can stand for: reads of it, whole or in part, and searches that saw only it."""
        return [
            e
            for st in self.steps
            if not st.dead
            for e in st.entries
            if e.stale_by == writer
            and e.stale_path == path
            and e.by is None
            and not e.corrected
            and (e.obs.kind is _READ or {s.path for s in e.seen} == {path})
        ]

    def _out_of_date(self, e: Entry, step: int) -> None:
        """A correction at ``step`` says ``e`` is out of date and shows none of it: carried as
        sent until the next rewrite, no longer a read later ranges are sent against."""
        e.by, e.pending, e.drift = step, True, None
        self.pending.append(e)
        if e.obs.kind is _READ:
            reads = self._reads.get(_norm(e.obs.target), [])
            if e in reads:
                reads.remove(e)
        e.owner.changed(e)

    def _tested(self, e: Entry) -> None:
        """``e`` is the run's latest test output: its stub keeps its end (``stubs.receipt``),
        the one before it no longer does."""
        before = self.latest_test
        if before is e:
            return
        if before is not None:
            before.latest_test = False
            before.owner.changed(before)
        e.latest_test = True
        e.owner.changed(e)
        self.latest_test = e

    def _written_over(self, path: str, st: Step, step: int) -> None:
        """``st`` shows ``path`` whole at ``step`` (a whole read, or a ``write_file``): what the
        earlier writes of it sent in their calls is superseded, and the turns of the steps whose
        every written path is are compact from the next rewrite on (``apply_rewrites``)."""
        for writer in self._written.pop(path, ()):
            if writer is st or writer.unshown is None or path not in writer.unshown:
                continue
            writer.unshown.discard(path)
            if writer.shown_writes is None:
                writer.shown_writes = {}
            for o in writer.record.observations:
                if o.kind is _WRITE and not o.is_error and _norm(o.target) == path:
                    writer.shown_writes.setdefault(o.call_id, step)
            if not writer.unshown and writer.written_over is None:
                writer.written_over = step
                self._overwritten.append(writer)

    def _revalidate(self, older: Entry, newer: Observation) -> None:
        """``newer`` re-ran ``older``'s call and gave its result again, to the character: that
        result is current as of ``newer`` (stale no more), and watched from ``newer``'s view of
        the files on, so it stays where the request carries it."""
        if older.stale_by is not None or older.drift is not None:
            older.stale_by, older.stale_path, older.drift = None, "", None
            older.owner.changed(older)
            self._watch.append(older)
        older.seen = newer.seen
        for seen in newer.seen:
            self._deps.setdefault(seen.path, []).append(older)

    def _shown(self, path: str, e: Entry) -> bool:
        """Whether an earlier open read of ``path`` already shows every line ``e`` read, from
        the same file content (same digest) and recorded whole: then ``e`` adds nothing, and is
        sent as a stub pointing at it (``shown_by``). Repeating those lines would make each
        request, and what compaction weighs, larger by what the model already has."""
        mine = e.obs.seen[0].digest if e.obs.seen else ""
        lines = span_lines(e.obs.span)
        if not mine or lines is None:
            return False
        for older in reversed(self._reads.get(path, ())):
            obs = older.obs
            if (
                _sent_before(older, e)
                and older.stale is None
                and obs.seen
                and obs.seen[0].digest == mine
                and obs.recorded_keeps >= obs.full_chars
                and _covers(span_lines(obs.span), lines)
            ):
                e.shown_by = obs.step
                return True
        return False

    def _supersede_reads(self, path: str, e: Entry, corrects: Entry | None = None) -> None:
        """``e`` reads ``path``: it supersedes the open reads of it whose lines it covers. The
        read ``e`` corrects (``corrects``) is the base ``e`` is sent as a difference from, even
        when ``e`` shows more lines (an edit inside the range moved its end). A read its
        correction superseded already (one of other lines: an edit moved the range) keeps the
        first step that replaced it: superseded again, it would be pending again, and a stub a
        rewrite made would be carried whole once more, rewriting the prefix from there."""
        span, lines = e.obs.span, span_lines(e.obs.span)
        open_reads = self._reads.setdefault(path, [])
        kept = []
        for older in open_reads:
            if older.by is not None:
                kept.append(older)
            elif older.obs.span == span or _covers(lines, span_lines(older.obs.span)):
                covered = older.obs.span != span
                self._superseded(older, e, covered, echo=older is corrects)
            else:
                kept.append(older)
        kept.append(e)
        self._reads[path] = kept

    def _quote(self, path: str, e: Entry) -> None:
        """``e`` reads a range of ``path``: the newest earlier open read of it that holds those
        lines (and is not itself sent as a pointer) is its base (``Entry.quotes``). A build
        sends ``e`` as a pointer to the lines in it while it is carried whole above and shows
        them as ``e`` would be sent (``refresh.py``): a file read whole, changed (re-read now),
        then read in part, is not sent twice."""
        lines = span_lines(e.obs.span)
        for older in reversed(self._reads[path]):
            if (
                older is not e
                and older.quotes is None
                and _covers(span_lines(older.obs.span), lines)
                and _sent_before(older, e)
            ):
                e.quotes = older
                older.echoed(e)
                self.echoes.append(e)
                return

    def _superseded(
        self, older: Entry, e: Entry, covered: bool = False, echo: bool = False
    ) -> None:
        """``e`` supersedes ``older``. If what it carries is still current, it is pending:
        carried until the next rewrite (``plan.py``), and ``e`` is sent as the difference from
        it (or from the pending result it is itself sent as a difference from) while it is
        (``echo``; a read that covers more lines only when it is ``older``'s correction). A
        correction of a correction is sent against whichever of the two its difference is
        smaller from (``_chained``): a file corrected after each of many edits then costs
        each edit, not every edit since the copy sent whole."""
        newer = e.obs
        if older.stale is not None and not older.corrected:  # out of date before ``newer``
            older.corrected_why = older.stale
        older.by, older.covered, older.drift = newer.step, covered, None
        # carried until the next rewrite: still current (the files it was made from as
        # ``newer`` saw them), or out of date with ``newer`` (or its correction) after it
        older.pending = (
            older.corrected
            or older.stale_by is not None
            or bool(older.corrected_why)
            or _same_content(older.seen, newer.seen)
        )
        if older.pending:
            self.pending.append(older)
            if not covered or echo:
                base = _echo_base(older)
                if base is not older and _chained(e.obs, older, base):
                    base = older
                e.echo = base
                base.echoed(e)
                self.echoes.append(e)
        older.owner.changed(older)

    # -- changes on disk ------------------------------------------------------------------------

    def watched(self) -> set[Seen]:
        """What the open results (not superseded, or pending; not made stale by a write) saw
        on disk."""
        self._watch = [e for e in self._watch if _open(e)]
        return {seen for e in self._watch for seen in e.seen}

    def mark_drift(self, changed: Mapping[Seen, int | None]) -> None:
        """Mark the open results whose ``seen`` no longer holds: ``changed`` maps each such
        record to the file's mtime now (None: it is gone). Results that held again lose it."""
        self._changed = changed
        for e in self._watch:
            drift = None
            for seen in e.seen:
                if seen in changed:
                    drift = self._cause(e.obs, seen, changed[seen])
                    break
            if drift != e.drift:
                e.drift = drift
                e.owner.changed(e)
                if drift is not None:
                    self._went_stale(e)

    def _cause(self, obs: Observation, seen: Seen, mtime_ns: int | None) -> tuple[str, int | None]:
        """Why ``obs`` no longer holds: which file changed, and the tool run that changed it
        when one of the later ones ran at the file's mtime."""
        if mtime_ns is None:
            return f"{seen.path} is gone from disk since step {obs.step}", None
        what = f"{seen.path} changed on disk after step {obs.step}"
        for start, end, changer in reversed(self._ran):
            if end < mtime_ns:
                break
            ran_then = changer.step >= obs.step and start - MTIME_SLACK_NS <= mtime_ns
            if ran_then and (changer.kind is not _WRITE or _norm(changer.target) == seen.path):
                return f"{what} ({changer.tool} at step {changer.step})", changer.step
        return what, None


def _says_note(record: StepRecord, call_id: str) -> bool:
    """Whether the remember call ``call_id`` of ``record`` carries its note whole wherever its
    turn is carried (no argument is cut, not even at the compact limit)."""
    call = next((c for c in record.tool_calls if c.id == call_id), None)
    return call is not None and all(
        not isinstance(v, str) or len(v) <= COMPACT_CHARS for v in call.arguments.values()
    )


def _same_result(older: Entry, obs: Observation) -> bool:
    """Whether ``obs``, a rerun of ``older``'s call, gave what ``older`` carries, to the
    character (stale or not: the rerun is what is current), while ``older`` is the open result
    of the call, recorded whole: then ``older`` stays the current one (no rewrite to stub it
    later) and ``obs`` points at it."""
    old = older.obs
    return (
        older.by is None
        and older.shown_by is None
        and not obs.is_error
        and not old.is_error
        and old.text == obs.text
        and old.recorded_keeps >= old.full_chars
    )


def _sent_before(older: Entry, e: Entry) -> bool:
    """Whether ``older`` is sent above ``e``: an earlier step's, or the same step's with its
    call first (a step's results are sent in the order of its calls, whatever order they were
    recorded in: a step resumed after an approval records its late ones last), its corrections
    before them."""
    if older.owner is not e.owner:
        return True
    if older.obs.corrects or e.obs.corrects:  # corrections come first, in the order made
        entries = e.owner.entries
        return bool(older.obs.corrects) and (
            not e.obs.corrects or entries.index(older) < entries.index(e)
        )
    order = [c.id for c in e.owner.record.tool_calls]
    ids = older.obs.call_id, e.obs.call_id
    return all(i in order for i in ids) and order.index(ids[0]) < order.index(ids[1])


def _correction_order(e: Entry) -> tuple[bool, bool, int, int]:
    """Whole reads first, then range reads, then the rest; each in the order of the steps and
    their entries."""
    place = next(n for n, x in enumerate(e.owner.entries) if x is e)
    return e.obs.kind is not _READ, bool(e.obs.span), e.owner.index, place


def _open(e: Entry) -> bool:
    """Whether a change on disk could make ``e`` stale: it carries what it saw, and nothing
    says yet that it went out of date."""
    return (
        (e.by is None or e.pending)
        and e.stale_by is None
        and e.shown_by is None
        and not e.corrected
        and not e.corrected_why
    )


def _same_content(older: tuple[Seen, ...], newer: tuple[Seen, ...]) -> bool:
    """Whether a newer result saw every file an older one was made from (``older``) as it was
    (a command's output is made from no file it knows of; a result recorded without ``seen``
    is taken as it is)."""
    if not older or not newer:
        return True
    now = {s.path: s.digest for s in newer}
    return all(now.get(s.path) == s.digest for s in older)


def _carried_base(base: Entry, e: Entry) -> bool:
    """Whether ``base``, in the window, is sent so that ``e`` may be sent as the difference from
    it: whole, or, for a correction of a correction (``_chained``), as a difference in turn,
    whose own base is checked the same way."""
    if base.state in _CARRIED:
        return True
    return base.state is EntryState.ECHOED and bool(base.obs.corrects and e.obs.corrects)


MAX_CHAIN = 4  # corrections in a row each sent as the difference from the one before


def _echo_base(e: Entry) -> Entry:
    """What a later result of ``e``'s call is sent as the difference from: ``e``, or the pending
    result ``e`` is itself sent as the difference from, back along a chain of corrections
    (``_chained``) to the one sent whole."""
    while e.echo is not None and not e.no_echo and e.echo.pending:
        e = e.echo
    return e


def _chained(correction: Observation, older: Entry, root: Entry) -> bool:
    """Whether ``correction``, of ``older`` (itself a correction sent as the difference from
    ``root``, sent whole, or from a correction of it), is sent as the difference from ``older``
    rather than from ``root``: when that difference is smaller and the chain of differences it
    makes back to ``root`` is at most ``MAX_CHAIN`` long, so that each stays easy to follow."""
    if not correction.corrects or not older.obs.corrects:
        return False
    links, at = 1, older
    while at is not root and at.echo is not None:
        links, at = links + 1, at.echo
    if links > MAX_CHAIN:
        return False
    text = correction.text

    def size(base: Observation) -> int:
        return estimate_tokens(correction_against(text, base.step, base.text))

    return size(older.obs) < size(root.obs)


def _small_diff(correction: Observation, base: Observation) -> bool:
    """Whether a correction sent as the lines in which it differs from the copy it corrects
    (``stubs.correction_echo``), or for a grep as that copy's hits renumbered when that is
    smaller (``stubs.correction_renumbered``), is under half its size, or as that copy's lines
    numbered from elsewhere (``stubs.correction_moved``): then it is sent so, while the copy is."""
    if moved_lines(base.text, correction_body(correction.text)) is not None:
        return True
    diff = correction_against(correction.text, base.step, base.text)
    return estimate_tokens(diff) * 2 <= estimate_tokens(correction.text)

"""Newest-first fit under the ceiling, and stubs for what is out (or the collapse line).

Every step is kept or dropped whole as far as the transcript goes: a tool result never travels
without its call, nor a call without a result (DESIGN §3.2, step 5). A dead step (``Step.dead``:
every result superseded and stubbed) is left out wherever it is: it costs nothing.
"""

from __future__ import annotations

from io_tui.core.context.collapse import collapse_line
from io_tui.core.context.live import LiveSteps
from io_tui.core.context.refresh import Resolver
from io_tui.core.context.settled import measure
from io_tui.core.providers.messages import Message


async def fit(
    live: LiveSteps, budget: int, cap: int, resolver: Resolver, stop: int = 0
) -> tuple[int, bool]:
    """Carry the newest entries that fit ``budget``, down to step ``stop`` at most (the older
    ones are out by plan); return how many oldest steps are out, and whether the step after
    them is cut in the middle.

    The window is one newest-first run: once an entry does not fit, it and everything older
    are out. A step cut in the middle keeps its turn and stubs its older results (their
    stub cost was reserved before its newer results went in); a step cut before any of its
    results went in leaves the window whole. The newest step with results is never cut: the
    model always sees what its last calls gave (and what was corrected since), its results
    sharing what the budget leaves them when they do not fit whole (``Resolver.squeeze``).

    Reaching the settled prefix (``settled.py``: the oldest steps the last fits carried whole,
    unchanged since), one check says whether all of it fits again; if so the walk stops there.
    A step carried whole is recorded for the next builds' prefix.
    """
    used = 0
    settle, resolve = resolver.settle, resolver.resolve
    settled = live.settle(cap)
    newest = live.newest_results()
    # the newest results and what follows them are carried however little room there is: when
    # they do not fit whole, their turns go as out-of-window ones', their results share the rest
    squeeze = live.demand(cap, newest) > budget
    if squeeze and newest < settled.length:  # the squeezed steps go compact: none stays settled
        live[newest].unsettle()
    zone = sum(len(live[i].entries) for i in range(newest, len(live))) if squeeze else 0
    for index in range(len(live) - 1, stop - 1, -1):
        if stop == 0 and index + 1 == settled.length and settled.all_fit(used, budget):
            return 0, False
        st = live[index]
        if st.dead:  # left out of the transcript: it costs nothing and cuts nothing
            st.drop()
            st.in_window = True
            if st.settled is None or st.settled[:2] != (st.version, cap):
                st.settled = (st.version, cap, 0, 0)
            continue
        st.in_window = False
        entries = st.entries
        below = st.below()  # stub tokens of entries[:i]
        base = st.prepare(cap)
        if not entries and used + base > budget:
            return index + 1, False
        if squeeze and index >= newest:
            st.unsettle()
            base = st.compact()
            zone -= len(entries)
            share = (budget - used - base) * len(entries) // max(1, len(entries) + zone)
            used += base + resolver.squeeze(entries, max(0, share))
            st.in_window = True
            continue
        for i in range(len(entries) - 1, -1, -1):
            e = entries[i]
            if not settle(e):
                await resolve(e)
            need = e.tokens + below[i] + (0 if st.in_window else base)
            if used + need > budget:
                if not st.in_window:
                    return index + 1, False
                st.unsettle()
                for older in entries[: i + 1]:
                    older.to_stub()
                used += below[i + 1]
                return index, True
            used += need - below[i]
            st.in_window = True
        if not entries:
            used += base
            st.in_window = True
        if st.settled is None or st.settled[:2] != (st.version, cap):
            full, peak = measure(st)
            st.settled = (st.version, cap, full, peak)
    return stop, False


def stub_out(live: LiveSteps, out: int, reserve: int) -> Message | None:
    """Stub every one of the ``out`` oldest steps; once their stubs pass ``reserve`` tokens,
    return the one line that stands for all of them instead (they are then collapsed)."""
    used = 0
    for index in range(out - 1, -1, -1):
        st = live[index]
        if st.dead:
            st.drop()
            continue
        used += st.compact()
        for e in st.entries:
            e.to_stub()
            used += e.tokens
        if used > reserve:
            tested = live.latest_test.obs if live.latest_test else None
            return collapse_line(live.records[:out], reserve, live.asked, tested)
    return None

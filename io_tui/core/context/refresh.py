"""What an in-window entry carries: whole, cut to the entry cap, a stub, or a reference to an
earlier result carried above (DESIGN §3.2).

Nothing here re-reads a file. A result that went out of date is corrected by appending
(``correct.py``): its copy stays where the cached prefix holds it, ``corrected``, and its
correction follows later in the same request. The ``Refresher`` is how the correction gets the
current result: the same call made again through the run's policy and workspace containment.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import NamedTuple

from io_tui.core.context.manifest import EntryState
from io_tui.core.context.step import Entry
from io_tui.core.context.stubs import (
    apply_echo,
    correction_against,
    correction_body,
    correction_moved,
    cut,
    echo_stub,
    moved_lines,
    quote_stub,
    renumbers,
)
from io_tui.core.contract import CHARS_PER_TOKEN, estimate_tokens
from io_tui.core.ledger import Observation, Seen, capped_chars, is_capped
from io_tui.core.text.numbered import range_from, span_lines

SQUEEZED_CHARS = 400  # the least a result of the newest step is cut to, to fit the ceiling


class RefreshFailed(Exception):
    """A result could not be made again; ``str(exc)`` says why (policy, gone, too large)."""


class Fresh(NamedTuple):
    """A call made again now: its result as the call's own was framed, and what it saw."""

    text: str
    seen: tuple[Seen, ...] = ()


# The current result of a read, range read, grep, find or listing: the same call made again.
Refresher = Callable[[Observation], Awaitable[Fresh]]
# Which of these records no longer hold on disk: each maps to the file's mtime now (None when
# it is gone); records that still hold are left out. Stat first, hash only when the stat changed.
Probe = Callable[[Collection[Seen]], Awaitable[Mapping[Seen, int | None]]]


class Resolver:
    """Decides in-window entries for one build."""

    def __init__(self, cap: int) -> None:
        self.cap = cap

    def settle(self, e: Entry) -> bool:
        """Decide an in-window entry sent as it is: a stub (superseded, shown by another
        result, a remember result noted), carried whole (``full``) or cut to the entry cap
        (``capped``), or, out of date, carried as sent until the next rewrite (``corrected``).
        False for one that may be sent by reference to its base: ``resolve`` it."""
        if _stubbed(e):
            e.to_stub()
            return True
        if _echoing(e) or _quoting(e):
            return False
        self._carry(e)
        _pending(e)
        return True

    def squeeze(self, entries: list[Entry], room: int) -> int:
        """Carry ``entries``, the results of the newest step (or the corrections after it), cut
        to share ``room`` tokens when they do not fit at the entry cap: the model always sees
        what its last calls gave. Returns the tokens they take."""
        carried = [e for e in entries if not _stubbed(e)]
        share = max(SQUEEZED_CHARS, room * CHARS_PER_TOKEN // max(1, len(carried)))
        used = 0
        for e in entries:
            if _stubbed(e):
                e.to_stub()
            elif len(e.obs.text) <= min(share, self.cap):
                self._carry(e)
            else:
                chars = min(share, self.cap)
                kept, total = capped_chars(e.obs, chars)
                e.decide(
                    EntryState.CAPPED,
                    cut(e.obs, chars),
                    f"cut to {chars:,} chars, the newest step's share of what the ceiling "
                    f"leaves its results: {kept:,} of {total:,} kept",
                )
                e.carried = (chars, e.content, e.reason, e.tokens)  # what the manifest counts
                e.squeezed = True  # not the entry cap's cut, though its chars may be the cap
            used += e.tokens
        return used

    def _carried(self, e: Entry) -> tuple[int, str, str, int]:
        """The recorded result as sent whole or capped: (cap, content, reason, tokens)."""
        carried = e.carried
        # decided once per classification and cap; a squeeze's cut is the newest step's share
        if carried is None or carried[0] != self.cap or e.squeezed:
            e.squeezed = False
            obs = e.obs
            content = obs.text
            if len(obs.text) > self.cap:
                content = cut(obs, self.cap)
            if is_capped(obs, self.cap):
                kept, total = capped_chars(obs, self.cap)
                where = (  # this request's cap, or the one it was recorded under (smaller)
                    f"cut to the entry cap ({self.cap:,} chars)"
                    if len(obs.text) > self.cap
                    else "cut where it entered the run, to the entry cap then"
                )
                reason = f"{where}: {kept:,} of {total:,} kept"
            else:
                reason = "carried whole"
            if obs.corrects:
                reason = f"{_correcting(obs)}; {reason}"
            carried = e.carried = (self.cap, content, reason, estimate_tokens(content))
        return carried

    def _carry(self, e: Entry) -> None:
        """Send the recorded result: whole (``full``), cut to the entry cap or where it entered
        (``capped``, with chars kept of total), or out of date (``corrected``)."""
        _, e.content, e.reason, e.tokens = self._carried(e)
        if e.pending and (e.corrected or e.stale is not None):
            e.state = EntryState.CORRECTED
            e.reason = _corrected_reason(e)
        else:
            e.state = EntryState.CAPPED if is_capped(e.obs, self.cap) else EntryState.FULL

    async def resolve(self, e: Entry) -> None:
        """Decide an in-window entry that ``settle`` left: the difference from its base (a
        rerun's from the pending result of the same call, a correction's from the copy it
        corrects), a pointer into the read it quotes, or whole."""
        if self.settle(e):
            return
        self._carry(e)
        if _quoting(e):
            await self._quote(e, e.content)
            _out_of_date(e)
            _pending(e)
            return
        assert e.echo is not None
        base = e.echo
        text = self._sent_text(base)
        if text is not None:
            moved = moved_lines(text, correction_body(e.content)) if e.obs.corrects else None
            if moved is not None:
                echo = correction_moved(e.content, base.obs.step, *moved)
                how = f"step {base.obs.step}'s copy above, its lines numbered from {moved[0]}"
            elif e.obs.corrects:
                echo = correction_against(e.content, base.obs.step, text)
                how = f"the lines that differ from step {base.obs.step}'s copy above"
                if renumbers(echo):
                    how = f"step {base.obs.step}'s copy above, its hits renumbered"
            elif base.obs.corrects:  # the same call's current result, made by a correction
                echo = echo_stub(e.obs, base.obs.step, text, e.content, correction=True)
                same = correction_body(text) == e.content
                how = "the same result as" if same else "the difference from"
                how = f"{how} the correction at step {base.obs.step}"
            else:
                echo = echo_stub(e.obs, base.obs.step, text, e.content)
                how = "the same result as" if text == e.content else "the difference from"
                how = f"{how} step {base.obs.step}'s result of the same call"
            tokens = estimate_tokens(echo)
            # sent so only when it gives the result back to the character (a copy of an empty
            # file has no numbered lines for a difference from it to keep the numbers of)
            if tokens * 2 <= e.tokens and apply_echo(text, echo) == e.content:
                e.state, e.content, e.tokens = EntryState.ECHOED, echo, tokens
                e.reason = (
                    f"{_correcting(e.obs) + '; ' if e.obs.corrects else ''}sent as {how}, "
                    "carried whole above until the next rewrite stubs it; whole from then on"
                )
        _out_of_date(e)
        _pending(e)

    async def _quote(self, e: Entry, text: str) -> bool:
        """Send ``e``, a range read that would send ``text``, as a pointer to the same lines in
        the read it quotes (``Entry.quotes``) when that read sends them in this request to the
        character (``range_from``) and the pointer is under half the size; True if it is."""
        assert e.quotes is not None
        base = e.quotes
        lines = span_lines(e.obs.span)
        sent = self._sent_text(base)
        if sent is not None and base.obs.corrects:
            sent = correction_body(sent)
        if sent is None or lines is None or range_from(sent, *lines) != text:
            return False
        stub = quote_stub(e.obs, base.obs.step, bool(base.obs.corrects))
        tokens = estimate_tokens(stub)
        if tokens * 2 > estimate_tokens(text):
            return False
        e.state, e.content, e.tokens = EntryState.ECHOED, stub, tokens
        read = "the correction at step" if base.obs.corrects else "step"
        e.reason = (
            f"sent as a pointer to {read} {base.obs.step}'s read of {base.obs.target} above, "
            "which shows these lines as they are now"
        )
        return True

    def _sent_text(self, e: Entry) -> str | None:
        """The result an entry sends whole in this request if it is in the window (a copy out
        of date is sent as it was), or None when it sends no result whole."""
        return None if _stubbed(e) else self._carried(e)[1]


def _stubbed(e: Entry) -> bool:
    """Whether ``e`` is a stub wherever the window puts it: superseded or aged out (and no longer
    pending), shown by another result, a remember result noted, or out of date and never sent (a stale
    result nothing corrects: its step is out of the window's reach)."""
    return (
        e.shown_by is not None
        or e.noted
        or ((e.by is not None or e.aged is not None) and not e.pending)
        or (e.by is None and e.stale is not None)
    )


def _echoing(e: Entry) -> bool:
    """Whether ``e`` may be sent as a difference from its base: the base is still pending."""
    return e.echo is not None and not e.no_echo and e.echo.pending


def _quoting(e: Entry) -> bool:
    """Whether ``e`` may be sent as a pointer into the read it quotes: a current range only
    into a current read, a copy out of date also into the copy it was sent against."""
    base = e.quotes
    return (
        base is not None
        and not e.no_echo
        and (base.stale is None or e.stale is not None or e.corrected)
    )


def _out_of_date(e: Entry) -> None:
    """A copy out of date that is sent as a reference to its base, as it was sent before:
    ``corrected``, saying so."""
    if e.state is EntryState.ECHOED and e.pending and (e.corrected or e.stale is not None):
        how = e.reason.partition(", carried whole above")[0]
        e.state = EntryState.CORRECTED
        e.reason = f"{_corrected_reason(e)}; {how}"


def _pending(e: Entry) -> None:
    if e.pending and e.aged is not None:
        e.reason += f"; {e.aged_reason()}, stubbed at the next rewrite"
    elif e.pending and e.state is not EntryState.CORRECTED:  # superseded but current: stubbed
        # at the next rewrite
        again = "read these lines again" if e.covered else "made the same call"
        e.reason += f"; step {e.by} {again}, stubbed at the next rewrite"


def _corrected_reason(e: Entry) -> str:
    """Why a copy out of date is still sent, and what holds its current result."""
    since = e.stale or e.corrected_why
    if e.corrected:
        fix = f"its correction at step {e.by} follows"
    else:
        again = "read these lines again" if e.covered else "made the same call"
        fix = f"step {e.by} {again}, and that result (or its correction) follows"
    return f"in the cached prefix, out of date ({since}); {fix}; stubbed at the next rewrite"


def _correcting(obs: Observation) -> str:
    """What a correction's manifest entry says of it."""
    return f"a correction made at step {obs.step}: {obs.corrects}'s result went out of date"

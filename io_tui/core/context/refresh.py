"""What an in-window entry carries, re-reading stale reads (DESIGN §3.2, step 4).

A result is stale when a later write changed a path it was made from, or when the file it saw
changed on disk since (``Probe``: the run loop stats what the open results saw before each
build; ``live.py`` marks them). A stale read is never sent stale: it is re-read through the
injected ``Refresher`` (the run loop's, which goes through the same policy and workspace
containment as any read); a stale grep or find is run again through it. If that fails, a stub
names the cause and the reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping

from io_tui.core.context.manifest import EntryState
from io_tui.core.context.step import Entry
from io_tui.core.context.stubs import cut, echo_stub, quote_stub, refresh_failed_stub
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, Seen, capped_chars, is_capped
from io_tui.core.numbered import range_from, span_lines


class RefreshFailed(Exception):
    """A stale result could not be re-read or re-run; ``str(exc)`` says why (policy, gone, too
    large)."""


# The current result of a stale read, grep or find: the same call made again, now.
Refresher = Callable[[Observation], Awaitable[str]]
# Which of these records no longer hold on disk: each maps to the file's mtime now (None when
# it is gone); records that still hold are left out. Stat first, hash only when the stat changed.
Probe = Callable[[Collection[Seen]], Awaitable[Mapping[Seen, int | None]]]


class Resolver:
    """Decides in-window entries for one build; each stale read is re-read at most once (a
    second fit reuses it)."""

    def __init__(self, cap: int, refresh: Refresher | None) -> None:
        self.cap = cap
        self.refresh = refresh
        self.refreshed: dict[str, tuple[str, str | None]] = {}  # call id -> (text, failure)

    def settle(self, e: Entry) -> bool:
        """Decide an in-window entry that needs no re-read: superseded stub (or carried while
        pending), carried whole (``full``) or cut to the entry cap (``capped``). False for a
        stale result: ``resolve`` it."""
        if _stubbed(e):
            e.to_stub()
            return True
        if e.stale is not None or _echoing(e) or _quoting(e):
            return False  # re-read, or sent by reference to this build's base: ``resolve``
        self._carry(e)
        _pending(e)
        return True

    def _carried(self, e: Entry) -> tuple[int, str, str, int]:
        """The recorded result as sent whole or capped: (cap, content, reason, tokens)."""
        carried = e.carried
        if carried is None or carried[0] != self.cap:  # decided once per classification
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
            carried = e.carried = (self.cap, content, reason, estimate_tokens(content))
        return carried

    def _carry(self, e: Entry) -> None:
        """Send the recorded result: whole (``full``), or cut to the entry cap or where it
        entered (``capped``, with chars kept of total)."""
        _, e.content, e.reason, e.tokens = self._carried(e)
        e.state = EntryState.CAPPED if is_capped(e.obs, self.cap) else EntryState.FULL

    async def _echo(self, e: Entry) -> None:
        """Send ``e`` as the difference from its base (``Entry.echo``: the pending result of
        the same call before it, carried whole in this request) when that is under half its
        size, or as a pointer into the read it quotes (``_quote``); else whole."""
        self._carry(e)
        if _quoting(e):
            await self._quote(e, e.content)
            _pending(e)
            return
        assert e.echo is not None
        base = e.echo
        text = await self._sent_text(base)
        if text is not None:
            echo = echo_stub(e.obs, base.obs.step, text, e.content)
            tokens = estimate_tokens(echo)
            if tokens * 2 <= e.tokens:
                how = "the same result as" if text == e.content else "the difference from"
                e.state, e.content, e.tokens = EntryState.ECHOED, echo, tokens
                e.reason = (
                    f"sent as {how} step {base.obs.step}'s result of the same call, carried "
                    "whole above until the next rewrite stubs it; whole from then on"
                )
        _pending(e)

    async def _quote(self, e: Entry, text: str, stale: str | None = None) -> bool:
        """Send ``e``, a range read that would send ``text``, as a pointer to the same lines in
        the read it quotes (``Entry.quotes``) when that read sends them in this request to the
        character (``range_from``) and the pointer is under half the size; True if it is."""
        assert e.quotes is not None
        base = e.quotes
        lines = span_lines(e.obs.span)
        sent = await self._sent_text(base)
        if sent is None or lines is None or range_from(sent, *lines) != text:
            return False
        stub = quote_stub(e.obs, base.obs.step)
        tokens = estimate_tokens(stub)
        if tokens * 2 > estimate_tokens(text):
            return False
        e.state, e.content, e.tokens = EntryState.ECHOED, stub, tokens
        e.reason = (
            f"sent as a pointer to step {base.obs.step}'s read of {base.obs.target} above, "
            "which shows these lines as they are now"
        ) + (f"; {stale}" if stale else "")
        return True

    async def _sent_text(self, e: Entry) -> str | None:
        """The result an entry sends whole in this request, if it is in the window (its current
        one, when it is re-read), or None when it sends no result whole."""
        if _stubbed(e):
            return None
        if e.stale is None:
            return self._carried(e)[1]
        fresh, failure = await self._reread(e.obs, e.stale)
        if failure is not None:
            return None
        return self._carried(e)[1] if _unchanged(e.obs, fresh, self.cap) else fresh

    async def resolve(self, e: Entry) -> None:
        """Decide an in-window entry: superseded stub, fresh re-read, failure stub, or whole."""
        if self.settle(e):
            return
        obs = e.obs
        stale = e.stale
        if stale is None:
            await self._echo(e)
            return
        fresh, failure = await self._reread(obs, stale)
        again = "re-read" if obs.kind is ObsKind.READ else "re-run"
        pending = f"; step {e.by} made the same call, stubbed at the next rewrite"
        pending = pending if e.pending else ""
        if failure is None and _unchanged(obs, fresh, self.cap):
            # what changed did not change the result: it is current as recorded, and sent as
            # it was (the request's prefix holds), whole or capped as it was recorded
            self._carry(e)
            how = f"{stale}; {again}: the same result"
            if not (_quoting(e) and await self._quote(e, e.content, how)):
                e.reason += f"; {how}"
            e.reason += pending
            return
        if failure is None and _quoting(e) and await self._quote(e, fresh, f"{stale}; {again} now"):
            e.reason += pending
            return
        if failure is None:
            e.decide(
                EntryState.REFRESHED, _head(obs, stale) + fresh, f"{stale}; {again} now{pending}"
            )
            return
        e.decide(
            EntryState.REFRESH_FAILED,
            refresh_failed_stub(obs, stale, failure),
            f"{stale}; {again} failed: {failure}",
        )

    async def _reread(self, obs: Observation, stale: str) -> tuple[str, str | None]:
        """Returns (the current result, failure)."""
        if obs.call_id in self.refreshed:
            return self.refreshed[obs.call_id]
        result: tuple[str, str | None]
        if self.refresh is None:
            result = ("", "nothing can re-read files in this context")
        else:
            try:
                text = await self.refresh(obs)
            except RefreshFailed as exc:
                result = ("", str(exc) or "the re-read was refused")
            except OSError as exc:
                result = ("", f"the re-read failed: {exc}")
            else:
                head = len(_head(obs, stale))
                if _unchanged(obs, text, self.cap) or head + len(text) <= self.cap:
                    result = (text, None)
                elif len(text) > self.cap:
                    why = f"the current content no longer fits the entry cap ({len(text):,} chars"
                    result = ("", f"{why} > {self.cap:,})")
                else:  # it fits alone, not with the line that says it was re-read
                    why = f"the current content ({len(text):,} chars) and the line saying it was"
                    result = ("", f"{why} re-read ({head:,}) pass the entry cap ({self.cap:,})")
        self.refreshed[obs.call_id] = result
        return result


def _stubbed(e: Entry) -> bool:
    """Whether ``e`` is a stub wherever the window puts it: superseded (a pending one too,
    once what it saw changed on disk), shown by another result, or a remember result noted."""
    return (
        e.shown_by is not None
        or e.noted
        or (e.by is not None and (not e.pending or e.drift is not None))
    )


def _echoing(e: Entry) -> bool:
    """Whether ``e`` may be sent as a difference from its base: the base is still pending."""
    return e.echo is not None and not e.no_echo and e.echo.pending


def _quoting(e: Entry) -> bool:
    """Whether ``e`` may be sent as a pointer into the read it quotes."""
    return e.quotes is not None and not e.no_echo


def _pending(e: Entry) -> None:
    if e.pending:  # superseded but current: stubbed at the next rewrite (``plan.py``)
        again = "read these lines again" if e.covered else "made the same call"
        e.reason += f"; step {e.by} {again}, stubbed at the next rewrite"


def _head(obs: Observation, stale: str) -> str:
    """The line over a stale result sent as it is now: why it was read (run) again."""
    again = "re-read" if obs.kind is ObsKind.READ else "re-run"
    return f"[step {obs.step}'s {obs.kind.value} {again} now: {stale}]\n"


def _unchanged(obs: Observation, current: str, cap: int) -> bool:
    """Whether the current result is the recorded one, whole, within this request's cap."""
    return current == obs.text and len(current) <= cap

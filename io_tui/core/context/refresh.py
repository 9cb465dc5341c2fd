"""What an in-window entry carries, re-reading stale reads (DESIGN §3.2, step 4).

A read followed by a write to its path is never sent stale: it is re-read through the injected
``Refresher`` (the run loop's, which goes through the same policy and workspace containment as
any read). If that fails, a stub names the write and the reason.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from io_tui.core.context.live import Entry
from io_tui.core.context.manifest import EntryState
from io_tui.core.context.stubs import how_to_get_back, refresh_failed_stub
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import Observation, bound_keeps, bound_text


class RefreshFailed(Exception):
    """A stale read could not be re-read; ``str(exc)`` says why (policy, gone, too large)."""


Refresher = Callable[[Observation], Awaitable[str]]


class Resolver:
    """Decides in-window entries for one build; each stale read is re-read at most once (a
    second fit reuses it)."""

    def __init__(self, cap: int, refresh: Refresher | None) -> None:
        self.cap = cap
        self.refresh = refresh
        self.refreshed: dict[str, tuple[str, str | None]] = {}  # call id -> (text, failure)

    def settle(self, e: Entry) -> bool:
        """Decide an in-window entry that needs no re-read: superseded stub, carried whole
        (``full``) or cut to the entry cap (``capped``). False for a stale read: ``resolve`` it."""
        if e.by is not None:
            e.to_stub()
            return True
        if e.stale_by is not None:
            return False
        carried = e.carried
        if carried is None or carried[0] != self.cap:  # decided once per classification
            obs = e.obs
            if len(obs.text) <= self.cap:
                content, reason = obs.text, "carried whole"
            else:
                content = bound_text(obs.text, self.cap, how_to_get_back(obs))
                kept, total = bound_keeps(len(obs.text), self.cap), len(obs.text)
                reason = f"cut to the entry cap ({self.cap:,} chars): {kept:,} of {total:,} kept"
            carried = e.carried = (self.cap, content, reason, estimate_tokens(content))
        _, e.content, e.reason, e.tokens = carried
        e.state = EntryState.FULL if len(e.obs.text) <= self.cap else EntryState.CAPPED
        return True

    async def resolve(self, e: Entry) -> None:
        """Decide an in-window entry: superseded stub, fresh re-read, failure stub, or whole."""
        if self.settle(e):
            return
        obs = e.obs
        assert e.stale_by is not None
        fresh, failure = await self._reread(obs, e.stale_by)
        wrote = f"step {e.stale_by} wrote {obs.target} after this read"
        if failure is None:
            e.decide(EntryState.REFRESHED, fresh, f"{wrote}; re-read now")
            return
        e.decide(
            EntryState.REFRESH_FAILED,
            refresh_failed_stub(obs, e.stale_by, failure),
            f"{wrote}; re-read failed: {failure}",
        )

    async def _reread(self, obs: Observation, stale_by: int) -> tuple[str, str | None]:
        """Returns (content, failure)."""
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

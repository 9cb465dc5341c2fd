"""A fork's first request: the step it left from, exactly as that step's request was recorded.

The stored request is what was sent (``store/requests.py``: messages and manifest as the
context engine made them), so a fork reads it rather than rebuilding it: the same messages,
memory block and tool results, byte for byte, and the same prompt-cache key, so a provider's
cache of that prefix is reused. An operator's new instruction is one more message after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from io_tui.core.providers.messages import Message
from io_tui.core.store import Store
from io_tui.core.store.runs import RunRow


class PinnedMissing(LookupError):
    """The step a fork left from has no recorded request to start from."""


@dataclass(frozen=True, slots=True)
class PinnedRequest:
    """The recorded request a fork's first step sends again (``step``: the fork's step)."""

    step: int
    messages: tuple[Message, ...]
    manifest: dict[str, Any]
    source: dict[str, Any]  # the run, step and request id it was recorded as
    cache_key: str | None  # the key it was sent with (None: recorded before keys were kept)
    ceiling_tokens: int
    est_tokens: int
    frame_tokens: int

    @property
    def stable_messages(self) -> int:
        boundary = self.manifest.get("boundary") or {}
        return int(boundary.get("stable_messages", 0))


async def pinned_request(store: Store, fork: RunRow) -> PinnedRequest:
    """The request ``fork``'s first step sends: its parent's at ``fork_step``."""
    assert fork.forked_from is not None and fork.fork_step is not None
    row = await store.trace.answered_request(fork.forked_from, fork.fork_step)
    if row is None:
        raise PinnedMissing(
            f"run {fork.forked_from} recorded no request at step {fork.fork_step} to fork from"
        )
    return PinnedRequest(
        step=fork.fork_step,
        messages=tuple(Message.from_json(m) for m in row.messages),
        manifest=row.manifest,
        source={"run_id": row.run_id, "step": row.step, "request_id": row.id},
        cache_key=row.manifest.get("cache_key"),
        ceiling_tokens=row.ceiling_tokens,
        est_tokens=row.est_tokens,
        frame_tokens=row.frame_tokens,
    )

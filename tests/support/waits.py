"""Explicit waits for tests: until a condition holds, never a fixed delay. The conditions live
outside the test's loop (a file a child process writes, /proc), so there is no event to await."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from textual.pilot import Pilot

POLL_S = 0.02


async def until(condition: Callable[[], object], what: str, timeout_s: float = 20.0) -> None:
    """Return as soon as ``condition()`` is true (checked every ``POLL_S``); fail naming
    ``what`` after ``timeout_s``."""
    try:
        async with asyncio.timeout(timeout_s):
            while not condition():  # noqa: ASYNC110 - nothing in this loop can set an Event
                await asyncio.sleep(POLL_S)
    except TimeoutError:
        raise AssertionError(f"gave up waiting for {what} after {timeout_s:g}s") from None


async def until_app(pilot: Pilot[Any], condition: Callable[[], object], what: str,
                    timeout_s: float = 30.0) -> None:  # fmt: skip
    """``until`` for a condition a Textual app makes true: between checks the pilot pauses, so
    the app processes its messages and repaints."""
    try:
        async with asyncio.timeout(timeout_s):
            while not condition():
                await pilot.pause(0.05)
    except TimeoutError:
        raise AssertionError(f"gave up waiting for {what} after {timeout_s:g}s") from None

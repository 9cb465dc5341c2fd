"""When to try again and how long to wait first.

Backoff is exponential with "equal jitter" (half fixed, half random) so a crowd of clients that
failed together does not return together. A server's Retry-After wins over our own schedule;
one that asks for longer than ``max_retry_after_s`` ends the retries instead of stalling a run,
and the caller (or a fallback provider) decides what to do. ``sleep`` and ``jitter`` are
injectable so tests neither wait nor depend on chance.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay_s: float = 0.5
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0
    sleep: Sleep = asyncio.sleep
    jitter: Callable[[], float] = random.random

    def delay(self, retry: int, retry_after: float | None) -> float | None:
        """Seconds to wait before retry number ``retry`` (1-based), or None to give up."""
        if retry >= self.max_attempts:
            return None
        if retry_after is not None:
            return retry_after if retry_after <= self.max_retry_after_s else None
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** (retry - 1))
        return ceiling / 2 + ceiling / 2 * self.jitter()


def parse_retry_after(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``retry-after``.

    ``retry-after`` is either a number of seconds or an HTTP date; a date in the past means
    "now". Anything unparseable is ignored rather than trusted.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())

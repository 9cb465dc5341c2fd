"""What each request costs with prompt caching, beside re-sending everything: a run's meter.

A provider bills the prefix it cached from the previous request at a fraction of the price
(``CachePrices``; ../shared/CONTEXT-COST.md). Each working request is priced as it was billed
where the provider reports its cache figures (Anthropic's cache reads and writes, OpenAI's
cached tokens, llama.cpp's reused prefix), else from its messages: the prefix identical to the
previous request's at the read price, the rest at the write price (``context/cache.py``).
Beside it, naive accumulation for the same run so far: the first request, then every later
step's turn and results appended verbatim, so each naive request's prefix is the one before it
(always cached). The two running sums give the run's figure: "0.62× of re-sending everything".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.context.cache import request_cost
from io_tui.core.context.manifest import Assembly
from io_tui.core.context.turns import message_tokens
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import StepRecord
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import Usage
from io_tui.core.providers.messages import Message
from io_tui.core.text.prefix import common_prefix


@dataclass(frozen=True, slots=True)
class RequestCost:
    """One request's price with caching, in tokens of the provider's (``reported``) or the
    engine's estimate calibrated to them (``estimated``): ``read`` from the cache, ``written``
    to it, ``uncached`` (neither), the answer's ``output``; ``cost`` in uncached-token units.
    ``naive_*`` is what re-sending everything would have cost for this request, and the
    ``run_*`` sums are the run's so far, this request included."""

    source: str
    read: int
    written: int
    uncached: int
    output: int
    cost: float
    naive_tokens: int
    naive_cost: float
    run_cost: float
    run_naive_cost: float

    @property
    def ratio(self) -> float | None:
        """The run's cost so far against re-sending everything (None before any cost)."""
        return self.run_cost / self.run_naive_cost if self.run_naive_cost else None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "read": self.read,
            "written": self.written,
            "uncached": self.uncached,
            "output": self.output,
            "cost": round(self.cost, 1),
            "naive_tokens": self.naive_tokens,
            "naive_cost": round(self.naive_cost, 1),
            "run_cost": round(self.run_cost, 1),
            "run_naive_cost": round(self.run_naive_cost, 1),
            "ratio": None if self.ratio is None else round(self.ratio, 3),
        }


class CostMeter:
    """Prices a run's working requests as they are answered, and keeps the running sums."""

    def __init__(self, prices: CachePrices) -> None:
        self.prices = prices
        self._sent: tuple[Message, ...] = ()  # the last request answered
        self._naive = 0  # what the last naive request carried (estimated)
        self._counted = 0  # the steps of the history in ``_naive`` so far
        self.run_cost = 0.0
        self.run_naive_cost = 0.0

    def price(
        self,
        assembly: Assembly,
        history: Sequence[StepRecord],
        usage: Usage | None,
        factor: float,
        output: int,
    ) -> RequestCost:
        """``assembly``, sent after the run's steps ``history`` and answered with ``usage``
        (None: not reported; ``output``: the answer's tokens then), calibrated by ``factor``."""
        before = self._naive
        naive = self._naive_request(assembly, history)
        naive_cost = request_cost(naive, before, self.prices) * factor
        self.run_naive_cost += naive_cost
        cost = self._priced(
            assembly.messages, assembly.total_est_tokens, usage, factor, output,
            naive=(round(naive * factor), naive_cost),
        )  # fmt: skip
        self._sent = assembly.messages
        return cost

    def price_summary(
        self,
        messages: Sequence[Message],
        total: int,
        usage: Usage | None,
        factor: float,
        output: int,
        *,
        shared: bool,
    ) -> RequestCost:
        """A compaction summary's request (``context/summary.py``) of ``total`` estimated
        tokens: one that ``shared`` the last working request's prompt cache is priced as a
        working request against it; one of its own is not cached (uncached price). Re-sending
        everything writes no summary: the naive figures do not move."""
        return self._priced(tuple(messages), total, usage, factor, output, marked=shared)

    def _priced(
        self,
        messages: tuple[Message, ...],
        total: int,
        usage: Usage | None,
        factor: float,
        output: int,
        *,
        marked: bool = True,
        naive: tuple[int, float] = (0, 0.0),
    ) -> RequestCost:
        """A request's price: as the provider reported it, else estimated (``marked``: it asks
        the provider to cache it, what it did not read from the cache is written there), beside
        what re-sending everything would have cost for it (``naive``: tokens, cost)."""
        prices = self.prices
        kept = common_prefix(self._sent, messages)
        fresh = sum(message_tokens(m) for m in messages[kept:])
        cached = max(0, total - fresh) if kept else 0  # the tools are cached with the system
        if usage is not None and usage.cache_reported:
            read = usage.cache_read_tokens
            written = usage.cache_write_tokens or max(0, usage.prompt_tokens - read)
            uncached = max(0, usage.prompt_tokens - read - written)
            source = "reported"
        else:
            read = round(cached * factor) if cached >= prices.min_prefix_tokens else 0
            rest, source = round(total * factor) - read, "estimated"
            written, uncached = (rest, 0) if marked else (0, rest)
        cost = read * prices.read + written * prices.write + uncached * prices.uncached
        self.run_cost += cost
        done = usage.completion_tokens if usage is not None else output
        return RequestCost(
            source, read, written, uncached, done, cost, *naive, self.run_cost,
            self.run_naive_cost,
        )  # fmt: skip

    def _naive_request(self, assembly: Assembly, history: Sequence[StepRecord]) -> int:
        """What re-sending everything would carry now: the first request as io-tui sent it,
        then each step since, whole (its turn, operator lines and results verbatim)."""
        if not self._naive:
            self._naive = assembly.total_est_tokens
            self._counted = len(history)
            return self._naive
        for record in history[self._counted :]:
            self._naive += _step_tokens(record)
        self._counted = len(history)
        return self._naive


def _step_tokens(record: StepRecord) -> int:
    """One step sent whole: its operator lines, its turn, each result as recorded."""
    turn = Message("assistant", record.text, record.tool_calls)
    ops = sum(estimate_tokens(f"[operator] {m}") for m in record.operator_messages)
    return ops + message_tokens(turn) + sum(estimate_tokens(o.text) for o in record.observations)

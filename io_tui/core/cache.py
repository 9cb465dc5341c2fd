"""Prompt caching, measured: each request's cached prefix, what the request costs with caching
priced, and where its prefix broke (``../shared/CONTEXT-COST.md``).

A request is compared with the run's previous working request. Its *cached prefix* is the
longest run of leading items — the system message, the tool schemas, then the messages —
identical byte for byte after serialization (``message_key``). Tokens in it cost the read price;
the rest the write price. A request *rewrites the prefix* when its cached prefix is shorter than
the previous request: something the previous request sent was changed or dropped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.contract import CachePrices
from io_tui.core.prefix import common_prefix

_encode = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode


def message_key(message: Mapping[str, Any]) -> str:
    """A message (as ``Message.to_json`` gives it, or as the trace stores it) serialized the one
    way prefixes are compared: two messages are the same on the wire iff their keys are equal."""
    return _encode(message)


@dataclass(frozen=True, slots=True)
class Prefix:
    """How much of a request its predecessor already sent."""

    items: int  # leading items identical to the previous request's
    tokens: int  # what those items cost, in estimated tokens
    previous_items: int  # how many items the previous request had (0: there was none)

    @property
    def rewrote(self) -> bool:
        """The previous request had something this one changed or dropped."""
        return self.items < self.previous_items


def cached_prefix(
    previous: Sequence[str] | None, current: Sequence[str], tokens: Sequence[int]
) -> Prefix:
    """The cached prefix of a request whose items serialize to ``current`` (``tokens`` each),
    after a request whose items serialized to ``previous`` (None: the run's first request)."""
    if previous is None:
        return Prefix(0, 0, 0)
    n = common_prefix(previous, current)
    return Prefix(n, sum(tokens[:n]), len(previous))


def request_cost(total_tokens: int, cached_tokens: int, prices: CachePrices) -> float:
    """One request's input cost in uncached-token units: the cached prefix at the read price,
    the rest at the write price. A prefix shorter than the provider's minimum is not cached."""
    if cached_tokens < prices.min_prefix_tokens:
        cached_tokens = 0
    return cached_tokens * prices.read + (total_tokens - cached_tokens) * prices.write

"""The rewrite plan: what a run's requests keep stable between planned rewrites (DESIGN §3.2).

Providers bill the prefix they cached from the previous request at a fraction of the price
(``CachePrices``: Anthropic reads a cached token at 0.1, writes one at 1.25). A request that
changes an earlier message throws away the cached prefix from there on, so the engine keeps
history append-only between rewrites and makes the optional ones in batches:

- a result superseded since the last rewrite, whose content is still current (a rerun of a
  command, a read of an unchanged file), stays carried whole, *pending*, until the next rewrite
  stubs it with every other pending one;
- the window's floor (the oldest step it carries) stays put while what it carries fits; when it
  no longer does, the window is cut ahead of the coming steps (``CUT_AHEAD`` of them, at most
  half the window), at a step boundary, so it does not move again soon. A request that rewrites
  anyway (``Plan.rewrite``) cuts ahead the same way when the coming steps would not fit, so the
  cut that was due soon rides on this rewrite instead of making one of its own;
- the memory block (right after the frame) is the one the last rewrite that reached it
  rendered: a note remembered since shows in its tool result until then.

A rewrite happens when a request would change an earlier message anyway (a stale read re-read,
a cut, a fold, a new ceiling: correctness never waits for the cache), and then every pending
rewrite is applied with it; or when the tokens the pending stubs save over the coming requests
outweigh the cached prefix they throw away (``worth_rewriting``) before the next rewrite that
must happen (the window filling, the run ending, or as often as forced rewrites came so far).
A fresh engine given the same plan sends exactly what a reused one sends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from io_tui.core.memory.notes import RenderedMemory
from io_tui.core.prices import CachePrices
from io_tui.core.providers.messages import Message

CUT_AHEAD = 10  # steps of room a forced cut of the window leaves for the coming ones


@dataclass(frozen=True, slots=True)
class Plan:
    """What the last request committed to. ``rewritten_at``: results superseded by steps
    before it were stubbed by the last rewrite (those superseded since are pending);
    ``floor``: the oldest step the window carries; ``memory``: the block the last rewrite
    rendered, at its ceiling; ``sent``: the last request's messages."""

    rewritten_at: int = 0
    floor: int = 0
    memory: tuple[int, RenderedMemory] | None = None
    sent: tuple[Message, ...] = ()
    requests: int = 0  # built so far, and how many of them had to rewrite (``forced``)
    forced: int = 0
    rewrite: bool = False  # this request rewrites anyway: the window is cut ahead now if due
    carried: frozenset[str] = frozenset()  # the call ids whose results the last request sent

    def rewriting(self, step: int, forced: bool = False, memory: bool = True) -> Plan:
        """The plan of a request that rewrites what steps before ``step`` superseded (every
        pending rewrite applied), and the memory block rendered again when the rewrite
        reaches it (``memory``)."""
        kept = None if memory else self.memory
        forced_now = self.forced + forced
        return Plan(step, self.floor, kept, requests=self.requests, forced=forced_now, rewrite=True)

    def until_forced(self) -> int:
        """How many requests a rewrite that must happen has come after, on average, so far:
        waiting that long for one costs only the tokens the pending stubs would save."""
        return (self.requests + 1) // (self.forced + 1)


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A request that changes what the request before it sent, and what that was worth.

    ``cause`` is ``planned`` (its savings were expected to repay it) or what forced it:
    ``window`` (the ceiling cut the window), ``fold`` (compaction), ``frame`` (a part of the
    frame was rebuilt), ``memory`` (the memory block was rendered again) or ``other``.
    ``kept_messages`` of the previous request are repeated (the cached prefix); the
    ``rewritten_tokens`` after them are written to the cache again, which costs ``price`` beyond
    appending (``rewritten_tokens × (write - read)``, in uncached-token units). Each later
    request carries ``saved_tokens`` fewer, so over the ``horizon`` of requests the run was
    expected to make before its next forced rewrite it saves ``expected`` (``saved_tokens ×
    read × horizon``). ``dropped`` names the results the previous request carried that this one
    stubs or leaves out. What it saved in fact is read off the trace once the run has gone on
    (``saved_by``)."""

    cause: str
    kept_messages: int
    rewritten_tokens: int
    price: float
    saved_tokens: int
    horizon: int
    expected: float
    read: float
    dropped: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "cause": self.cause,
            "kept_messages": self.kept_messages,
            "rewritten_tokens": self.rewritten_tokens,
            "price": round(self.price, 1),
            "saved_tokens": self.saved_tokens,
            "horizon": self.horizon,
            "expected": round(self.expected, 1),
            "read": self.read,
            "dropped": list(self.dropped),
        }


def saved_by(rewrite: dict[str, Any], requests_after: int) -> float:
    """What a stored rewrite (``Rewrite.to_json``) saved, in uncached-token units, once
    ``requests_after`` requests came after it before the next rewrite or the run's end."""
    return float(rewrite["saved_tokens"]) * float(rewrite["read"]) * requests_after


def extends(messages: tuple[Message, ...], sent: tuple[Message, ...]) -> bool:
    """Whether ``messages`` keep every message of ``sent`` as it was (only append)."""
    return len(messages) >= len(sent) and messages[: len(sent)] == sent


def worth_rewriting(saved: int, rewritten: int, horizon: int, prices: CachePrices) -> bool:
    """Whether stubbing ``saved`` tokens now pays for rewriting the ``rewritten`` tokens after
    the first message it changes: those are written again instead of read from the cache once,
    and each of the ``horizon`` coming requests reads ``saved`` tokens fewer."""
    return saved * prices.read * horizon >= rewritten * (prices.write - prices.read)

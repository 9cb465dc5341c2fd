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

from io_tui.core.context.turns import message_tokens
from io_tui.core.prices import CachePrices
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.text.heads import MEMORY_HEADER, collapse_steps, is_operator_line, summary_steps
from io_tui.core.text.prefix import common_prefix

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


# -- where a stored request's prefix broke, and why -------------------------------------------
#
# A stored request is what the trace holds for it (``io_tui.core.steering.trace``): its messages as
# sent, its manifest entries (each with its call id) and its sections. Each message is given a
# *part*: the frame section it is, the memory block, the summary, the collapse line, a step's
# turn, or one call's result. The first message that differs from the previous request's is
# explained by what happened to its part.

BECAME = {  # what happened to a result whose entry is now in this state
    "full": "is carried whole again",
    "capped": "was cut at the entry cap",
    "echoed": "was sent as the difference from an earlier result",
    "superseded": "became a stub",
    "dropped": "was left out with its step",
    "corrected": "went out of date (its correction follows)",
    "elided": "became a stub",
    "collapsed": "was collapsed into one line",
    "summary": "was folded into the summary",
}
STILL = {  # what a result still is whose entry kept its state but changed its text
    "full": "carried whole",
    "capped": "cut at the entry cap",
    "echoed": "a difference from an earlier result",
    "superseded": "a stub",
    "corrected": "a copy out of date, corrected after it",
    "elided": "a stub",
}


@dataclass(frozen=True, slots=True)
class Part:
    """What one message of a request stands for. ``key`` names it across requests."""

    key: str
    label: str
    entry: Mapping[str, Any] | None = None  # the manifest entry of a result


@dataclass(frozen=True, slots=True)
class PrefixBreak:
    """One request against the run's previous working request."""

    cached_messages: int  # leading messages identical to the previous request's
    cached_tokens: int  # their estimated tokens, with the tool schemas when the system is kept
    previous_messages: int  # how many messages the previous request had (0: none)
    broke_at: int | None  # the first message of the previous request not repeated; None: none
    why: str  # what happened there, in words ("" when nothing broke)

    def to_json(self) -> dict[str, Any]:
        return {
            "cached_messages": self.cached_messages,
            "cached_prefix_tokens": self.cached_tokens,
            "previous_messages": self.previous_messages,
            "broke_at": self.broke_at,
            "why": self.why,
        }


NO_PREVIOUS = PrefixBreak(0, 0, 0, None, "")  # the run's first request: nothing to reuse


def stored_tokens(message: Mapping[str, Any]) -> int:
    """A stored message's estimated tokens, as the context engine counts them."""
    calls = tuple(
        ToolCall(str(c.get("id", "")), str(c.get("name", "")), c.get("arguments") or {})
        for c in message.get("tool_calls") or ()
    )
    return message_tokens(Message(message["role"], message.get("content", ""), calls))


def tools_tokens(request: Mapping[str, Any]) -> int:
    return sum(s.get("est_tokens", 0) for s in request.get("sections", ()) if s["name"] == "tools")


def parts(request: Mapping[str, Any]) -> list[Part]:
    """The part each message of a stored request stands for."""
    frame = [
        s["name"]
        for s in request.get("sections", ())
        if s.get("fixed", True) and s["name"] != "tools" and not s.get("withheld")
    ]  # a withheld instruction file sent no message
    by_call = {e["call_id"]: e for e in request.get("entries", ()) if e.get("call_id")}
    out: list[Part] = []
    for index, m in enumerate(request["messages"]):
        content = m.get("content") or ""
        if index < len(frame):
            out.append(Part(f"frame:{frame[index]}", f"the frame's {frame[index]}"))
        elif m["role"] == "tool":
            entry = by_call.get(m.get("tool_call_id") or "")
            call = m.get("tool_call_id") or "?"
            out.append(Part(f"result:{call}", _entry_label(entry, call), entry))
        elif m["role"] == "assistant":
            steps = [
                by_call[c["id"]]["step"] for c in m.get("tool_calls") or () if c["id"] in by_call
            ]
            step = steps[0] if steps else None
            key = f"turn:{step}" if step is not None else f"turn:{index}"
            out.append(Part(key, f"step {step}'s turn" if step is not None else "a model turn"))
        elif content.startswith(MEMORY_HEADER):
            out.append(Part("memory", "the memory block"))
        elif summary_steps(content) is not None:
            out.append(Part("summary", "the compaction summary"))
        elif collapse_steps(content) is not None:
            out.append(Part("collapse", "the collapse line"))
        elif is_operator_line(content):
            out.append(Part(f"operator:{index}", "an operator message"))
        else:
            out.append(Part(f"user:{index}", "a user message"))
    return out


def _entry_label(entry: Mapping[str, Any] | None, call_id: str) -> str:
    if entry is None:
        return f"the result of call {call_id}"
    return f"step {entry['step']}'s {entry['kind']} of {entry['target']}"


def explain(
    previous: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    keys: tuple[Sequence[str], Sequence[str]] | None = None,
) -> PrefixBreak:
    """``current``'s cached prefix after ``previous`` (both as stored), where it broke and why.
    ``keys``: the two requests' message keys, when the caller already has them."""
    if previous is None:
        return NO_PREVIOUS
    before, after = keys or (
        [message_key(m) for m in previous["messages"]],
        [message_key(m) for m in current["messages"]],
    )
    n = common_prefix(before, after)
    messages = current["messages"]
    tokens = sum(stored_tokens(m) for m in messages[:n]) + (tools_tokens(current) if n else 0)
    if n == len(before):
        return PrefixBreak(n, tokens, len(before), None, "")
    return PrefixBreak(n, tokens, len(before), n, why(previous, current, n))


def why(previous: Mapping[str, Any], current: Mapping[str, Any], n: int) -> str:
    """Why message ``n`` of ``previous`` is not repeated at ``n`` in ``current``."""
    was = parts(previous)
    now = parts(current)
    p = was[n]
    c = now[n] if n < len(now) else None
    before_keys = {part.key for part in was}
    now_by_key = {part.key: part for part in now}
    if c is not None and c.key != p.key and c.key not in before_keys:
        return f"{c.label} was inserted before {p.label}"
    later = now_by_key.get(p.key)
    if p.key.startswith("result:"):
        entry = later.entry if later else _entry_in(current, p.key.removeprefix("result:"))
        return _result_change(p, entry)
    if later is None:
        if p.key.startswith("turn:") and p.key[5:].isdigit():
            return f"{p.label} was dropped: {_step_fate(current, int(p.key[5:]))}"
        return f"{p.label} was dropped"
    if p.key == "memory":
        return _memory_change(previous, current)
    if p.key.startswith("turn:"):
        return f"{p.label} was shortened: its results left the window"
    if c is not None and c.key != p.key:
        return f"{c.label} now comes before {p.label}"
    return f"{p.label} changed"


def _entry_in(request: Mapping[str, Any], call_id: str) -> Mapping[str, Any] | None:
    return next((e for e in request.get("entries", ()) if e.get("call_id") == call_id), None)


def _result_change(p: Part, entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return f"{p.label} is no longer carried"
    state, reason = entry.get("state", ""), entry.get("reason") or ""
    by = entry.get("superseded_by")
    if by is not None and f"step {by}" not in reason:
        reason = f"{reason} (step {by})" if reason else f"step {by}"
    if p.entry is not None and p.entry.get("state") == state:
        changed = f"{p.label} changed (still {STILL.get(state, state)})"
        return f"{changed}: {reason}" if reason else changed
    became = f"{p.label} {BECAME.get(state, f'became {state}')}"
    return f"{became}: {reason}" if reason else became


def _step_fate(request: Mapping[str, Any], step: int) -> str:
    states = sorted({e["state"] for e in request.get("entries", ()) if e.get("step") == step})
    fates = [BECAME.get(s, s).replace("was ", "were ", 1).replace("is ", "are ", 1) for s in states]
    return "its results " + ", ".join(fates) if fates else "it is no longer carried"


def _memory_change(previous: Mapping[str, Any], current: Mapping[str, Any]) -> str:
    before = set(previous.get("memory_keys") or ())
    after = set(current.get("memory_keys") or ())
    changes = [f"+{k}" for k in sorted(after - before)] + [f"-{k}" for k in sorted(before - after)]
    if changes:
        return f"the memory block changed: {' '.join(changes)}"
    return "the memory block changed: a note's text"


# -- hit rates --------------------------------------------------------------------------------


def usage_hit_rate(usage: Mapping[str, Any] | None) -> float | None:
    """The share of one request's prompt its provider reported reading from the cache, from
    its stored usage (``Usage.to_json``); None when the provider reported no cache figures."""
    if not usage or not usage.get("cache_reported") or not usage.get("prompt_tokens"):
        return None
    return float(usage.get("cache_read_tokens", 0)) / float(usage["prompt_tokens"])


def request_hit_rate(request: Mapping[str, Any]) -> tuple[float | None, str]:
    """One stored request's cached share of its prompt and where the figure comes from: the
    provider's usage (``"reported"``) where it reported cache figures, else the request's
    cached prefix over its estimated tokens (``"estimated"``; needs ``cache``, ``annotate``)."""
    reported = usage_hit_rate(request.get("usage"))
    if reported is not None:
        return reported, "reported"
    cache = request.get("cache")
    total = _whole(request)
    if not cache or not total:
        return None, "estimated"
    return cache["cached_prefix_tokens"] / total, "estimated"


def _whole(request: Mapping[str, Any]) -> int:
    """A stored request's prompt, estimated as its cached prefix is (``annotate``)."""
    cache = request.get("cache") or {}
    return int(cache.get("prompt_tokens_est") or request.get("est_tokens") or 0)


@dataclass(frozen=True, slots=True)
class RunCache:
    """A run's prompt-cache figures over its working requests."""

    requests: int
    rewrites: int  # requests whose prefix broke (the first request never does)
    hit_rate: float | None  # cached share of the prompt tokens; None without requests
    source: str  # "reported" (the provider's usage) or "estimated" (from the prefixes)


def run_cache(requests: Sequence[Mapping[str, Any]]) -> RunCache:
    """The hit rate from reported usage where every request has it, estimated from the
    prefixes otherwise. ``requests`` are stored requests carrying ``cache``
    (``annotate``) and ``usage``, oldest first; summary requests are skipped."""
    work = [r for r in requests if r.get("purpose", "work") == "work" and r.get("cache")]
    rewrites = sum(1 for r in work if r["cache"]["broke_at"] is not None)
    reported = [r["usage"] for r in work if r.get("usage") and r["usage"].get("cache_reported")]
    if work and len(reported) == len(work):
        prompt = sum(u["prompt_tokens"] for u in reported)
        read = sum(u.get("cache_read_tokens", 0) for u in reported)
        return RunCache(len(work), rewrites, read / prompt if prompt else None, "reported")
    total = sum(_whole(r) for r in work)
    cached = sum(r["cache"]["cached_prefix_tokens"] for r in work)
    return RunCache(len(work), rewrites, cached / total if total else None, "estimated")


def annotate(requests: Sequence[dict[str, Any]], before: Mapping[str, Any] | None = None) -> None:
    """Add ``cache`` to each stored request (oldest first): its cached prefix after the run's
    previous working request, where and why it broke, and the cache tokens the provider
    reported (None where it reported none). Summary requests are not in the chain. ``before``:
    the run's working request just before the first of ``requests``, when there is one."""
    previous: tuple[Mapping[str, Any], list[str]] | None = None
    if before is not None:
        previous = (before, [message_key(m) for m in before["messages"]])
    for request in requests:
        usage = request.get("usage") or {}
        reported = bool(usage.get("cache_reported"))
        figures = {
            "cache_read_tokens": usage.get("cache_read_tokens") if reported else None,
            "cache_write_tokens": usage.get("cache_write_tokens") if reported else None,
        }
        if request.get("purpose", "work") != "work":  # a one-off prompt: no prefix to compare
            request["cache"] = NO_PREVIOUS.to_json() | figures
            continue
        keys = [message_key(m) for m in request["messages"]]
        found = explain(previous[0], request, (previous[1], keys)) if previous else NO_PREVIOUS
        # the whole prompt counted as its cached prefix is (not the calibrated ``est_tokens``,
        # which leaves out tool schemas a server drops): the hit rate's denominator
        n = found.cached_messages
        rest = sum(stored_tokens(m) for m in request["messages"][n:])
        whole = found.cached_tokens + rest + (0 if n else tools_tokens(request))
        request["cache"] = found.to_json() | figures | {"prompt_tokens_est": whole}
        previous = (request, keys)

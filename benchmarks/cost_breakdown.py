"""Where io-tui's cost with caching goes on the real sessions, against naive-with-caching.

    .venv/bin/python benchmarks/cost_breakdown.py [--ceiling 64000] [--session NAME ...]
                                                  [--corrections]

Each session is replayed as ``real_sessions.py`` replays it; then every message of every
working request is priced as the request prices it (its prefix identical to the previous
request's at the read price, the rest at the write price: ``CONTEXT-COST.md``) and the price
is summed by what the message is: the frame, the agent's turns, a tool result sent as naive
sends it (``res:same(STATE)``, by its manifest state) or otherwise (``res:STATE``: echoed,
superseded, …), a correction by the call it makes again and the form it is sent in
(``corr:KIND:FORM``: ``whole``, ``diff``, ``renumber``, ``pointer``), the summary and other
user messages. ``(rewrite extra)`` is what the requests that rewrote the prefix paid beyond
reading those tokens from the cache (included in the rows above it); summary requests, priced
uncached, are not in the rows. Naive's requests are priced the same way, by frame, turn and
result. ``--corrections`` lists each correction the run made with its size.

This is how issue 28's round four found its cut: at 64k, where nothing forces a rewrite,
io-tui's requests are naive's plus its corrections, and on mini__pytest-5787 a whole-file read
corrected after each of a dozen edits was sent as its difference from the read each time,
every edit since repeated (``live._chained``).
"""

from __future__ import annotations

import argparse
import re
import shutil
from collections import Counter
from collections.abc import Callable, Sequence

from context_cost import Pricer, step_messages
from session_metrics import message_of
from session_replay import Replay, all_sessions, load, replay

from io_tui.core.prices import CachePrices
from io_tui.core.providers.messages import Message

CORRECTION = re.compile(r"\[correction of step \d+'s (\w+)")


def priced(
    pricer: Pricer, requests: Sequence[list[Message]], label: Callable[[int, int, Message], str]
) -> tuple[Counter[str], Counter[str]]:
    """Each label's price and plain tokens over ``requests``."""
    prices = pricer.prices
    cost: Counter[str] = Counter()
    plain: Counter[str] = Counter()
    previous: list[str] | None = None
    for i, messages in enumerate(requests):
        keys, tokens = pricer.items(messages)
        n = 0
        if previous is not None:
            while n < min(len(previous), len(keys)) and previous[n] == keys[n]:
                n += 1
        cached = sum(tokens[:n]) >= prices.min_prefix_tokens
        labels = [label(i, j, m) for j, m in enumerate(messages)]
        labels.insert(1, "frame")  # the tool schemas
        for j, (name, t) in enumerate(zip(labels, tokens, strict=True)):
            hit = cached and j < n
            cost[name] += t * (prices.read if hit else prices.write)
            plain[name] += t
            if not hit and previous is not None and j < len(previous):
                cost["(rewrite extra)"] += t * (prices.write - prices.read)
        previous = keys
    return cost, plain


def form(content: str) -> str:
    head = content.partition("\n")[0]
    if "is out of date in these lines" in head:
        return "diff"
    if "call above" in head:
        return "pointer"
    if "numbered now" in head or "renumbered as below" in head:
        return "renumber"
    return "whole"


def breakdown(r: Replay, corrections: bool) -> None:
    work = [q for q in r.trace["requests"] if q["purpose"] == "work"]
    tools = next(s["est_tokens"] for s in work[0]["sections"] if s["name"] == "tools")
    pricer = Pricer(tools, CachePrices())
    requests = [[message_of(m) for m in q["messages"]] for q in work]
    frame = requests[0][:2]
    per_step = {h.step: step_messages(h) for h in r.history}
    naive = [
        frame + [m for h in r.history if h.step < q["step"] for m in per_step[h.step]] for q in work
    ]
    recorded = {o.call_id: o.text for h in r.history for o in h.observations}
    states = [{e["call_id"]: e["state"] for e in q["entries"]} for q in work]

    def naive_label(i: int, j: int, m: Message) -> str:
        return "frame" if j < 2 else {"assistant": "turn", "tool": "result"}.get(m.role, "user")

    def label(i: int, j: int, m: Message) -> str:
        if j < 2:
            return "frame"
        if m.role == "assistant":
            return "turn"
        if m.role == "tool":
            state = states[i].get(m.tool_call_id or "", "?")
            same = recorded.get(m.tool_call_id or "") == m.content
            return f"res:same({state})" if same else f"res:{state}"
        found = CORRECTION.match(m.content)
        if found:
            return f"corr:{found[1]}:{form(m.content)}"
        return "user:" + m.content[:24].partition("\n")[0]

    io, io_plain = priced(pricer, requests, label)
    nv, _ = priced(pricer, naive, naive_label)
    total = sum(v for k, v in io.items() if not k.startswith("("))
    naive_total = sum(v for k, v in nv.items() if not k.startswith("("))
    print(f"\n{r.session.name} at {r.ceiling:,}: io-tui {total:,.0f}, naive+cache "
          f"{naive_total:,.0f} ({total / naive_total:.3f}; summary requests not counted)")  # fmt: skip
    print("  naive: " + ", ".join(f"{k} {v:,.0f}" for k, v in nv.most_common()))
    for name, cost in io.most_common():
        print(f"  io-tui {name:<36} cost {cost:>10,.0f}  plain {io_plain.get(name, 0):>10,}")
    if corrections:
        seen: dict[str, int] = {}
        for q, messages in zip(work, requests, strict=True):
            for m in messages:
                if CORRECTION.match(m.content) and m.content not in seen:
                    seen[m.content] = q["step"]
                    print(f"    at {q['step']:>3}: {len(m.content):>6,} chars  "
                          f"{m.content.partition(chr(10))[0][:150]}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ceiling", type=int, nargs="+", default=[64_000])
    parser.add_argument("--session", nargs="+", help=f"of: {', '.join(all_sessions())}")
    parser.add_argument("--corrections", action="store_true", help="list every correction")
    args = parser.parse_args()
    for ceiling in args.ceiling:
        for name in args.session or all_sessions():
            replayed = replay(load(name), ceiling)
            breakdown(replayed, args.corrections)
            shutil.rmtree(replayed.base, ignore_errors=True)


if __name__ == "__main__":
    main()

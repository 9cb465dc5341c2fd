"""Context cost on real agent sessions: public trajectories replayed through io-tui's CLI.

    .venv/bin/python benchmarks/real_sessions.py [--quick] [--ceiling 24000 64000]
                                                 [--session NAME ...] [--no-long]
                                                 [--json FILE] [--report FILE]

The sessions are in ``benchmarks/real_sessions/``: per session the repository at the
instance's base commit (``repo.tar.xz``, a ``git archive``) and ``session.json`` (the
provenance, the task, and the converted trajectory as a script for the scripted provider;
``session_convert.py`` converts, ``real_sessions/PROVENANCE.md`` says where each came from).
Each session is replayed at each ceiling on a fresh extraction (made a git repository at its
base commit, so the agents' ``git diff`` and ``git checkout`` work) with a fresh SQLite
store: ``io-tui run --provider scripted:… --context-max-tokens C --approve all``, started by
``snapshot_cli.py`` (the same CLI; it records the workspace's tree before each working
request), in a network namespace of its own (``unshare -n``: the sessions' reproduction
scripts and test suites try to reach hosts; nothing leaves the machine) and with pip
installs refused (``PIP_NO_INDEX``). The figures are then read back from the store (the
requests as sent, the steps) and the recorded trees. Besides the sessions as converted, a
300-step session is made from the longest one by running it again after ``git stash -u``
until 300 steps (``+xN``: the agent starts over and redoes its work). ``session_replay.py``
replays, ``session_metrics.py`` reads the requests for the figures below; ``--report FILE``
prints the tables of a ``--json`` run again.

Per session and ceiling (``CONTEXT-COST.md`` prices: Anthropic's by default):

- finished: the run ended ``finished`` having answered every turn of the script.
- stale: summed over the working requests, the tool results that carry a copy of lines of a
  file (a ``read_file`` result, its pointer or difference form taken back to the lines it
  stands for with ``stubs.apply_echo``, or a ``grep`` hit ``path:line:text``) where some line
  differs from that line of the file as it was when the request was sent, and no later tool
  result in the same request shows that line of that file as it is (a correction; a line now
  past the file's end, as gone: a later read asked for it, and its trailer counts the file's
  lines as they are, ``(lines 410-440 of 440)``). Copies
  printed by ``run_command`` (``sed -n`` through a pipe, ``grep -C``) are not counted: nothing
  says which file and lines they are.
- recall: for each step, the lines of files its action uses: the lines an ``edit_file``'s
  ``old`` spans, the range a ``read_file`` with offset or limit shows, the lines a
  ``sed -i`` addresses by number or by its ``s/X/`` pattern (the file as it was when the
  request was sent). A line is a probe when the agent has seen it as it is (its text, 8 or
  more characters stripped, is in a tool result the naive request carries); recall is the
  share of probes whose text is in the io-tui request that produced the step (in a tool
  result as it stands for, or in the agent's own turns). *fit*: the same over the requests
  whose oracle+turns (below) is within the ceiling; where it is over, the live content alone
  does not fit and some of it must be left out, so a miss there is the ceiling's, and one
  where it fits is the engine's choice.
- plain tokens: every request's system, tool schemas and messages (the engine's estimate),
  summary requests included; naive: the first request's frame, then every earlier step's
  turn and results verbatim; oracle+turns: the frame, only the live content (each file's
  lines any read showed, as they are now; the latest result of each distinct command and
  search) and the agent's own turns. The targets compare io-tui with both.
- cost with caching: each request's prefix identical to the previous request's at the read
  price, the rest at the write price (``context_cost.Pricer``; a summary request that shares
  the working request's cache priced against it, one of its own uncached: ``summary_costs``);
  naive+cache prices the naive requests the same way (append-only: its prefix always hits).
- ideal: oracle+turns priced with an ideal cache (``ideal_cost``), where leaving content out
  costs nothing, over naive+cache: each request writes only its growth over the one before
  (and at least the agent's newest turn) and reads the rest, at most the ceiling: about the
  least an engine that carries the live content can pay; one that pays less leaves some out.
- rewrites: the working requests whose cached prefix is shorter than their predecessor's, by
  the cause the trace gives (``core/context/cache.py``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from context_cost import Pricer, kind_of, step_messages, summary_costs
from session_metrics import (
    PROBE_CHARS,
    message_of,
    oracle,
    seen_by_tools,
    stale_count,
    used_lines,
    visible,
)
from session_replay import (
    Files,
    Replay,
    all_sessions,
    extended,
    isolation,
    load,
    replay,
    truncated,
)

from io_tui.core.context.cache import cached_prefix, request_cost
from io_tui.core.ledger import StepRecord
from io_tui.core.prices import CachePrices
from io_tui.core.providers.messages import Message

QUICK_STEPS = 30

# -- the figures of one replay ------------------------------------------------------------------


@dataclass
class Strategy:
    plain: int = 0
    cost: float = 0.0
    rewrites: int = 0
    stale: int = 0


@dataclass
class Figures:
    session: str
    system: str
    model: str
    ceiling: int
    steps: int
    requests: int
    finished: bool
    outcome: str
    seconds: float
    recall: float
    probes: int
    strategies: dict[str, Strategy]
    breaks: list[tuple[str, int]]
    summary_requests: int = 0
    long: bool = False  # made longer than the trajectory (``extended``)
    # recall over the requests whose oracle+turns fits the ceiling (None: not measured)
    fit_recall: float | None = None
    fit_probes: int = 0


def measure(r: Replay, prices: CachePrices) -> Figures:
    files = Files(r.snapshots)
    work = [q for q in r.trace["requests"] if q["purpose"] == "work"]
    summaries = [q for q in r.trace["requests"] if q["purpose"] != "work"]
    if len(work) != len(r.trees):
        raise SystemExit(f"{r.session.name}: {len(work)} working requests, {len(r.trees)} trees")
    tools_tokens = next(s["est_tokens"] for s in work[0]["sections"] if s["name"] == "tools")
    pricer = Pricer(tools_tokens, prices)
    requests = [[message_of(m) for m in q["messages"]] for q in work]
    frame = requests[0][:2]
    per_step = {h.step: step_messages(h) for h in r.history}

    def before(q: dict[str, Any]) -> list[StepRecord]:
        return [h for h in r.history if h.step < q["step"]]

    naive = [frame + [m for h in before(q) for m in per_step[h.step]] for q in work]
    oracles = [oracle(frame, before(q), tree, files) for q, tree in zip(work, r.trees, strict=True)]

    s = {name: Strategy() for name in ("io-tui", "naive", "naive+cache", "oracle+turns")}
    tally(pricer, requests, s["io-tui"])
    tally(pricer, naive, s["naive+cache"])
    s["naive"] = Strategy(s["naive+cache"].plain, s["naive+cache"].plain * prices.uncached)
    oracle_tokens = [pricer.items(o)[1] for o in oracles]
    oracle_sizes = [sum(tokens) for tokens in oracle_tokens]
    s["oracle+turns"].plain = sum(oracle_sizes)
    newest_turns = [tokens[-1] if len(o) > len(frame) else 0
                    for o, tokens in zip(oracles, oracle_tokens, strict=True)]  # fmt: skip
    s["oracle+turns"].cost = ideal_cost(oracle_sizes, newest_turns, r.ceiling, prices)
    summary_plain, summary_cost = summary_costs(r.trace["requests"], tools_tokens, prices)
    s["io-tui"].plain += summary_plain
    s["io-tui"].cost += summary_cost
    for name, sent in (("io-tui", requests), ("naive", naive)):
        s[name].stale = sum(stale_count(m, t, files) for m, t in zip(sent, r.trees, strict=True))

    hits = probes = fit_hits = fit_probes = 0
    for q, messages, tree, sent_naive, live in zip(
        work, requests, r.trees, naive, oracle_sizes, strict=True
    ):
        record = next((h for h in r.history if h.step == q["step"]), None)
        if record is None:
            continue
        lines = [x.strip() for c in record.tool_calls for x in used_lines(c, tree, files)]
        known = seen_by_tools(sent_naive)
        wanted = [x for x in lines if len(x) >= PROBE_CHARS and x in known]
        if wanted:
            shown = visible(messages)
            found = sum(x in shown for x in wanted)
            probes += len(wanted)
            hits += found
            if live <= r.ceiling:
                fit_probes += len(wanted)
                fit_hits += found

    breaks = Counter(kind_of(q["cache"]["why"]) for q in work if q["cache"]["broke_at"] is not None)
    if sum(breaks.values()) != s["io-tui"].rewrites:  # two readings of one definition
        raise SystemExit(f"{r.session.name}: the trace counts {sum(breaks.values())} prefix "
                         f"breaks, the benchmark {s['io-tui'].rewrites}")  # fmt: skip
    run = r.trace["run"]
    steps = len(r.history)
    finished = run.get("status") == "finished" and steps == r.session.steps
    return Figures(
        r.session.name, r.session.meta["system"], r.session.meta["model"], r.ceiling, steps,
        len(work), finished, str(run.get("status")), r.seconds,
        hits / probes if probes else 1.0, probes, s, breaks.most_common(), len(summaries),
        r.session.long, fit_hits / fit_probes if fit_probes else 1.0, fit_probes,
    )  # fmt: skip


def ideal_cost(
    sizes: Sequence[int], turns: Sequence[int], ceiling: int, prices: CachePrices
) -> float:
    """The oracle+turns requests (``sizes``, at most ``ceiling`` each) priced with an ideal
    cache, one where leaving content out costs nothing: each request writes only what it must
    (its growth over the request before, and at least the agent's newest turn, ``turns``,
    which no earlier request held) and reads the rest: about the least an engine that carries
    the live content can pay (a real cache also charges for what leaving out rewrites)."""
    cost, before = 0.0, 0
    for size, turn in zip(sizes, turns, strict=True):
        size = min(size, ceiling)
        written = min(size, max(size - before, turn))
        cost += request_cost(size, size - written, prices)
        before = size
    return cost


def tally(pricer: Pricer, requests: Sequence[list[Message]], into: Strategy) -> None:
    previous: list[str] | None = None
    for messages in requests:
        keys, tokens = pricer.items(messages)
        total = sum(tokens)
        prefix = cached_prefix(previous, keys, tokens)
        into.plain += total
        into.cost += request_cost(total, prefix.tokens, pricer.prices)
        into.rewrites += prefix.rewrote
        previous = keys


# -- reporting ----------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "—"


def report(ceiling: int, rows: Sequence[Figures]) -> None:
    print(f"\nceiling {ceiling:,}")
    print(
        f"{'session':<30} {'steps':>5} {'fin':>3} {'stale':>9} {'recall':>11} {'fit':>11} "
        f"{'io-tui plain':>12} {'/naive':>6} {'/orc+t':>6} "
        f"{'io-tui cost':>11} {'/naive+c':>8} {'rewrites':>8} {'ideal':>5}"
    )
    for f in rows:
        s = f.strategies
        io = s["io-tui"]
        print(
            f"{f.session:<30} {f.steps:>5} {'yes' if f.finished else 'NO':>3} "
            f"{io.stale:>4}/{s['naive'].stale:<4} {f.recall:>5.2f} ({f.probes:>3}) "
            f"{fit(f):>11} "
            f"{io.plain:>12,} {ratio(io.plain, s['naive'].plain):>6} "
            f"{ratio(io.plain, s['oracle+turns'].plain):>6} {io.cost:>11,.0f} "
            f"{ratio(io.cost, s['naive+cache'].cost):>8} {io.rewrites / f.requests:>8.0%} "
            f"{ratio(s['oracle+turns'].cost, s['naive+cache'].cost) if s['oracle+turns'].cost else '—':>5}"
        )
    real = [f for f in rows if not f.long]
    costs = sorted(cost_ratio(f) for f in real)
    if costs:
        print(
            f"cost / naive+cache over the {len(real)} real sessions: mean "
            f"{sum(costs) / len(costs):.2f}, median {costs[len(costs) // 2]:.2f}, "
            f"range {costs[0]:.2f}–{costs[-1]:.2f}"
        )
    ideal = sorted(f.strategies["oracle+turns"].cost / f.strategies["naive+cache"].cost
                   for f in real)  # fmt: skip
    if ideal and ideal[0] > 0:
        print(
            f"ideal (the live content, leaving out free) / naive+cache: mean "
            f"{sum(ideal) / len(ideal):.2f}, range {ideal[0]:.2f}–{ideal[-1]:.2f}"
        )
    print("targets: " + "  ".join(f"{'✓' if ok else '✗'} {what}" for what, ok in targets(rows)))
    print("prefix rewrites by cause (all sessions):")
    causes: Counter[str] = Counter()
    for f in rows:
        causes.update(dict(f.breaks))
    for why, n in causes.most_common(8):
        print(f"  {n:>5}  {why}")


def fit(f: Figures) -> str:
    return "—" if f.fit_recall is None else f"{f.fit_recall:.2f} ({f.fit_probes:>3})"


def cost_ratio(f: Figures) -> float:
    return f.strategies["io-tui"].cost / f.strategies["naive+cache"].cost


def targets(rows: Sequence[Figures]) -> list[tuple[str, bool]]:
    """Issue 28's targets at one ceiling, each over every session it names."""
    real = [f for f in rows if not f.long]
    long = [f for f in rows if f.long]

    def io(f: Figures) -> Strategy:
        return f.strategies["io-tui"]

    out = [
        ("finishes", all(f.finished for f in rows)),
        ("0 stale", all(io(f).stale == 0 for f in rows)),
        ("full recall", all(f.recall == 1.0 for f in rows)),
        ("≤ 1.0× naive", all(io(f).plain <= f.strategies["naive"].plain for f in rows)),
        (
            "≤ 1.1× oracle+turns",
            all(io(f).plain <= 1.1 * f.strategies["oracle+turns"].plain for f in rows),
        ),
        ("cost ≤ 1.0× naive+cache", all(cost_ratio(f) <= 1.0 for f in real)),
    ]
    if all(f.fit_recall is not None for f in rows):
        out.append(("full recall where the live content fits",
                    all(f.fit_recall == 1.0 for f in rows)))  # fmt: skip
    if real:
        out.append(("mean ≤ 0.85×", sum(map(cost_ratio, real)) / len(real) <= 0.85))
    if long:
        out.append((f"{long[0].steps} steps ≤ 0.5×", all(cost_ratio(f) <= 0.5 for f in long)))
    return out


def load_figures(path: Path) -> list[Figures]:
    """Figures a ``--json`` run wrote, to print again (``--report``)."""
    rows = json.loads(path.read_text())
    for row in rows:
        row["strategies"] = {k: Strategy(**v) for k, v in row["strategies"].items()}
        row["breaks"] = [tuple(b) for b in row["breaks"]]
    return [Figures(**row) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"each session's first {QUICK_STEPS} steps, no 300-step session")  # fmt: skip
    parser.add_argument("--ceiling", type=int, nargs="+", default=[24_000, 64_000])
    parser.add_argument("--session", nargs="+", help=f"of: {', '.join(all_sessions())}")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--no-long", action="store_true", help="leave out the 300-step session")
    parser.add_argument("--report", type=Path, help="print the tables of a --json file again")
    args = parser.parse_args()
    if args.report:
        saved = load_figures(args.report)
        for ceiling in dict.fromkeys(f.ceiling for f in saved):
            report(ceiling, [f for f in saved if f.ceiling == ceiling])
        return
    sessions = [load(n) for n in (args.session or all_sessions())]
    if args.quick:
        sessions = [truncated(s, QUICK_STEPS) for s in sessions]
    elif not args.no_long:
        sessions.append(extended(max(sessions, key=lambda s: s.steps)))
    prices = CachePrices()
    print(f"prices per input token: uncached {prices.uncached}, cache write {prices.write}, "
          f"cache read {prices.read}")  # fmt: skip
    if not isolation():
        print("warning: no network namespace (unshare -n) here; commands run unisolated")
    figures: list[Figures] = []
    for ceiling in args.ceiling:
        rows = []
        for session in sessions:
            replayed = replay(session, ceiling)
            rows.append(measure(replayed, prices))
            shutil.rmtree(replayed.base, ignore_errors=True)
            print(f"  {session.name} at {ceiling:,}: {rows[-1].seconds:.0f} s", file=sys.stderr)
        report(ceiling, rows)
        figures += rows
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=1) + "\n")


if __name__ == "__main__":
    main()

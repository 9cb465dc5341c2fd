"""What planned rewrites could have saved, in hindsight, on the real sessions (issue 28).

    .venv/bin/python benchmarks/rewrite_hindsight.py [--ceiling 64000] [--session NAME ...]
                                                     [--rows] [--pairs 8]

With prompt caching the engine keeps a run's requests append-only and makes an optional
rewrite (stubbing every *pending* result: superseded, or a corrected copy whose correction is
in the request) only when ``plan.worth_rewriting`` says the stubs repay the prefix written
again. This measures what such a rewrite would have saved at each request of a real session,
knowing the requests that followed.

Each session is replayed as ``real_sessions.py`` replays it (the CLI, a scripted provider).
Then the context engine is run again in this process over the steps the replay recorded, as
the run loop runs it (``Rerun``): the same step asked for with the same ceiling, the probe
reading the workspace from the tree the replay recorded before that request, the corrections
the replay made at each step's boundary made again as they were, and each compaction summary
the one the replay wrote for the same steps. It sends what the replay sent, request for
request (the first figure printed: a rerun that does not is no measure of anything). Then it
is run again once for each request k that has something pending, made to rewrite at k
(``ContextEngine._pays`` says yes there), and each run's working requests are priced as
``real_sessions.py`` prices them: a request's prefix identical to the previous request's at
the read price, the rest at the write price. The difference from the run as it was is what a
rewrite at k saves (negative) or costs, the summary requests left out. The best two rewrites
are looked for among the ``--pairs`` best single ones.

Per session: how often and why the run rewrote, the best rewrite and the best two, the
requests where the rule (its own reading: ``Build.pending`` and ``ContextEngine._savings``)
would have made one, and the best requests to rewrite at (``--rows``: all of them) with what a
rewrite there stubs (``pending``: the tokens those results carry), what it stops sending in
that request (``saved``: the rewrite at k also sends whole what was sent as a difference from
what it stubs, and leaves out the steps that die with them), what it writes again
(``rewritten``: of the previous request) and the cost change (``delta``); then the rule's
reading at k: the saving it counts, the tokens it would write again, its horizon. Every
figure is in uncached-token units at the run's prices (``CachePrices``).
"""

from __future__ import annotations

import argparse
import asyncio
import posixpath
import shutil
import subprocess
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from unittest.mock import patch

from context_cost import Pricer
from session_metrics import message_of
from session_replay import Replay, all_sessions, load, replay

import io_tui.core.context.build as build_module
from io_tui.core.context.build import Build
from io_tui.core.context.cache import cached_prefix, request_cost
from io_tui.core.context.compaction import fold
from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.live import LiveSteps
from io_tui.core.context.manifest import Assembly
from io_tui.core.context.summary import Summary
from io_tui.core.contract import TaskContract
from io_tui.core.ledger import Observation, ObsKind, Seen, StepRecord, content_digest
from io_tui.core.prices import CachePrices
from io_tui.core.providers.messages import Message
from io_tui.core.text.heads import summary_steps

CHANGERS = frozenset({ObsKind.WRITE, ObsKind.EXEC, ObsKind.MCP, ObsKind.AGENT})


# -- the workspace as the replay recorded it ----------------------------------------------------


class Disk:
    """The workspace before each working request, from the trees the replay recorded: what the
    engine's probe finds changed (``Workspace.changed``), each change dated to the end of the
    last tool run of the step that made it (``LiveSteps._cause`` names that run)."""

    def __init__(self, r: Replay, steps: Sequence[int]) -> None:
        self.git = ["git", "--git-dir", str(r.snapshots)]
        self.trees, self.steps = r.trees, steps
        self._listings: dict[str, dict[str, str]] = {}
        self._digests: dict[str, str] = {}
        self.ends = {
            h.step: max(o.ran_ns[1] for o in ran)
            for h in r.history
            if (ran := [o for o in h.observations if o.kind in CHANGERS and o.ran_ns[0]])
        }

    def digest(self, request: int, path: str) -> str | None:
        """``path``'s content digest before working request ``request``; None: no such file."""
        tree = self.trees[request]
        if tree not in self._listings:
            listing = subprocess.run(
                [*self.git, "ls-tree", "-r", "-z", tree], capture_output=True, check=True
            ).stdout.decode(errors="surrogateescape")
            entries = (e.split("\t", 1) for e in listing.split("\0") if e)
            self._listings[tree] = {p: meta.split()[2] for meta, p in entries}
        blob = self._listings[tree].get(posixpath.normpath(path))
        if blob is None:
            return None
        if blob not in self._digests:
            data = subprocess.run([*self.git, "cat-file", "blob", blob], capture_output=True)
            self._digests[blob] = content_digest(data.stdout)
        return self._digests[blob]

    def changed(self, request: int, seen: Collection[Seen]) -> dict[Seen, int | None]:
        out: dict[Seen, int | None] = {}
        for s in seen:
            now = self.digest(request, s.path)
            if now is None:
                out[s] = None
            elif s.size >= 0 and now != s.digest:
                out[s] = self._changed_at(request, s.path, now)
        return out

    def _changed_at(self, request: int, path: str, now: str) -> int:
        for before in range(request - 1, -1, -1):
            if self.digest(before, path) != now:
                return self.ends.get(self.steps[before], 0)
        return 0


# -- the engine run again -----------------------------------------------------------------------


@dataclass
class Reading:
    """What the rule read at one request: ``Build.pending`` and ``ContextEngine._savings``."""

    saved: int
    rewritten: int
    horizon: int
    pending: int  # the tokens of what a rewrite there stubs

    def fires(self, prices: CachePrices) -> bool:
        return self.saved > 0 and self.saved * prices.read * self.horizon >= self.rewritten * (
            prices.write - prices.read
        )


@dataclass
class Engine(ContextEngine):
    """The engine, made to rewrite at the steps in ``force``, keeping what its rule read."""

    force: frozenset[int] = frozenset()
    readings: dict[int, Reading] = field(default_factory=dict)

    def _savings(self, build: Build, step: int, plan: Any) -> tuple[int, int]:
        saved, horizon = super()._savings(build, step, plan)
        if step not in self.readings:  # its first build: a rewrite builds again
            stubbed = sum(e.tokens for e in _stubbed(build, step))
            self.readings[step] = Reading(saved, build.pending()[1], horizon, stubbed)
        return saved, horizon

    def _pays(self, build: Build, saved: int, horizon: int) -> bool:
        step = build.history[-1].step if build.history else 0
        return (step in self.force and any(_stubbed(build, step))) or super()._pays(
            build, saved, horizon
        )


def _stubbed(build: Build, step: int) -> Iterator[Any]:
    """The pending results in the window a rewrite asked at ``step`` stubs."""
    return (e for e in build.live.pending if e.owner.index >= build.out and (e.by or 0) < step)


class Rerun:
    """The replay's working requests made again by the engine in this process."""

    def __init__(self, r: Replay) -> None:
        self.replay = r
        self.work = [q for q in r.trace["requests"] if q["purpose"] == "work"]
        self.sent = [tuple(message_of(m) for m in q["messages"]) for q in self.work]
        self.records = {h.step: h for h in r.history}
        self.disk = Disk(r, [q["step"] for q in self.work])
        self.summaries = {
            steps[1]: m.content.partition("]\n")[2]
            for sent in self.sent
            for m in sent
            if m.role == "user" and (steps := summary_steps(m.content))
        }
        tools = next(s["est_tokens"] for s in self.work[0]["sections"] if s["name"] == "tools")
        self.prices = CachePrices()
        self.pricer = Pricer(tools, self.prices)
        self._request = 0

    def run(self, force: Collection[int] = ()) -> tuple[list[Assembly], dict[int, Reading]]:
        with self._recorded():
            return asyncio.run(self._run(frozenset(force)))

    async def _run(self, force: frozenset[int]) -> tuple[list[Assembly], dict[int, Reading]]:
        history = self.replay.history
        contract = TaskContract(
            self.replay.trace["run"]["goal"], Path("/ws"), max_steps=len(history) + 5
        )
        system = self.sent[0][0].content
        engine = Engine(Frame(system, (), contract), probe=self._probe, force=force)
        built = []
        for request, q in enumerate(self.work):
            self._request, step = request, q["step"]
            record = self.records.get(step)
            asked = StepRecord(
                step, "", operator_messages=record.operator_messages if record else ()
            )
            done = [h for h in history if h.step < step]
            built.append(await engine.build([*done, asked], ceiling_tokens=q["ceiling_tokens"]))
        return built, engine.readings

    async def _probe(self, seen: Collection[Seen]) -> Mapping[Seen, int | None]:
        return self.disk.changed(self._request, seen)

    @contextmanager
    def _recorded(self) -> Iterator[None]:
        """The corrections and the summaries the replay made, made again as it made them
        (``Build.run`` calls ``correct.correct`` and ``compaction.fold``)."""

        async def corrections(
            live: LiveSteps, start: int, step: int, cap: int, refresh: Any
        ) -> list[tuple[Observation, str]]:
            record = self.records.get(step)
            made = []
            for obs in record.corrections if record else ():
                if not live.knows(obs.call_id):  # not by the step's first build
                    live.correct([obs])
                    made.append((obs, obs.text))
            for e in live.uncorrected(start):  # the replay found these current again
                if e.by is None:
                    live.revalidate(e, tuple(self._now(s) for s in e.seen))
            return made

        async def folded(**fold_args: Any) -> Summary:
            text = self.summaries.get(fold_args["through_step"])
            if text is not None:
                return Summary(fold_args["through_step"], text)
            return await fold(**fold_args | {"summarize": None, "shared": None})  # the digest

        with (
            patch.object(build_module, "correct", corrections),
            patch.object(build_module, "fold", folded),
        ):
            yield

    def _now(self, s: Seen) -> Seen:
        digest = self.disk.digest(self._request, s.path)
        return s if s.size < 0 or digest is None else replace(s, digest=digest)

    def costs(self, built: Sequence[Sequence[Message]]) -> list[float]:
        out, previous = [], None
        for messages in built:
            keys, tokens = self.pricer.items(messages)
            prefix = cached_prefix(previous, keys, tokens)
            out.append(request_cost(sum(tokens), prefix.tokens, self.prices))
            previous = keys
        return out


# -- hindsight ----------------------------------------------------------------------------------


@dataclass
class Row:
    step: int
    pending: int
    saved: int
    rewritten: int
    delta: float
    rule: Reading


@dataclass
class Result:
    name: str
    ceiling: int
    requests: int
    same: int  # requests the rerun sent as the replay did
    cost: float
    made: list[tuple[int, str]]  # the rewrites the run made: step, cause
    rows: list[Row]
    fired: list[int]  # the steps the rule rewrote at (planned)
    best_two: tuple[float, int, int] | None


def hindsight(r: Replay, pairs: int) -> Result:
    rerun = Rerun(r)
    built, readings = rerun.run()
    same = sum(a.messages == s for a, s in zip(built, rerun.sent, strict=True))
    base = rerun.costs([a.messages for a in built])
    steps = [q["step"] for q in rerun.work]
    rows = []
    for k, step in enumerate(steps):
        reading = readings.get(step)
        if k == 0 or reading is None or reading.pending == 0 or built[k].rewrite is not None:
            continue  # nothing to stub, or the request rewrites anyway (and stubs it all)
        forced, _ = rerun.run({step})
        rewrite = forced[k].rewrite
        rows.append(
            Row(
                step,
                reading.pending,
                built[k].est_tokens - forced[k].est_tokens,
                rewrite.rewritten_tokens if rewrite else 0,
                sum(rerun.costs([a.messages for a in forced])) - sum(base),
                reading,
            )
        )
    best_two = None
    top = sorted(rows, key=lambda row: row.delta)[:pairs]
    for a in top:
        for b in top:
            if a.step < b.step:
                two, _ = rerun.run({a.step, b.step})
                planned = sum(x.rewrite is not None and x.rewrite.cause == "planned" for x in two)
                if planned < 2:
                    continue  # the second stubs nothing the first did not
                delta = sum(rerun.costs([x.messages for x in two])) - sum(base)
                if best_two is None or delta < best_two[0]:
                    best_two = (delta, a.step, b.step)
    made = [(s, a.rewrite.cause) for s, a in zip(steps, built, strict=True) if a.rewrite]
    fired = [s for s, cause in made if cause == "planned"]
    return Result(
        r.session.name, r.ceiling, len(built), same, sum(base), made, rows, fired, best_two
    )


def report(res: Result, every: bool, prices: CachePrices) -> None:
    made = ", ".join(f"{cause} at {s}" for s, cause in res.made) or "none"
    print(
        f"\n{res.name} at {res.ceiling:,}: {res.requests} working requests, cost {res.cost:,.0f} "
        f"(rerun in process: {res.same} of {res.requests} as the replay sent them); "
        f"rewrites: {made}"
    )
    if not res.rows:
        print("  nothing pending at any request")
        return
    best = min(res.rows, key=lambda row: row.delta)
    print(
        f"  best single rewrite: at {best.step}, {best.delta:+,.0f} ({best.delta / res.cost:+.1%})"
    )
    if res.best_two is not None:
        delta, a, b = res.best_two
        print(f"  best two:            at {a} and {b}, {delta:+,.0f} ({delta / res.cost:+.1%})")
    would = [row.step for row in res.rows if row.rule.fires(prices)]
    print(
        "  the rule rewrote at: "
        + (", ".join(map(str, res.fired)) or "none")
        + "; its reading says a rewrite pays at: "
        + (", ".join(map(str, would)) or "none")
    )
    shown = res.rows if every else sorted(sorted(res.rows, key=lambda row: row.delta)[:5],
                                           key=lambda row: row.step)  # fmt: skip
    print(
        f"  {'at':>4} {'pending':>8} {'saved':>7} {'rewritten':>9} {'delta':>9} {'':>6}"
        f"   rule: {'saved':>6} {'rewritten':>9} {'horizon':>7}"
    )
    for row in shown:
        print(
            f"  {row.step:>4} {row.pending:>8,} {row.saved:>7,} {row.rewritten:>9,} "
            f"{row.delta:>+9,.0f} {row.delta / res.cost:>+6.1%}         {row.rule.saved:>6,} "
            f"{row.rule.rewritten:>9,} {row.rule.horizon:>7}"
        )


def summary(results: Sequence[Result]) -> None:
    print(
        f"\nin hindsight at {results[0].ceiling:,}: what the best planned rewrites change of the "
        "working requests' cost (negative: saves)"
    )
    print(f"  {'session':<26} {'cost':>9} {'best single':>22} {'best two':>25}  made")
    for res in results:
        best = min(res.rows, key=lambda row: row.delta, default=None)
        one = f"{best.delta:+,.0f} ({best.delta / res.cost:+.1%}) at {best.step}" if best else "—"
        two = "—"
        if res.best_two is not None:
            delta, a, b = res.best_two
            two = f"{delta:+,.0f} ({delta / res.cost:+.1%}) at {a},{b}"
        made = ", ".join(f"{cause}@{s}" for s, cause in res.made) or "none"
        print(f"  {res.name:<26} {res.cost:>9,.0f} {one:>22} {two:>25}  {made}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ceiling", type=int, nargs="+", default=[64_000])
    parser.add_argument("--session", nargs="+", help=f"of: {', '.join(all_sessions())}")
    parser.add_argument("--rows", action="store_true", help="every request, not the best five")
    parser.add_argument("--pairs", type=int, default=8, help="best singles to pair (default 8)")
    args = parser.parse_args()
    prices = CachePrices()
    for ceiling in args.ceiling:
        results = []
        for name in args.session or all_sessions():
            replayed = replay(load(name), ceiling)
            try:
                results.append(hindsight(replayed, args.pairs))
            finally:
                shutil.rmtree(replayed.base, ignore_errors=True)
            report(results[-1], args.rows, prices)
        summary(results)


if __name__ == "__main__":
    main()

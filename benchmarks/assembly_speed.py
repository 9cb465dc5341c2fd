"""Assembly speed: the median time to build one request over ledgers of growing length.

    .venv/bin/python benchmarks/assembly_speed.py [--repeat 7] [--cpu] [--json FILE]

Assembly runs before every step, so its cost must grow linearly with the ledger (targets: about
2 ms / 20 ms / 200 ms for 200 / 2,000 / 20,000 observations). Each ledger is a synthetic run (reads
of 30 files, greps, test runs and edits, one to three results a step) under a 24,000-token
ceiling. Four situations are timed:

- cold, no compaction: a fresh engine with compaction off, so every step is classified, the
  newest fitted, the older stubbed and collapsed, and every entry reported;
- cold, first fold: a fresh engine with compaction on and no summarizer, so the build also
  folds (the deterministic digest) — the first request after a resume without stored summaries;
- next step, without and with compaction: an engine that built the request before (over the
  ledger less its last step) builds the next one — the hot path of a running agent, where the
  summary and each step's rendered turn are reused.

Stale reads are refreshed from memory, so no I/O is timed. The collector runs as in the app,
but the garbage of the samples before is collected before each one: a fresh engine per sample
leaves the last one's (cyclic) state behind, which a run, keeping one engine, does not. Printed: the median milliseconds and
the ratio to the previous size (linear growth is 10× per 10× observations), wall clock and then
this process's CPU time (``--cpu``: on a shared, loaded host the wall clock also counts the time
other processes held the CPU).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.contract import Compaction, TaskContract
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.providers.messages import ToolCall

SIZES = (200, 2_000, 20_000)
CEILING = 24_000
BODY = "".join(f"{n:>5}│    value = compute(value, {n})  # a line of source\n" for n in range(40))


def ledger(observations: int) -> list[StepRecord]:
    """A run with ``observations`` results: reads, greps, tests and edits in a steady mix."""
    history: list[StepRecord] = []
    made = 0
    step = 0
    while made < observations:
        step += 1
        pairs = []
        for n in range(min(1 + step % 3, observations - made)):
            kind = (ObsKind.READ, ObsKind.GREP, ObsKind.EXEC, ObsKind.READ, ObsKind.WRITE)[
                (step + n) % 5
            ]
            target = {
                ObsKind.READ: f"src/mod_{(step * 7 + n) % 30}.py",
                ObsKind.WRITE: f"src/mod_{(step * 11) % 30}.py",
                ObsKind.GREP: f"pattern_{step % 40}",
                ObsKind.EXEC: "pytest",
            }[kind]
            call = ToolCall(f"c{step}_{n}", kind.value, {"path": target})
            text = BODY[: 400 + (step * 37 % 1_600)]
            pairs.append((call, Observation(step, call.id, kind.value, kind, target, text)))
            made += 1
        history.append(
            StepRecord(
                step,
                f"Step {step}: looking further.",
                tuple(c for c, _ in pairs),
                tuple(o for _, o in pairs),
            )
        )
    return history


def frame(compaction: bool) -> Frame:
    contract = TaskContract("speed", Path("."), compaction=Compaction(enabled=compaction))
    return Frame("system prompt", (), contract)


async def refresh(observation: Observation) -> str:
    return "fresh content"


CLOCK = time.perf_counter


def timed(
    loop: asyncio.AbstractEventLoop, make: Callable[[], Coroutine[Any, Any, Any]], repeat: int
) -> float:
    """Median ms of ``repeat`` awaits of fresh coroutines from ``make`` (set-up excluded)."""
    samples = []
    for _ in range(repeat):
        coro = make()
        gc.collect()  # the engines of earlier samples are cyclic garbage, not this build's cost
        started = CLOCK()
        loop.run_until_complete(coro)
        samples.append(CLOCK() - started)
    return statistics.median(samples) * 1_000


def measure(
    loop: asyncio.AbstractEventLoop, history: list[StepRecord], repeat: int
) -> dict[str, float]:
    def cold(compaction: bool) -> Callable[[], Coroutine[Any, Any, Any]]:
        def make() -> Coroutine[Any, Any, Any]:
            engine = ContextEngine(frame(compaction), refresh=refresh)
            return engine.build(history, ceiling_tokens=CEILING)

        return make

    def next_step(compaction: bool) -> Callable[[], Coroutine[Any, Any, Any]]:
        def make() -> Coroutine[Any, Any, Any]:
            engine = ContextEngine(frame(compaction), refresh=refresh)
            loop.run_until_complete(engine.build(history[:-1], ceiling_tokens=CEILING))
            return engine.build(history, ceiling_tokens=CEILING)

        return make

    return {
        "cold, no compaction": timed(loop, cold(False), repeat),
        "cold, first fold": timed(loop, cold(True), repeat),
        "next step, no compaction": timed(loop, next_step(False), repeat),
        "next step, compaction": timed(loop, next_step(True), repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cpu", action="store_true", help="time this process's CPU, not the wall")
    parser.add_argument("--json", type=Path, help="write the medians to this file")
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.process_time if args.cpu else time.perf_counter
    loop = asyncio.new_event_loop()
    results = {size: measure(loop, ledger(size), args.repeat) for size in SIZES}
    loop.close()
    situations = list(results[SIZES[0]])
    clock = "CPU" if args.cpu else "wall"
    print(f"median {clock} ms per build, ceiling {CEILING:,} tokens ({args.repeat} runs each)")
    print(f"{'observations':>12}  " + "  ".join(f"{s:>26}" for s in situations))
    previous: dict[str, float] | None = None
    for size in SIZES:
        cells = []
        for s in situations:
            ms = results[size][s]
            ratio = f" ({ms / previous[s]:.1f}×)" if previous else ""
            cells.append(f"{ms:>16.2f}{ratio:>10}")
        print(f"{size:>12,}  " + "  ".join(cells))
        previous = results[size]
    print("ratios: against the previous row; 10× observations, linear growth = about 10×")
    if args.json:
        figures = {f"{s}, {size:,}": results[size][s] for size in SIZES for s in situations}
        args.json.write_text(json.dumps({"figures": figures, "clock": clock}, indent=1))


if __name__ == "__main__":
    main()

"""What pausing the collector over a context build saves: paired, in one process.

    .venv/bin/python benchmarks/gc_pause.py [--repeat 7]

The cold build of ``assembly_speed.py`` (a fresh engine, compaction off) over its synthetic
ledgers, timed in this process's CPU with ``core/context/gcpause.py`` as shipped and with the pause
made a no-op, the two samples alternating so that both meet the same machine (on a shared host
the CPU time of one build varies by half from minute to minute). Before each sample the earlier
samples' engines are collected, as in ``assembly_speed.py``. Printed: the medians and the ratio
without / with the pause.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import time
from types import SimpleNamespace

from assembly_speed import CEILING, frame, ledger, refresh

from io_tui.core.context import gcpause
from io_tui.core.context.engine import ContextEngine

SIZES = (2_000, 20_000)
NO_PAUSE = SimpleNamespace(isenabled=gc.isenabled, disable=lambda: None, enable=lambda: None)


def sample(loop: asyncio.AbstractEventLoop, history: list, paused: bool) -> float:
    gcpause.gc = gc if paused else NO_PAUSE  # type: ignore[assignment]
    engine = ContextEngine(frame(False), refresh=refresh)
    gc.collect()
    started = time.process_time()
    loop.run_until_complete(engine.build(history, ceiling_tokens=CEILING))
    return (time.process_time() - started) * 1_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    print(f"median CPU ms of a cold build, ceiling {CEILING:,} tokens ({args.repeat} pairs)")
    print(f"{'observations':>12}  {'paused':>10}  {'not paused':>10}  {'ratio':>7}")
    for size in SIZES:
        history = ledger(size)
        sample(loop, history, True)  # warm the caches both share
        runs: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.repeat):
            for paused in (True, False):
                runs[paused].append(sample(loop, history, paused))
        on, off = (statistics.median(runs[p]) for p in (True, False))
        print(f"{size:>12,}  {on:>10.1f}  {off:>10.1f}  {off / on:>6.2f}×")
    gcpause.gc = gc  # type: ignore[assignment]
    loop.close()


if __name__ == "__main__":
    main()

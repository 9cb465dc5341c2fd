"""One figure for paired comparisons: the median CPU ms of N cold builds at SIZE observations.

    .venv/bin/python benchmarks/cold_build.py SIZE [N]

A cold build (a fresh engine, compaction off) over ``assembly_speed.ledger(SIZE)``, the garbage
of the samples before collected before each. Run it alternately from two checkouts on one venv
(``PYTHONPATH=<checkout>``, from inside it) and compare the medians pair by pair: on a shared
machine the pairs' ratio moves far less than either figure (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import sys
import time

import assembly_speed

from io_tui.core.context import ContextEngine


def main() -> None:
    size = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    history = assembly_speed.ledger(size)
    loop = asyncio.new_event_loop()
    samples = []
    for _ in range(count):
        engine = ContextEngine(assembly_speed.frame(False), refresh=assembly_speed.refresh)
        build = engine.build(history, ceiling_tokens=assembly_speed.CEILING)
        gc.collect()
        started = time.process_time()
        loop.run_until_complete(build)
        samples.append(time.process_time() - started)
    loop.close()
    print(f"{statistics.median(samples) * 1_000:.1f}")


if __name__ == "__main__":
    main()

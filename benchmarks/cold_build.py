"""One figure for paired comparisons: the median CPU ms of N cold builds at SIZE observations.

    .venv/bin/python benchmarks/cold_build.py SIZE [N]

A cold build (a fresh engine, compaction off) over ``assembly_speed.ledger(SIZE)``, timed as
``assembly_speed.timed`` times it, in CPU time. Run it alternately from two checkouts on one venv
(``PYTHONPATH=<checkout>``, from inside it) and compare the medians pair by pair: on a shared
machine the pairs' ratio moves far less than either figure (docs/BENCHMARKS.md).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Coroutine
from typing import Any

import assembly_speed

from io_tui.core.context.engine import ContextEngine


def main() -> None:
    size = int(sys.argv[1])
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    history = assembly_speed.ledger(size)

    def cold() -> Coroutine[Any, Any, Any]:
        engine = ContextEngine(assembly_speed.frame(False), refresh=assembly_speed.refresh)
        return engine.build(history, ceiling_tokens=assembly_speed.CEILING)

    assembly_speed.CLOCK = time.process_time
    loop = asyncio.new_event_loop()
    print(f"{assembly_speed.timed(loop, cold, count):.1f}")
    loop.close()


if __name__ == "__main__":
    main()

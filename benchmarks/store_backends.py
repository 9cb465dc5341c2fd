"""The store's hot paths on both backends: a step's commit, the run tree's read, a note's write.

    .venv/bin/python benchmarks/store_backends.py [--steps 300]

One process, one store each: a SQLite file in a temp dir, and a PostgreSQL database on a
throwaway local server (``tests/support/pg_cluster.py``: a unix socket, ``fsync`` on as a real
server has it). Each step commits what a run's step does (the step row, two observations, a
request, two events: ``RunRepo.commit_step``, one transaction); then the run tree's read of every
step (``TraceRepo.step_summaries``) and a memory write with its cap check (``NoteRepo.set``).
Prints medians and PostgreSQL's ratio to SQLite's; no assertions (DESIGN §6). Without the server
binaries only SQLite's column is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from pg_cluster import PG_BIN, Cluster  # noqa: E402

from io_tui.core.events import EventKind, RunEvent  # noqa: E402
from io_tui.core.ledger import Observation, ObsKind  # noqa: E402
from io_tui.core.providers.messages import ToolCall  # noqa: E402
from io_tui.core.store import Store  # noqa: E402
from io_tui.core.store.requests import RequestRecord  # noqa: E402
from io_tui.core.store.runs import StepCommit  # noqa: E402


def _commit(run_id: int, step: int) -> StepCommit:
    calls = tuple(ToolCall(f"c{step}-{i}", "read_file", {"path": f"f{i}.py"}) for i in range(2))
    observations = [
        (Observation(step, c.id, c.name, ObsKind.READ, f"f{i}.py", "x" * 400), "x" * 2_000)
        for i, c in enumerate(calls)
    ]
    request = RequestRecord(
        step, 1, "work", 24_000, 9_000, 1_000, 8_800, {"prompt_tokens": 8_800},
        [{"role": "user", "content": "y" * 4_000}], {"sections": [], "entries": []}, [],
        "scripted", "m",
    )  # fmt: skip
    events = [RunEvent(run_id, step, EventKind.TOOL_CALLED, {"call_id": c.id}) for c in calls]
    return StepCommit(step, "t", calls, {}, observations, [request], events, 100)


async def _measure(location: Path | str, steps: int) -> dict[str, float]:
    async with await Store.open(location) as store:
        run_id = await store.runs.create(
            goal="bench", workspace="/w", contract={}, provider={}, policy={}
        )
        commits = []
        for step in range(1, steps + 1):
            start = time.perf_counter()
            await store.runs.commit_step(run_id, _commit(run_id, step))
            commits.append(time.perf_counter() - start)
        reads = []
        for _ in range(20):
            start = time.perf_counter()
            await store.trace.step_summaries([run_id])
            reads.append(time.perf_counter() - start)
        notes = []
        for i in range(50):
            start = time.perf_counter()
            await store.notes.set(f"k{i}", "a note " * 20, "global", None)
            notes.append(time.perf_counter() - start)
    return {
        "step commit ms": statistics.median(commits) * 1000,
        f"tree read ({steps} steps) ms": statistics.median(reads) * 1000,
        "memory write ms": statistics.median(notes) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument(
        "--no-fsync", dest="fsync", action="store_false", help="the server as the tests run it"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = asyncio.run(_measure(Path(tmp) / "store.db", args.steps))
    pg: dict[str, Any] = {}
    if (PG_BIN / "initdb").exists():
        cluster = Cluster(Path(tempfile.mkdtemp(prefix="iotu-pg-", dir="/tmp")), fsync=args.fsync)
        cluster.start()
        try:
            pg = asyncio.run(_measure(cluster.new_database(), args.steps))
        finally:
            cluster.stop()
    print(f"{'':<28} {'SQLite':>9} {'PostgreSQL':>11} {'ratio':>7}")
    for name, value in sqlite.items():
        other = pg.get(name)
        tail = f"{other:>11.2f} {other / value:>6.1f}x" if other is not None else "  (no server)"
        print(f"{name:<28} {value:>9.2f} {tail}")


if __name__ == "__main__":
    main()

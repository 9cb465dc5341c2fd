"""ui_load's "harness alone" workload as a script that runs against old and new checkouts.

RUNS concurrent scripted runs of STEPS ``list_dir`` steps each, against a real SQLite store,
with a recording sink and no app: the harness's own rate. Imports fall back to the paths the
core had before its regroupings (``io_tui.core.run`` as one module, ``approvals`` and
``policy`` at the core's top level), so that ``benchmarks/harness_speed.py`` can run this one
file under each commit's ``PYTHONPATH``. Prints one JSON line: events, seconds, events/s, CPU
seconds (the process's, for the runs only), CPU ms per event (and the event loop's thread's
alone: the rest is the store's thread), and function calls when
``--calls`` is given (under cProfile, timed separately: the profiler slows the run).

Run: ``.venv/bin/python benchmarks/harness_workload.py [--size 8x250] [--calls]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from io_tui.core.contract import ContextBudget, TaskContract
from io_tui.core.providers.scripted import Script, ScriptedProvider
from io_tui.core.store import Store

try:
    from io_tui.core.authority.approvals import ApproveAll
    from io_tui.core.authority.policy import Policy
except ImportError:  # before the authority/ package
    from io_tui.core.approvals import ApproveAll  # type: ignore[no-redef]
    from io_tui.core.policy import Policy  # type: ignore[no-redef]
try:
    from io_tui.core.run.loop import Harness, start_run
except ImportError:  # run.py was one module
    from io_tui.core.run import Harness, start_run  # type: ignore[attr-defined,no-redef]


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def emit(self, event: Any) -> None:
        self.events.append(event)


def script(steps: int) -> Script:
    turn = {"text": "Looking around.", "tool_calls": [{"name": "list_dir", "arguments": {}}]}
    return Script.model_validate({"turns": [turn] * steps})


async def harness_alone(tmp: Path, runs: int, steps: int) -> dict[str, float]:
    workspace = tmp / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("hello\n")
    recorder = Recorder()
    async with await Store.open(tmp / "recorded.db") as store:
        started, cpu, loop = time.perf_counter(), time.process_time(), time.thread_time()
        await asyncio.gather(
            *[
                start_run(
                    Harness(
                        store=store,
                        provider=ScriptedProvider(script(steps)),
                        approver=ApproveAll(),
                        sink=recorder,
                        policy=Policy(),
                    ),
                    TaskContract(
                        goal=f"load {n}",
                        workspace=workspace,
                        max_steps=steps + 1,
                        context=ContextBudget(max_tokens=4_000),
                    ),
                )
                for n in range(runs)
            ]
        )
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
        loop = time.thread_time() - loop
    events = len(recorder.events)
    return {
        "events": events,
        "seconds": elapsed,
        "events_per_s": events / elapsed,
        "cpu_s": cpu,
        "cpu_ms_per_event": cpu * 1000 / events,
        # the event loop's thread alone; the rest is the store's thread (and any other)
        "loop_cpu_ms_per_event": loop * 1000 / events,
    }


def run_once(runs: int, steps: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="io-tui-harness-", dir=_tmp_root()) as name:
        return asyncio.run(harness_alone(Path(name), runs, steps))


def count_calls(runs: int, steps: int) -> int:
    import cProfile
    import pstats

    profile = cProfile.Profile()
    profile.enable()
    run_once(runs, steps)
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def _tmp_root() -> str | None:
    import os

    return os.environ.get("HARNESS_TMP") or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="8x250", help="RUNSxSTEPS (default 8x250)")
    parser.add_argument("--calls", action="store_true", help="also count function calls")
    args = parser.parse_args()
    runs, steps = (int(part) for part in args.size.lower().split("x"))
    out: dict[str, Any] = run_once(runs, steps)
    if args.calls:
        out["calls"] = count_calls(runs, steps)
    json.dump(out, sys.stdout)
    print()


if __name__ == "__main__":
    main()

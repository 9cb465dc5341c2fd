"""Inspector open: how long ``i`` takes to show one request of a long run.

A scripted run of ``INSPECTOR_STEPS`` steps (300 by default: reads, listings, greps and
writes over a small workspace, its context bounded so that entries are capped and stubbed) is
recorded once into a SQLite store. A headless app on that store then opens the inspector on the
run's last step, and on a step in its middle, ``ROUNDS`` times each: press ``i`` → the manifest
table filled; medians and the slowest are printed.
Run: ``.venv/bin/python benchmarks/inspector_open.py``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from io_tui.config import Settings  # noqa: E402
from io_tui.core.authority.approvals import ApproveAll  # noqa: E402
from io_tui.core.authority.policy import Policy  # noqa: E402
from io_tui.core.contract import ContextBudget, TaskContract  # noqa: E402
from io_tui.core.providers.scripted import Script, ScriptedProvider  # noqa: E402
from io_tui.core.run.loop import Harness, start_run  # noqa: E402
from io_tui.core.store import Store  # noqa: E402
from io_tui.ui.app import create_app  # noqa: E402
from io_tui.ui.screens.main import MainScreen  # noqa: E402
from io_tui.ui.testing import wait_until_idle  # noqa: E402
from io_tui.ui.widgets.table import Table  # noqa: E402

STEPS = int(os.environ.get("INSPECTOR_STEPS", 300))
ROUNDS = int(os.environ.get("INSPECTOR_ROUNDS", 7))
SIZE = (140, 44)


def turn(n: int) -> dict[str, Any]:
    calls = [
        {"name": "read_file", "arguments": {"path": f"src/m{n % 7}.py"}},
        {"name": "list_dir", "arguments": {"path": "src"}},
        {"name": "grep", "arguments": {"pattern": f"def f{n % 11}"}},
        {"name": "write_file", "arguments": {"path": f"out/n{n}.txt", "content": f"step {n}\n"}},
    ]
    return {"text": f"Step {n}: looking further.", "tool_calls": [calls[n % len(calls)]]}


def make_workspace(tmp: Path) -> Path:
    workspace = tmp / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "out").mkdir()
    for m in range(7):
        body = "".join(f"def f{i}(x):\n    return x + {i * m}\n\n" for i in range(40))
        (workspace / "src" / f"m{m}.py").write_text(body)
    return workspace


async def record(store_path: Path, workspace: Path) -> None:
    script = Script.model_validate({"turns": [turn(n) for n in range(STEPS)]})
    async with await Store.open(store_path) as store:
        harness = Harness(
            store=store, provider=ScriptedProvider(script), approver=ApproveAll(), policy=Policy()
        )
        contract = TaskContract(
            goal="walk the code", workspace=workspace, max_steps=STEPS + 1,
            context=ContextBudget(max_tokens=12_000),
        )  # fmt: skip
        result = await start_run(harness, contract)
    print(f"recorded run {result.run_id}: {result.steps} steps, {result.status}")


async def open_times(store_path: Path, step: int) -> list[float]:
    app = create_app(Settings(), store_path, poll_interval=None, harness="inline")
    times = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        for _ in range(ROUNDS):
            main = app.screen
            assert isinstance(main, MainScreen)
            main.select_run(1, step)
            await wait_until_idle(pilot)
            started = time.perf_counter()
            await pilot.press("i")
            await _filled(app, main)
            times.append(time.perf_counter() - started)
            await wait_until_idle(pilot)
            await pilot.press("escape")
            await wait_until_idle(pilot)
    return times


async def _filled(app: Any, main: MainScreen) -> None:
    """Until the inspector is up and its manifest table has rows (polled every millisecond)."""
    while app.screen is main or not app.screen.query_one("#entries", Table).row_count:  # noqa: ASYNC110
        await asyncio.sleep(0.001)


async def _filled(app: Any, main: MainScreen) -> None:
    """Until the inspector is up and its manifest table has rows: polled every millisecond."""
    while True:
        screen = app.screen
        if screen is not main and screen.query_one("#entries", Table).row_count:
            return
        await asyncio.sleep(0.001)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store_path = Path(tmp) / "store.db"
        await record(store_path, make_workspace(Path(tmp)))
        print(f"{'step':>6} {'median ms':>10} {'slowest ms':>11}")
        for step in (STEPS, STEPS // 2):
            times = await open_times(store_path, step)
            print(f"{step:>6} {statistics.median(times) * 1000:>10.0f} {max(times) * 1000:>11.0f}")


if __name__ == "__main__":
    asyncio.run(main())

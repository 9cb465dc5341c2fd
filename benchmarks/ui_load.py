"""UI load: a headless app ingesting 8 concurrent scripted runs of 250 steps each.

Prints events/s, p95 delay event→screen, keypress latency with a 10,000-step tree, time to first
paint as a ratio to an empty Textual app, and peak RSS. Run: ``.venv/bin/python benchmarks/ui_load.py``
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App  # noqa: E402

from io_tui.config import Settings  # noqa: E402
from io_tui.core.approvals import ApproveAll  # noqa: E402
from io_tui.core.contract import ContextBudget, TaskContract  # noqa: E402
from io_tui.core.policy import Policy  # noqa: E402
from io_tui.core.providers.scripted import Script, ScriptedProvider  # noqa: E402
from io_tui.ui.app import create_app  # noqa: E402
from io_tui.ui.screens.main import MainScreen  # noqa: E402
from io_tui.ui.state import StepView  # noqa: E402

RUNS = int(os.environ.get("UI_LOAD_RUNS", 8))
STEPS = int(os.environ.get("UI_LOAD_STEPS", 250))
TREE_STEPS = 10_000
SIZE = (140, 44)


def script() -> Script:
    turn = {"text": "Looking around.", "tool_calls": [{"name": "list_dir", "arguments": {}}]}
    return Script.model_validate({"turns": [turn] * STEPS})


async def first_paint(app: App[object]) -> float:
    started = time.perf_counter()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        return time.perf_counter() - started


async def load(tmp: Path) -> dict[str, float]:
    app = create_app(Settings(), tmp / "store.db", approver=ApproveAll(), poll_interval=None)
    out: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        workspace = tmp / "ws"
        workspace.mkdir()
        (workspace / "a.txt").write_text("hello\n")
        started = time.perf_counter()
        for n in range(RUNS):
            contract = TaskContract(
                goal=f"load {n}",
                workspace=workspace,
                max_steps=STEPS + 1,
                context=ContextBudget(max_tokens=4_000),
            )
            app.run_task(contract, ScriptedProvider(script()), Policy())
        while True:
            await pilot.pause(0.05)
            if not [w for w in app.workers if w.group == "runs" and w.is_running]:
                break
        await pilot.pause(0.3)
        elapsed = time.perf_counter() - started
        out["events"] = app.events_applied
        out["events_per_s"] = app.events_applied / elapsed
        delays = sorted(app.paint_delays)
        out["p95_ms"] = delays[int(len(delays) * 0.95)] * 1000
        # a 10,000-step tree: add synthetic steps to run 1 (keyed nodes), then time key presses
        screen = app.screen
        assert isinstance(screen, MainScreen)
        run = app.runs[1]
        for step in range(STEPS + 1, TREE_STEPS + 1):
            view = run.steps[step] = StepView(step, 100, ["list_dir"], committed=True)
            screen.upsert_step(run, view)
        screen.run_tree.focus()
        await pilot.pause(0.5)
        latencies = []
        for key in ["down"] * 20 + ["up"] * 10 + ["end", "home"]:
            t0 = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            latencies.append(time.perf_counter() - t0)
        out["key_ms_median"] = statistics.median(latencies) * 1000
        out["key_ms_p95"] = sorted(latencies)[int(len(latencies) * 0.95)] * 1000
        out["tree_nodes"] = len(screen.run_tree.step_nodes)
    return out


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="io-tui-bench-") as tmp:
        empty = statistics.median([await first_paint(App()) for _ in range(3)])
        ours = statistics.median(
            [
                await first_paint(
                    create_app(Settings(), Path(tmp) / f"fp{i}.db", poll_interval=None)
                )
                for i in range(3)
            ]
        )
        figures = await load(Path(tmp))
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("events ingested", f"{figures['events']:,.0f}", ""),
        ("events/s", f"{figures['events_per_s']:,.0f}", "≥ 2,000"),
        ("p95 event→screen", f"{figures['p95_ms']:.0f} ms", "< 100 ms"),
        (
            f"keypress, {figures['tree_nodes']:,.0f}-step tree (median)",
            f"{figures['key_ms_median']:.1f} ms",
            "< 50 ms",
        ),
        ("keypress p95", f"{figures['key_ms_p95']:.1f} ms", "< 50 ms"),
        (
            "first paint vs empty app",
            f"{ours / empty:.2f}× ({ours * 1000:.0f} / {empty * 1000:.0f} ms)",
            "≤ 1.5×",
        ),
        ("peak RSS", f"{rss_mb:.0f} MB", ""),
    ]
    print(f"{'measure':<40} {'value':<28} target")
    for name, value, target in rows:
        print(f"{name:<40} {value:<28} {target}")


if __name__ == "__main__":
    asyncio.run(main())

"""UI load: a headless app ingesting 8 concurrent scripted runs of 250 steps each.

Three ways of feeding the same workload, so that the UI's own speed is not confused with the
harness's:

- **harness alone**: the 8 runs against a real store with a recording sink and no app — the
  ceiling for any end-to-end figure (context assembly, SQLite commits, tools);
- **UI ingestion**: the recorded events replayed into a headless app (re-stamped as they are
  handed over) against a copy of the recorded store, so that transcript and gauge reads are
  real: once as fast as the app takes them (throughput), once paced at the target 2,000
  events/s (delay under that load);
- **end to end**: the app running the 8 runs itself (real tools, real store), started as the
  new-run dialog starts them: in its harness worker process (the default), and, beside it, in
  the app's own event loop (``harness="inline"``).

Delay event→screen is measured from an event's creation to the screen refresh that follows the
batch it arrived in. Then 10,000 steps go into run 1's tree (keyed nodes) and key presses are
timed on the screen's refreshes: press → the cursor painted, and press → the last refresh before
idle (transcript and gauges reloaded), beside a stock ``Tree`` of the same size measured the same
way. First paint is ``run_test`` to the first frame of the main screen (its layout, drawn as
the screen's own lines; widgets/skeleton.py), against the first frame of an empty
``textual.app.App``: medians of 15 rounds, the two apps started in turn. Beside it, the first
frame showing the main screen's panes, and the first idle (everything mounted).
Peak RSS is printed for the app's process (as the end-to-end run leaves it, before the other
parts) and for its harness worker process (``VmHWM`` as the runs end).

Run: ``.venv/bin/python benchmarks/ui_load.py [--size RUNSxSTEPS] [--only e2e]`` (default
``8x250``; ``50x500`` is a fleet's size: the waits scale with it; ``--only e2e``: the end-to-end
run in the worker process alone, with its peak RSS).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import json
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from textual.app import App, ComposeResult  # noqa: E402
from textual.screen import Screen  # noqa: E402
from textual.widgets import Footer, Header, Tree  # noqa: E402

from io_tui.config import HarnessMode, Settings  # noqa: E402
from io_tui.core.authority.approvals import ApproveAll  # noqa: E402
from io_tui.core.authority.policy import Policy  # noqa: E402
from io_tui.core.contract import ContextBudget, TaskContract  # noqa: E402
from io_tui.core.events import RunEvent  # noqa: E402
from io_tui.core.providers.scripted import Script, ScriptedProvider  # noqa: E402
from io_tui.core.run.loop import Harness, start_run  # noqa: E402
from io_tui.core.run.request import NewRunRequest  # noqa: E402
from io_tui.core.store import Store  # noqa: E402
from io_tui.ui.app import IoApp, create_app  # noqa: E402
from io_tui.ui.bridge import BridgeSink  # noqa: E402
from io_tui.ui.screens.main import MainScreen  # noqa: E402
from io_tui.ui.state import StepView  # noqa: E402

RUNS = int(os.environ.get("UI_LOAD_RUNS", 8))  # set by ``--size`` (these: its defaults)
STEPS = int(os.environ.get("UI_LOAD_STEPS", 250))
EVENTS_PER_STEP = 7  # about what a list_dir step emits: for the waits' scale
TREE_STEPS = 10_000
SIZE = (140, 44)
PACED_RATE = 2_000.0  # events/s: the target rate, for the delay measured under that load
KEYS = ["down"] * 20 + ["up"] * 10 + ["end", "home"]


def script() -> Script:
    turn = {"text": "Looking around.", "tool_calls": [{"name": "list_dir", "arguments": {}}]}
    return Script.model_validate({"turns": [turn] * STEPS})


def contract(n: int, workspace: Path) -> TaskContract:
    return TaskContract(
        goal=f"load {n}",
        workspace=workspace,
        max_steps=STEPS + 1,
        context=ContextBudget(max_tokens=4_000),
    )


def make_workspace(tmp: Path) -> Path:
    workspace = tmp / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("hello\n")
    return workspace


async def time_keys(
    pilot: Any, screen: Screen[Any], tree: Tree[Any]
) -> tuple[list[float], list[float]]:
    """Per key: press → the first screen refresh showing the moved cursor, and press → the last
    refresh before the app is idle again (debounced reads included). Measured on the screen's
    refreshes, not with Pilot's idle wait, which alone takes ≥ 60 ms per key."""
    refreshes: list[tuple[float, int]] = []
    real = screen._compositor_refresh

    def recording() -> None:
        real()
        refreshes.append((time.perf_counter(), tree.cursor_line))

    screen._compositor_refresh = recording  # type: ignore[method-assign]
    painted, settled = [], []
    for key in KEYS:
        before = tree.cursor_line
        refreshes.clear()
        started = time.perf_counter()
        await pilot.press(key)
        await pilot.pause()
        moved = [at for at, line in refreshes if line != before]
        if moved:
            painted.append(moved[0] - started)
            settled.append(refreshes[-1][0] - started)
    screen._compositor_refresh = real  # type: ignore[method-assign]
    return painted, settled


class TreeOnly(App[None]):
    """Baseline for key presses: a stock Tree of the same size, header and footer."""

    def compose(self) -> ComposeResult:
        yield Header()
        tree: Tree[None] = Tree("runs")
        tree.show_root = False
        node = tree.root.add("run 1", expand=True)
        for step in range(TREE_STEPS):
            node.add_leaf(f"step {step:>3} list_dir 100 tok")
        yield tree
        yield Footer()


async def baseline_keys() -> float:
    app = TreeOnly()
    async with app.run_test(size=SIZE) as pilot:
        tree = app.query_one(Tree)
        tree.focus()
        await pilot.pause(0.5)
        painted, _ = await time_keys(pilot, app.screen, tree)
    return statistics.median(painted)


@dataclasses.dataclass(frozen=True, slots=True)
class Startup:
    """Seconds from ``run_test`` to the first frame of the app's screen, to its first frame
    with its content (the main screen's panes; for an empty app, the same frame), and to the
    first idle (Pilot's ``pause``: every widget mounted)."""

    paint: float
    content: float
    idle: float


async def startup(app: App[Any], screen: type[Screen[Any]] = Screen) -> Startup:
    frames: list[float] = []
    content: list[float] = []
    real = Screen._compositor_refresh

    def recording(self: Screen[Any]) -> None:
        real(self)
        if type(self) is screen:
            frames.append(time.perf_counter())
            if getattr(self, "ready", True) and not content:
                content.append(frames[-1])

    Screen._compositor_refresh = recording  # type: ignore[method-assign]
    try:
        started = time.perf_counter()
        async with app.run_test(size=SIZE) as pilot:
            await pilot.pause()
            idle = time.perf_counter() - started
    finally:
        Screen._compositor_refresh = real  # type: ignore[method-assign]
    return Startup(frames[0] - started, content[0] - started, idle)


async def startups(
    make: Any, screen: type[Screen[Any]], rounds: int = 15
) -> tuple[Startup, Startup]:
    """Medians over ``rounds``, an empty app and io-tui's started in turn (so that the machine's
    drift touches both alike), after a warm-up of each (imports, first-use caches)."""
    await startup(App())
    await startup(make(), screen)
    empty: list[Startup] = []
    ours: list[Startup] = []
    for _ in range(rounds):
        empty.append(await startup(App()))
        ours.append(await startup(make(), screen))

    def median(runs: list[Startup]) -> Startup:
        return Startup(
            *(statistics.median(getattr(r, f) for r in runs) for f in ("paint", "content", "idle"))
        )

    return median(empty), median(ours)


class Recorder:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def emit(self, event: RunEvent) -> None:
        self.events.append(event)


async def harness_alone(tmp: Path) -> tuple[dict[str, float], list[RunEvent], Path]:
    """The runs with no app: the harness's own rate, and the events and store to replay."""
    path = tmp / "recorded.db"
    recorder = Recorder()
    workspace = make_workspace(tmp)
    async with await Store.open(path) as store:
        started = time.perf_counter()
        await asyncio.gather(
            *[
                start_run(
                    Harness(
                        store=store,
                        provider=ScriptedProvider(script()),
                        approver=ApproveAll(),
                        sink=recorder,
                        policy=Policy(),
                    ),
                    contract(n, workspace),
                )
                for n in range(RUNS)
            ]
        )
        elapsed = time.perf_counter() - started
    n = len(recorder.events)
    return {"events": n, "events_per_s": n / elapsed, "seconds": elapsed}, recorder.events, path


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))] if ordered else 0.0


def _limit_s(events: float) -> float:
    """How long a wait may take before the benchmark gives up (a crashed app must end it, not
    hang it): 60 s, or the workload's events at 200 events/s, whichever is longer."""
    return max(60.0, events / 200)


def _unbounded(app: IoApp) -> None:
    """Every paint delay kept: the app keeps its newest 100,000 (its memory stays bounded in a
    long session), fewer than a fleet's events."""
    app.paint_delays = collections.deque(app.paint_delays)


async def _until_painted(app: IoApp, total: int) -> None:
    # asyncio.sleep, not pilot.pause: a pause forces a screen refresh, which would add frames
    limit = _limit_s(total)
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if len(app.paint_delays) >= total:
            return
        await asyncio.sleep(0.01)
    raise RuntimeError(f"{len(app.paint_delays)} of {total} events painted after {limit:.0f} s")


def _peak_rss_mb(pid: int | str = "self") -> float:
    """A process's peak resident set (``VmHWM``), in MB; 0 when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


async def ui_replay(
    tmp: Path, events: list[RunEvent], recorded: Path, *, rate: float | None = None
) -> dict[str, float]:
    """Replay the recorded events into a headless app: as fast as it takes them (``rate``
    None: throughput), or paced at ``rate`` events a second (delay at a given load)."""
    store_path = tmp / f"replay-{rate}.db"
    shutil.copy(recorded, store_path)
    app = create_app(Settings(), store_path, approver=ApproveAll(), poll_interval=None)
    _unbounded(app)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.5)
        await app.workers.wait_for_complete()
        await pilot.pause(0.2)
        sinks: dict[int, BridgeSink] = {}
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        begin = loop.time()
        for n, event in enumerate(events):
            sink = sinks.get(event.run_id) or sinks.setdefault(
                event.run_id, BridgeSink(app.event_pump)
            )
            sink.emit(dataclasses.replace(event, at=time.time()))
            if rate is not None:
                if n % 20 == 19:  # 20 events per slot, then wait for the next slot
                    await asyncio.sleep(max(0.0, begin + (n + 1) / rate - loop.time()))
            elif n % RUNS == RUNS - 1:
                await asyncio.sleep(0)  # a producer that yields like the runs' awaits do
        await _until_painted(app, len(events))
        elapsed = time.perf_counter() - started
        return {
            "events": len(events),
            "events_per_s": len(events) / elapsed,
            "p95_ms": _p95(list(app.paint_delays)) * 1000,
        }


async def end_to_end(tmp: Path, harness: HarnessMode, *, tree: bool = True) -> dict[str, float]:
    """The app running the runs itself, started as the new-run dialog starts them: in a harness
    worker process (the default) or in the app's own loop. The worker is up before the clock
    starts, as it is once the app has painted its first frame."""
    app = create_app(
        Settings(),
        tmp / f"store-{harness}.db",
        approver=ApproveAll(),
        poll_interval=None,
        harness=harness,
    )
    _unbounded(app)
    script_path = tmp / "load-script.json"
    script_path.write_text(script().model_dump_json())
    out: dict[str, float] = {}
    async with app.run_test(size=SIZE) as pilot:
        await app.host.prepare()
        workspace = make_workspace(tmp)
        started, cpu = time.perf_counter(), time.process_time()
        for n in range(RUNS):
            app.start_request(
                NewRunRequest(
                    f"load {n}",
                    workspace,
                    provider=f"scripted:{script_path}",
                    max_steps=STEPS + 1,
                    context_max_tokens=4_000,
                )
            )
        deadline = time.monotonic() + _limit_s(RUNS * STEPS * EVENTS_PER_STEP)
        while time.monotonic() < deadline:
            if sum(run.status != "running" for run in app.runs.values()) >= RUNS:
                break
            await asyncio.sleep(0.05)
        worker = getattr(getattr(app.host, "client", None), "pid", None)
        out["worker_rss_mb"] = _peak_rss_mb(worker) if worker else 0.0
        endings = {(run.status, run.outcome) for run in app.runs.values()}
        assert endings == {("finished", "finished")}, f"the runs ended {endings}"
        await _until_painted(app, app.events_applied)
        elapsed = time.perf_counter() - started
        out["app_cpu_share"] = (time.process_time() - cpu) / elapsed
        out["events"] = app.events_applied
        out["events_per_s"] = app.events_applied / elapsed
        out["seconds"] = elapsed
        out["p95_ms"] = _p95(list(app.paint_delays)) * 1000
        out["p50_ms"] = statistics.median(app.paint_delays) * 1000
        out["app_rss_mb"] = _peak_rss_mb()
        if harness == "inline" or tree is False:
            return out
        # a 10,000-step tree: add synthetic steps to run 1 (keyed nodes), then time key presses
        screen = app.screen
        assert isinstance(screen, MainScreen)
        run = app.runs[1]
        for step in range(STEPS + 1, TREE_STEPS + 1):
            view = run.steps[step] = StepView(step, 100, ["list_dir"], committed=True)
            screen.upsert_step(run, view)
        screen.run_tree.focus()
        await pilot.pause(0.5)
        painted, settled = await time_keys(pilot, screen, screen.run_tree)
        out["key_ms_median"] = statistics.median(painted) * 1000
        out["key_ms_p95"] = _p95(painted) * 1000
        out["settle_ms_median"] = statistics.median(settled) * 1000
        out["tree_nodes"] = len(screen.run_tree.step_nodes)
    return out


def _e2e_rows(live: dict[str, float]) -> list[tuple[str, str, str]]:
    return [
        (
            "end to end (worker process): events/s",
            f"{live['events_per_s']:,.0f} ({live['events']:,.0f} in {live['seconds']:.1f} s)",
            "≥ 2,000",
        ),
        ("end to end (worker process): p95 e→s", f"{live['p95_ms']:.0f} ms", "< 100 ms"),
        ("end to end (worker process): p50 e→s", f"{live['p50_ms']:.0f} ms", ""),
        ("  the app's CPU share of the wall time", f"{live['app_cpu_share']:.0%}", ""),
        ("peak RSS: the app (after end to end)", f"{live['app_rss_mb']:.0f} MB", ""),
        ("peak RSS: the harness worker process", f"{live['worker_rss_mb']:.0f} MB", ""),
    ]


def _loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def _print(rows: list[tuple[str, str, str]]) -> None:
    print(f"{'measure':<40} {'value':<34} target")
    for name, value, target in rows:
        print(f"{name:<40} {value:<34} {target}")


async def main() -> None:
    global RUNS, STEPS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default=f"{RUNS}x{STEPS}", help="RUNSxSTEPS (default 8x250)")
    parser.add_argument(
        "--only", choices=("all", "e2e"), default="all", help="e2e: the worker-process run alone"
    )
    parser.add_argument("--tmp", default=None, help="where the stores go (default: the system's)")
    parser.add_argument("--json", type=Path, help="with --only e2e: write its figures here")
    args = parser.parse_args()
    RUNS, STEPS = (int(part) for part in args.size.lower().split("x"))
    print(f"ui_load {RUNS}x{STEPS}; load average before: {_loadavg()}")
    with tempfile.TemporaryDirectory(prefix="io-tui-bench-", dir=args.tmp) as name:
        tmp = Path(name)
        # the apps that run the runs first, on a fresh heap as a user's app has (the recorded
        # events kept for the replays below make every later collection slower)
        if args.only == "e2e":
            live = await end_to_end(tmp, "process", tree=False)
            _print([("workload", f"{RUNS} runs × {STEPS} steps", ""), *_e2e_rows(live)])
            if args.json:
                args.json.write_text(json.dumps({"size": args.size, **live}, indent=1))
            return
        live = await end_to_end(tmp, "process")
        inline = await end_to_end(tmp, "inline")
        empty, ours = await startups(
            lambda: create_app(Settings(), tmp / "fp.db", poll_interval=None), MainScreen
        )
        key_floor = await baseline_keys()
        harness, events, recorded = await harness_alone(tmp)
        replay = await ui_replay(tmp, events, recorded)
        paced = await ui_replay(tmp, events, recorded, rate=PACED_RATE)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = [
        ("workload", f"{RUNS} runs × {STEPS} steps", ""),
        ("harness alone: events/s", f"{harness['events_per_s']:,.0f}", "(ceiling for e2e)"),
        (
            "UI ingestion (replay): events/s",
            f"{replay['events_per_s']:,.0f} ({replay['events']:,.0f} events)",
            "≥ 2,000",
        ),
        ("UI ingestion: p95 event→screen, flooded", f"{replay['p95_ms']:.0f} ms", ""),
        (
            f"UI at {PACED_RATE:,.0f} ev/s: p95 event→screen",
            f"{paced['p95_ms']:.0f} ms (kept {paced['events_per_s']:,.0f} ev/s)",
            "< 100 ms",
        ),
        *_e2e_rows(live),
        (
            "  runs in the app's loop: events/s",
            f"{inline['events_per_s']:,.0f} ({inline['events']:,.0f} in {inline['seconds']:.1f} s)",
            "",
        ),
        ("  runs in the app's loop: p95 e→s", f"{inline['p95_ms']:.0f} ms", ""),
        (
            f"keypress → painted, {live['tree_nodes']:,.0f}-step tree (median)",
            f"{live['key_ms_median']:.1f} ms (stock Tree: {key_floor * 1000:.1f} ms)",
            "< 50 ms",
        ),
        ("keypress → painted p95", f"{live['key_ms_p95']:.1f} ms", "< 50 ms"),
        ("keypress → settled (median)", f"{live['settle_ms_median']:.1f} ms", ""),
        (
            "first paint vs empty app",
            f"{ours.paint / empty.paint:.2f}× ({ours.paint * 1000:.1f} / "
            f"{empty.paint * 1000:.1f} ms)",
            "≤ 1.5×",
        ),
        (
            "  panes painted vs empty app's first frame",
            f"{ours.content / empty.content:.2f}× ({ours.content * 1000:.0f} ms)",
            "",
        ),
        (
            "  all mounted (first idle) vs empty app",
            f"{ours.idle / empty.idle:.2f}× ({ours.idle * 1000:.0f} / {empty.idle * 1000:.0f} ms)",
            "",
        ),
        ("peak RSS: the benchmark's process, all parts", f"{rss_mb:.0f} MB", ""),
    ]
    _print(rows)


if __name__ == "__main__":
    asyncio.run(main())

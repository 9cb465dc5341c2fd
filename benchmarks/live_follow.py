"""Event → screen for a cockpit attached to one PostgreSQL store while `io-tui worker` processes
drain scripted runs (docs/BENCHMARKS.md, "Live: event → screen"; docs/SCALE-OUT.md, "Live").

A throwaway PostgreSQL server (``tests/support/pg_cluster.py``, fsync on); ``--runs`` scripted
runs on the queue (each ``--steps`` steps: a file listing, then an answer); the real app
(``create_app``, headless) attached to the store; then 1 and 2 worker processes
(``--until-empty``) drain the queue. For every event the app shows, the delay from the event's
time in the worker (its ``at``) to the frame that painted it (``IoApp.paint_delays``), in two
modes, in this process: **live** (LISTEN/NOTIFY, ``ui/live.py``) and **poll** (the same follower
with notifications off: a sweep every 2 s). Both clocks are this
machine's. A first, short round is not counted: it pays what the app imports on first use.

    .venv/bin/python benchmarks/live_follow.py [--runs 40] [--steps 4] [--workers 1 2]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from pg_cluster import PG_BIN, Cluster  # noqa: E402

IO_TUI = [sys.executable, "-m", "io_tui"]
POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\nread = "allow"\n'
POLL_S = 2.0


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "NO_COLOR"}


def start_worker(url: str) -> subprocess.Popen[bytes]:
    argv = [*IO_TUI, "worker", "--store", url, "--until-empty"]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())


def script(path: Path, steps: int) -> Path:
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"id": f"l{n}", "name": "list_dir", "arguments": {"path": "."}}]}
        for n in range(steps - 1)
    ]
    turns.append({"text": "done"})
    path.write_text(json.dumps({"model": "scripted", "turns": turns}))
    return path


async def enqueue(url: str, workspace: Path, scripts: list[Path], policy: Path) -> None:
    from io_tui.core import Policy, ScriptedProvider, Store, TaskContract, enqueue_run

    store = await Store.open(url)
    try:
        contract = TaskContract(goal="bench", workspace=workspace, max_steps=50)
        rules = Policy.load(policy)
        for s in scripts:
            await enqueue_run(store, contract, ScriptedProvider.from_file(s), rules)
    finally:
        await store.close()


async def stored_events(url: str) -> int:
    from io_tui.core import Store

    store = await Store.open(url)
    try:
        row = await store.db.fetchone("SELECT COUNT(*) FROM events")
        return int(row[0]) if row else 0
    finally:
        await store.close()


async def one_round(url: str, root: Path, args: argparse.Namespace, workers: int) -> list[float]:
    """The app attached, the queue filled, ``workers`` workers drain it; the delays painted."""
    from io_tui.config import Settings
    from io_tui.ui.app import create_app

    workspace = root / "ws"
    workspace.mkdir(exist_ok=True)
    policy = root / "policy.toml"
    policy.write_text(POLICY)
    scripts = [script(root / f"s{i}.json", args.steps) for i in range(args.runs)]
    app = create_app(Settings(ui={"harness": "inline"}), url, poll_interval=POLL_S)
    async with app.run_test(size=(140, 44)) as pilot:
        while app.main_screen() is None:
            await pilot.pause(0.05)
        await pilot.pause(0.5)  # attached: listening, its first read done
        await enqueue(url, workspace, scripts, policy)
        before = app.events_applied
        procs = [start_worker(url) for _ in range(workers)]
        while any(p.poll() is None for p in procs):
            await pilot.pause(0.1)
        # what the workers wrote reaches the screen: a sweep at the latest
        expected = await stored_events(url)
        deadline = time.monotonic() + 3 * POLL_S + 15
        while app.events_applied < expected and time.monotonic() < deadline:
            await pilot.pause(0.1)
        delays = list(app.paint_delays)
        shown = app.events_applied - before
        if shown < expected:
            print(f"  ({workers} workers: {shown} of {expected} events shown)", file=sys.stderr)
    return delays


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if not (PG_BIN / "initdb").exists():
        raise SystemExit(f"no PostgreSQL server binaries in {PG_BIN}")
    from io_tui.core.store.live import Live

    cluster = Cluster(Path(tempfile.mkdtemp(prefix="iotu-pg-", dir="/tmp")), fsync=True)
    cluster.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:  # warm: what the app imports on first use
            warm = argparse.Namespace(runs=2, steps=args.steps)
            asyncio.run(one_round(cluster.new_database(), Path(tmp), warm, 1))
        for workers in args.workers:
            for mode in ("poll", "live"):
                with tempfile.TemporaryDirectory() as tmp:
                    url = cluster.new_database()
                    if mode == "poll":  # the same follower, no notifications: a 2 s sweep
                        with mock.patch.object(Live, "notifies", property(lambda _: False)):
                            delays = asyncio.run(one_round(url, Path(tmp), args, workers))
                    else:
                        delays = asyncio.run(one_round(url, Path(tmp), args, workers))
                rows.append((workers, mode, delays))
    finally:
        cluster.stop()
    print(f"## event → screen: {args.runs} queued runs of {args.steps} steps, PostgreSQL")
    print("| workers | cockpit follows by | events shown | p50 ms | p95 ms | max ms |"
          " p95 vs 2 s poll |")  # fmt: skip
    print("|---|---|---:|---:|---:|---:|---:|")
    base: dict[int, float] = {}
    for workers, mode, delays in rows:
        if not delays:
            print(f"| {workers} | {mode} | 0 | - | - | - | - |")
            continue
        high = p95(delays)
        if mode == "poll":
            base[workers] = high
        ratio = f"{high / base[workers]:.3f}" if workers in base else "-"
        how = "LISTEN/NOTIFY" if mode == "live" else "a 2 s poll"
        print(
            f"| {workers} | {how} | {len(delays)} | {statistics.median(delays) * 1000:.0f} |"
            f" {high * 1000:.0f} | {max(delays) * 1000:.0f} | {ratio} |"
        )


if __name__ == "__main__":
    main()

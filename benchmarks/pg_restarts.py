"""A drain through PostgreSQL restarts (docs/BENCHMARKS.md, "Drain through restarts").

``--runs`` queued scripted runs of ``--steps`` steps each (every step a command that appends
``RUN:STEP`` to a log outside the workspace and sleeps ``--command-s``), drained by
``--workers`` ``io-tui worker --until-empty`` processes on a throwaway local PostgreSQL 15
while this process restarts the server (``pg_ctl stop -m fast``: every connection cut; down
``--down-s``; started again) at seeded random intervals of ``--every`` seconds (min max).

Counted: runs finished, runs not finished (each with its status and error), runs held for the
operator, commands run twice (a ``RUN:STEP`` twice in the log), commands never run, restarts,
and the wall time. The issue's figure: 10 runs × 30 steps, restarts every 5–20 s, every run
finished with no operator.

    .venv/bin/python benchmarks/pg_restarts.py [--runs 10] [--steps 30] [--workers 2]
        [--every 5 20] [--down-s 0.2] [--command-s 0.2] [--seed 7]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from pg_cluster import PG_BIN, Cluster  # noqa: E402

IO_TUI = [sys.executable, "-m", "io_tui"]
POLICY = '[defaults]\nexec = "allow"\n'


def script(path: Path, run: int, steps: int, log: Path, command_s: float) -> Path:
    turns: list[dict[str, object]] = []
    for step in range(1, steps + 1):
        code = f"echo {run}:{step} >> {log}; sleep {command_s}"
        call = {"id": f"c{step}", "name": "run_command", "arguments": {"argv": ["sh", "-c", code]}}
        turns.append({"tool_calls": [call]})
    turns.append({"text": "done"})
    path.write_text(json.dumps({"model": "scripted", "turns": turns}))
    return path


def enqueue(store: str, workspace: Path, scripts: list[Path], steps: int) -> list[int]:
    from io_tui.core import Policy, ScriptedProvider, Store, TaskContract, enqueue_run

    async def put() -> list[int]:
        opened = await Store.open(store)
        try:
            contract = TaskContract(goal="bench", workspace=workspace, max_steps=steps + 2)
            policy = Policy.from_json({"defaults": {"exec": "allow"}})
            return [
                await enqueue_run(opened, contract, ScriptedProvider.from_file(s), policy)
                for s in scripts
            ]
        finally:
            await opened.close()

    return asyncio.run(put())


def statuses(store: str) -> dict[int, tuple[str, str | None]]:
    import psycopg

    with psycopg.connect(store, autocommit=True) as conn:
        rows = conn.execute("SELECT id, status, error FROM runs ORDER BY id").fetchall()
    return {row[0]: (row[1], row[2]) for row in rows}


def workers_up(store: str) -> list[str]:
    import psycopg

    with psycopg.connect(store, autocommit=True) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM workers").fetchall()]


def drain(args: argparse.Namespace, cluster: Cluster, root: Path) -> dict[str, object]:
    store = cluster.new_database()
    workspace, log = root / "ws", root / "effects.log"
    workspace.mkdir()
    scripts = [
        script(root / f"run{run}.json", run, args.steps, log, args.command_s)
        for run in range(1, args.runs + 1)
    ]
    ids = enqueue(store, workspace, scripts, args.steps)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    logs = [root / f"worker{n}.log" for n in range(args.workers)]
    started = time.monotonic()
    argv = [*IO_TUI, "worker", "--store", store, "--until-empty"]
    workers = []
    for path in logs:
        with path.open("w") as out:
            workers.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out, env=env))
    while len(workers_up(store)) < args.workers:  # a worker that cannot open its store exits
        time.sleep(0.05)
    rng = random.Random(args.seed)
    restarts = 0
    done = threading.Event()

    def restarting() -> None:
        nonlocal restarts
        while not done.wait(rng.uniform(*args.every)):
            cluster.restart(down_s=args.down_s)
            restarts += 1

    restarter = threading.Thread(target=restarting, daemon=True)
    restarter.start()
    codes = [proc.wait() for proc in workers]
    done.set()
    restarter.join()
    seconds = time.monotonic() - started
    said = "".join(path.read_text() for path in logs)
    counted = Counter(log.read_text().split()) if log.exists() else Counter()
    expected = {f"{run}:{step}" for run in ids for step in range(1, args.steps + 1)}
    rows = statuses(store)
    return {
        "runs": len(ids),
        "finished": sum(status == "finished" for status, _ in rows.values()),
        "not finished": {i: s for i, s in rows.items() if s[0] != "finished"},
        "held": said.count("held for the operator"),
        "twice": sum(1 for key, n in counted.items() if n > 1),
        "never": len(expected - set(counted)),
        "restarts": restarts,
        "seconds": round(seconds, 1),
        "exit codes": codes,
        "tracebacks": said.count("Traceback"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--every", type=float, nargs=2, default=(5.0, 20.0), metavar=("MIN", "MAX"))
    parser.add_argument("--down-s", type=float, default=0.2)
    parser.add_argument("--command-s", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if not (PG_BIN / "initdb").exists():
        raise SystemExit(f"no PostgreSQL server binaries in {PG_BIN}")
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="iotu-pr-", dir="/tmp")), fsync=True)
    cluster.start()
    try:
        with tempfile.TemporaryDirectory(prefix="iotu-drain-") as root:
            result = drain(args, cluster, Path(root))
    finally:
        cluster.stop()
    print(
        f"{args.runs} runs × {args.steps} steps, {args.workers} workers, restarts every"
        f" {args.every[0]:g}–{args.every[1]:g} s (down {args.down_s:g} s), seed {args.seed}"
    )
    print("| runs | finished | held | commands twice | never run | restarts | s | tracebacks |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(
        f"| {result['runs']} | {result['finished']} | {result['held']} | {result['twice']}"
        f" | {result['never']} | {result['restarts']} | {result['seconds']}"
        f" | {result['tracebacks']} |"
    )
    if result["not finished"]:
        print(f"not finished: {result['not finished']}")
    print(f"worker exit codes: {result['exit codes']}")


if __name__ == "__main__":
    main()

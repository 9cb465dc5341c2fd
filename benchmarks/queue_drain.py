"""The run queue with real worker processes on one store (docs/BENCHMARKS.md, "Queue drain").

1. Throughput: 1, 2 and 4 `io-tui worker --until-empty` processes draining the same number of
   queued scripted runs (each: a file write, a command that takes ``--command-s``, a final
   answer); runs per second and the ratio against 1 worker, measured in this process.
2. Kill trials: two workers on a queue of runs whose commands append a token to a log outside
   the workspace; one is killed with SIGKILL at a seeded random moment, the other takes its runs
   over; runs held for the operator (a command in flight at the kill) are released with the
   scripted choice "done" and a last worker finishes. Counted: runs lost (not finished at the
   end), commands run twice (a token twice in the log), and the takeover time (the kill to the
   next claim of each run the killed worker held).

    .venv/bin/python benchmarks/queue_drain.py [--runs 100] [--trials 20] [--seed 19]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

IO_TUI = [sys.executable, "-m", "io_tui"]
POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n'


def env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "NO_COLOR"}


def script(path: Path, token: str, log: Path, commands: int, command_s: float) -> Path:
    """A run that writes a file, then runs ``commands`` commands (each appends ``token:n`` to
    ``log`` after ``command_s``), then answers."""
    turns: list[dict[str, object]] = [
        {"tool_calls": [{"id": "w0", "name": "write_file",
                         "arguments": {"path": f"{token}.txt", "content": token}}]}
    ]  # fmt: skip
    for n in range(commands):
        code = f"sleep {command_s}; echo {token}:{n} >> {log}"
        call = {"id": f"x{n}", "name": "run_command", "arguments": {"argv": ["sh", "-c", code]}}
        turns.append({"tool_calls": [call]})
    turns.append({"text": "done"})
    path.write_text(json.dumps({"model": "scripted", "turns": turns}))
    return path


def enqueue(store: Path, workspace: Path, scripts: list[Path], policy: Path) -> list[int]:
    from io_tui.core import Policy, ScriptedProvider, Store, TaskContract, enqueue_run

    async def put() -> list[int]:
        opened = await Store.open(store)
        try:
            contract = TaskContract(goal="bench", workspace=workspace, max_steps=20)
            rules = Policy.load(policy)
            return [
                await enqueue_run(opened, contract, ScriptedProvider.from_file(s), rules)
                for s in scripts
            ]
        finally:
            await opened.close()

    return asyncio.run(put())


def start_worker(store: Path, *args: str) -> subprocess.Popen[bytes]:
    """A worker whose log goes to ``worker-PID.log`` beside the store (read when a run is lost)."""
    argv = [*IO_TUI, "worker", "--store", str(store), *args]
    with tempfile.NamedTemporaryFile(dir=store.parent, suffix=".log", delete=False) as log:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env())


def statuses(store: Path) -> Counter[str]:
    with sqlite3.connect(store) as conn:
        return Counter(row[0] for row in conn.execute("SELECT status FROM runs"))


def setup(root: Path) -> tuple[Path, Path, Path]:
    workspace = root / "ws"
    workspace.mkdir(parents=True)
    policy = root / "policy.toml"
    policy.write_text(POLICY)
    return workspace, policy, root / "store.db"


def throughput(runs: int, workers: int, command_s: float) -> tuple[float, Counter[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace, policy, store = setup(root)
        log = root / "effects.log"
        scripts = [script(root / f"s{i}.json", f"r{i}", log, 1, command_s) for i in range(runs)]
        enqueue(store, workspace, scripts, policy)
        started = time.perf_counter()
        procs = [start_worker(store, "--until-empty") for _ in range(workers)]
        for proc in procs:
            proc.wait()
        elapsed = time.perf_counter() - started
        return elapsed, statuses(store)


def kill_trial(seed: int, runs: int) -> dict[str, object]:
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace, policy, store = setup(root)
        log = root / "effects.log"
        commands = 5
        scripts = [script(root / f"s{i}.json", f"t{i}", log, commands, 0.3) for i in range(runs)]
        enqueue(store, workspace, scripts, policy)
        victim = start_worker(store, "-j", "2")
        survivor = start_worker(store, "-j", "2", "--until-empty")
        # both up (the takeover time is not a start-up) and the victim holding runs
        _wait_registered(store, survivor.pid)
        held = _wait_held(store, victim.pid)
        time.sleep(rng.uniform(0.0, 2.5))
        with sqlite3.connect(store) as conn:
            owned = [
                r[0] for r in conn.execute("SELECT id FROM runs WHERE lease_pid = ?", (victim.pid,))
            ]
        killed_at = time.time()
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        survivor.wait()
        with sqlite3.connect(store) as conn:
            claimed = dict(conn.execute("SELECT run_id, claimed_at FROM queue").fetchall())
            held_runs = [
                r[0] for r in conn.execute("SELECT run_id FROM queue WHERE held IS NOT NULL")
            ]
        takeovers = [claimed[r] - killed_at for r in owned if claimed[r] and claimed[r] > killed_at]
        for run_id in held_runs:  # the operator's scripted choice: the command took effect
            subprocess.run(
                [*IO_TUI, "resume", str(run_id), "--queue", "--reconcile", "done",
                 "--store", str(store)],
                check=True, capture_output=True, env=env(),
            )  # fmt: skip
        if held_runs:
            start_worker(store, "--until-empty").wait()
        lines = log.read_text().splitlines() if log.exists() else []
        counts = Counter(lines)
        done = statuses(store)
        with sqlite3.connect(store) as conn:
            unfinished = conn.execute(
                "SELECT r.id, r.status, r.error, q.held, q.claims FROM runs r"
                " JOIN queue q ON q.run_id = r.id WHERE r.status != 'finished'"
            ).fetchall()
        return {
            "seed": seed,
            "held_at_start": held,
            "owned": len(owned),
            "held": len(held_runs),
            "lost": runs - done["finished"],
            "duplicated": sum(c - 1 for c in counts.values() if c > 1),
            "takeover_s": takeovers,
            "unfinished": unfinished,
            "logs": "".join(p.read_text() for p in sorted(root.glob("*.log")))
            if unfinished
            else "",
        }


def _wait_held(store: Path, pid: int) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(store) as conn:
                n = conn.execute("SELECT count(*) FROM runs WHERE lease_pid = ?", (pid,)).fetchone()
            if n[0]:
                return int(n[0])
        except sqlite3.OperationalError:
            pass
        time.sleep(0.05)
    raise SystemExit("the first worker never claimed a run")


def _wait_registered(store: Path, pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with sqlite3.connect(store) as conn:
            if conn.execute("SELECT 1 FROM workers WHERE pid = ?", (pid,)).fetchone():
                return
        time.sleep(0.05)
    raise SystemExit("the second worker never registered")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--command-s", type=float, default=0.2)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--trial-runs", type=int, default=8)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--kills-only", action="store_true", help="skip the throughput part")
    args = parser.parse_args()
    if not args.kills_only:
        print_throughput(args)
    print_kill_trials(args)


def print_throughput(args: argparse.Namespace) -> None:

    print(f"## throughput: {args.runs} queued runs (write, {args.command_s:g} s command, answer)")
    print("| workers | seconds | runs/s | ratio vs 1 | finished |")
    print("|---|---|---|---|---|")
    base = None
    for workers in (1, 2, 4):
        elapsed, done = throughput(args.runs, workers, args.command_s)
        rate = args.runs / elapsed
        base = base or rate
        print(
            f"| {workers} | {elapsed:.1f} | {rate:.2f} | {rate / base:.2f} | {done['finished']} |"
        )
    sys.stdout.flush()


def print_kill_trials(args: argparse.Namespace) -> None:
    print(f"\n## kill trials: {args.trials} x {args.trial_runs} runs, seed {args.seed}")
    rng = random.Random(args.seed)
    results = [kill_trial(rng.randrange(1 << 30), args.trial_runs) for _ in range(args.trials)]
    for r in results:
        if r["unfinished"]:
            print(f"seed {r['seed']}: not finished {r['unfinished']}\n{r['logs']}", file=sys.stderr)
    takeovers = [t for r in results for t in r["takeover_s"]]  # type: ignore[attr-defined]
    lost = sum(int(r["lost"]) for r in results)  # type: ignore[call-overload]
    duplicated = sum(int(r["duplicated"]) for r in results)  # type: ignore[call-overload]
    held = sum(int(r["held"]) for r in results)  # type: ignore[call-overload]
    owned = sum(int(r["owned"]) for r in results)  # type: ignore[call-overload]
    print("| trials | runs the killed worker held | taken over | held for the operator |"
          " runs lost | commands run twice | takeover median / p95 / max (s) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    spread = (
        f"{statistics.median(takeovers):.2f} / {p95(takeovers):.2f} / {max(takeovers):.2f}"
        if takeovers
        else "-"
    )
    print(
        f"| {len(results)} | {owned} | {len(takeovers)} | {held} | {lost} | {duplicated} |"
        f" {spread} |"
    )


if __name__ == "__main__":
    main()

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

3. Machine-gone trials (``--gone-trials``): as a kill trial, but the victim runs in a UTS
   namespace of its own under another host name (``unshare --uts``, root only), so the survivor
   cannot see its pid die and takes its runs over only once their heartbeat is ``LEASE_TTL_S``
   old: the takeover of a worker on another machine.

``--backend postgresql`` runs it all on a throwaway local PostgreSQL 15 (``initdb`` into a temp
dir, unix socket only, ``fsync`` on unless ``--no-fsync``; tests/support/pg_cluster.py), a fresh
database for each drain and trial; the default is one SQLite file each.

    .venv/bin/python benchmarks/queue_drain.py [--backend sqlite|postgresql] [--runs 100]
        [--trials 20] [--gone-trials 0] [--seed 19]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from pg_cluster import PG_BIN, Cluster  # noqa: E402

IO_TUI = [sys.executable, "-m", "io_tui"]
POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n'
GONE_HOST = "gone-machine"


class Backend:
    """Where the stores live: a SQLite file per drain, or a database per drain on one server."""

    def __init__(self, kind: str, *, fsync: bool = True) -> None:
        self.kind = kind
        self.cluster: Cluster | None = None
        if kind == "postgresql":
            if not (PG_BIN / "initdb").exists():
                raise SystemExit(f"no PostgreSQL server binaries in {PG_BIN}")
            self.cluster = Cluster(
                Path(tempfile.mkdtemp(prefix="iotu-qd-", dir="/tmp")), fsync=fsync
            )
            self.cluster.start()

    def new_store(self, root: Path) -> str:
        return self.cluster.new_database() if self.cluster else str(root / "store.db")

    def stop(self) -> None:
        if self.cluster:
            self.cluster.stop()


def query(store: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Rows of ``sql`` (``?`` parameters) read from ``store`` by this process, on either backend."""
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as conn:
            return conn.execute(sql.replace("?", "%s"), params).fetchall()
    with sqlite3.connect(store) as conn:
        return conn.execute(sql, params).fetchall()


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


def enqueue(store: str, workspace: Path, scripts: list[Path], policy: Path) -> list[int]:
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


def start_worker(
    store: str, root: Path, *args: str, host: str | None = None
) -> subprocess.Popen[bytes]:
    """A worker whose log goes to a ``.log`` file in ``root`` (read when a run is lost); with
    ``host``, in a UTS namespace of its own under that host name (another machine, as the
    leases see it; same pid: ``unshare`` execs)."""
    argv = [*IO_TUI, "worker", "--store", store, "--scratch", str(root / "scratch"), *args]
    if host:
        argv = ["unshare", "--uts", "sh", "-c", f'hostname {host} && exec "$@"', "sh", *argv]
    with tempfile.NamedTemporaryFile(dir=root, suffix=".log", delete=False) as log:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env())


def statuses(store: str) -> Counter[str]:
    return Counter(row[0] for row in query(store, "SELECT status FROM runs"))


@contextmanager
def setup(backend: Backend) -> Iterator[tuple[Path, Path, Path, str]]:
    """A temp root with a workspace, a policy and a fresh store: (root, workspace, policy,
    store)."""
    root = Path(tempfile.mkdtemp(prefix="queue-drain-"))
    try:
        workspace = root / "ws"
        workspace.mkdir(parents=True)
        policy = root / "policy.toml"
        policy.write_text(POLICY)
        yield root, workspace, policy, backend.new_store(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def throughput(
    backend: Backend, runs: int, workers: int, command_s: float
) -> tuple[float, Counter[str]]:
    with setup(backend) as (root, workspace, policy, store):
        log = root / "effects.log"
        scripts = [script(root / f"s{i}.json", f"r{i}", log, 1, command_s) for i in range(runs)]
        enqueue(store, workspace, scripts, policy)
        started = time.perf_counter()
        procs = [start_worker(store, root, "--until-empty") for _ in range(workers)]
        for proc in procs:
            proc.wait()
        elapsed = time.perf_counter() - started
        return elapsed, statuses(store)


def kill_trial(
    backend: Backend, seed: int, runs: int, host: str | None = None
) -> dict[str, object]:
    rng = random.Random(seed)
    with setup(backend) as (root, workspace, policy, store):
        log = root / "effects.log"
        commands = 5
        scripts = [script(root / f"s{i}.json", f"t{i}", log, commands, 0.3) for i in range(runs)]
        enqueue(store, workspace, scripts, policy)
        victim = start_worker(store, root, "-j", "2", host=host)
        survivor = start_worker(store, root, "-j", "2", "--until-empty")
        # both up (the takeover time is not a start-up) and the victim holding runs
        _wait_registered(store, survivor.pid)
        held = _wait_held(store, victim.pid)
        time.sleep(rng.uniform(0.0, 2.5))
        owned = [
            r[0] for r in query(store, "SELECT id FROM runs WHERE lease_pid = ?", (victim.pid,))
        ]
        killed_at = time.time()
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        survivor.wait()
        claimed = dict(query(store, "SELECT run_id, claimed_at FROM queue"))
        held_runs = [r[0] for r in query(store, "SELECT run_id FROM queue WHERE held IS NOT NULL")]
        takeovers = [claimed[r] - killed_at for r in owned if claimed[r] and claimed[r] > killed_at]
        for run_id in held_runs:  # the operator's scripted choice: the command took effect
            subprocess.run(
                [*IO_TUI, "resume", str(run_id), "--queue", "--reconcile", "done",
                 "--store", store],
                check=True, capture_output=True, env=env(),
            )  # fmt: skip
        if held_runs:
            start_worker(store, root, "--until-empty").wait()
        lines = log.read_text().splitlines() if log.exists() else []
        counts = Counter(lines)
        done = statuses(store)
        unfinished = query(
            store,
            "SELECT r.id, r.status, r.error, q.held, q.claims FROM runs r"
            " JOIN queue q ON q.run_id = r.id WHERE r.status != 'finished'",
        )
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


def _wait_held(store: str, pid: int) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ((n,),) = query(store, "SELECT count(*) FROM runs WHERE lease_pid = ?", (pid,))
            if n:
                return int(n)
        except sqlite3.OperationalError:  # locked past the timeout: look again
            pass
        time.sleep(0.05)
    raise SystemExit("the first worker never claimed a run")


def _wait_registered(store: str, pid: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:  # a new store: its tables may not be there yet
            if query(store, "SELECT 1 FROM workers WHERE pid = ?", (pid,)):
                return
        except Exception:  # either backend's "no such table"
            pass
        time.sleep(0.05)
    raise SystemExit("the second worker never registered")


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--no-fsync", action="store_true", help="PostgreSQL as the tests run it")
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--command-s", type=float, default=0.2)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--trial-runs", type=int, default=8)
    parser.add_argument("--gone-trials", type=int, default=0, help="machine-gone trials (root)")
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--kills-only", action="store_true", help="skip the throughput part")
    args = parser.parse_args()
    backend = Backend(args.backend, fsync=not args.no_fsync)
    print(f"# queue drain on {args.backend}")
    try:
        if not args.kills_only:
            print_throughput(backend, args)
        if args.trials:
            print(f"\n## kill trials: {args.trials} x {args.trial_runs} runs, seed {args.seed}")
            print_trials(backend, args, args.trials, None)
        if args.gone_trials:
            print(
                f"\n## machine-gone trials: {args.gone_trials} x {args.trial_runs} runs,"
                f" seed {args.seed}, the victim on host {GONE_HOST!r}"
            )
            print_trials(backend, args, args.gone_trials, GONE_HOST)
    finally:
        backend.stop()


def print_throughput(backend: Backend, args: argparse.Namespace) -> None:
    print(f"## throughput: {args.runs} queued runs (write, {args.command_s:g} s command, answer)")
    print("| workers | seconds | runs/s | ratio vs 1 | finished |")
    print("|---|---|---|---|---|")
    base = None
    for workers in (1, 2, 4):
        elapsed, done = throughput(backend, args.runs, workers, args.command_s)
        rate = args.runs / elapsed
        base = base or rate
        print(
            f"| {workers} | {elapsed:.1f} | {rate:.2f} | {rate / base:.2f} | {done['finished']} |"
        )
        sys.stdout.flush()


def print_trials(backend: Backend, args: argparse.Namespace, trials: int, host: str | None) -> None:
    rng = random.Random(args.seed)
    results = [
        kill_trial(backend, rng.randrange(1 << 30), args.trial_runs, host) for _ in range(trials)
    ]
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
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""kill -9 trials: a 20-step scripted run that writes files and runs commands, its `io-tui run`,
the `io-tui decide` that resumes it, or the TUI's harness worker process (driven as the app
drives it, through ``WorkerClient``) killed at a seeded random point, then
`io-tui resume --reconcile rerun` until it ends. Every trial must resume; its final workspace
and trace must equal an uninterrupted run's; no command's effect may happen more often than
once plus the reruns the operator chose (each command appends a line to a log outside the
workspace). Prints a table (docs/RELIABILITY.md, "Crashes and resume").

    .venv/bin/python benchmarks/kill_trials.py [--trials 50] [--seed 15] [--steps 20]
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
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

IO_TUI = [sys.executable, "-m", "io_tui"]
POLICY = """[defaults]
write = "allow"
exec = "allow"

[[layers]]
name = "trial"

[[layers.rules]]
act = "write"
effect = "ask"
pattern = "gate.txt"
"""


def script(steps: int, log: Path) -> dict[str, object]:
    """Odd steps write a file, even steps run a command (one appends to ``log``); the middle
    step writes gate.txt, which the policy asks about."""
    turns: list[dict[str, object]] = []
    for n in range(1, steps):
        if n == steps // 2:
            call = {"name": "write_file", "arguments": {"path": "gate.txt", "content": "gated\n"}}
        elif n % 2:
            call = {
                "name": "write_file",
                "arguments": {"path": f"src/f{n}.txt", "content": f"file {n}\n" * n},
            }
        else:
            code = f"echo c{n} >> {log}; sleep 0.05; printf 'out {n}' > out{n}.txt"
            call = {"name": "run_command", "arguments": {"argv": ["sh", "-c", code]}}
        turns.append({"text": f"step {n}", "tool_calls": [{"id": f"c{n}", **call}]})
    turns.append({"text": "done"})
    return {"model": "scripted", "turns": turns}


@dataclass
class Trial:
    root: Path

    @property
    def ws(self) -> Path:
        return self.root / "ws"

    @property
    def store(self) -> Path:
        return self.root / "store.db"

    @property
    def log(self) -> Path:
        """What the commands did, in the workspace: a sandboxed command has a /tmp of its own
        and writes nowhere else (the snapshot leaves it out)."""
        return self.ws / "effects.log"

    def setup(self, steps: int) -> None:
        self.ws.mkdir(parents=True)
        (self.root / "script.json").write_text(json.dumps(script(steps, self.log)))
        (self.root / "policy.toml").write_text(POLICY)

    def cli(self, *args: str) -> list[str]:
        return [*IO_TUI, *args, "--store", str(self.store)]

    def run_args(self, approve: str) -> list[str]:
        return self.cli(
            "run", "kill trial", "-w", str(self.ws), "--provider",
            f"scripted:{self.root / 'script.json'}", "--policy", str(self.root / "policy.toml"),
            "--approve", approve, "--max-steps", "40", "--json",
        )  # fmt: skip


def env() -> dict[str, str]:
    return {**os.environ, "IO_TUI_CONFIG_DIR": tempfile.mkdtemp(prefix="io-cfg-")}


def run_killed(argv: list[str], kill_after: int | None, delay: float) -> tuple[int, bool]:
    """Run ``argv``; with ``kill_after``, kill -9 it after that many event lines (+ delay).
    Returns how many lines it printed and whether the kill landed."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env())
    assert proc.stdout is not None
    killed = False
    lines = 0
    for lines, _ in enumerate(proc.stdout, start=1):
        if kill_after is not None and lines >= kill_after:
            time.sleep(delay)
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
    proc.stdout.close()
    proc.wait()
    return lines, killed and proc.returncode == -signal.SIGKILL


class WorkerTrial:
    """The app's side of the worker pipe (a ``WorkerListener``), as the TUI is when its operator
    approves the gate in the modal; with ``kill_after``, it kill -9s the worker process after
    that many events (+ ``delay``)."""

    def __init__(self, kill_after: int | None, delay: float) -> None:
        self.kill_after = kill_after
        self.delay = delay
        self.events = 0
        self.client: Any = None
        self.done = asyncio.Event()  # the run ended, or the worker died
        self.kill: asyncio.Future[bool] | None = None  # set at the kill point: did it land

    def event(self, event: object) -> None:
        self.events += 1
        if self.events == self.kill_after:
            self.kill = asyncio.ensure_future(self._kill())

    async def _kill(self) -> bool:
        await asyncio.sleep(self.delay)
        if (pid := self.client.pid) is None:
            return False
        os.kill(pid, signal.SIGKILL)  # also after the run ended: the app's worker stays up
        return True

    def started(self, run_id: int) -> None:
        pass

    def stopped(self, run_id: int) -> None:
        pass

    def asked(self, request: object, answer: asyncio.Future[Any]) -> None:
        from io_tui.core import Decision

        answer.set_result(Decision.approve(decided_by="operator (modal)"))

    def ended(self, result: object, error: str | None) -> None:
        self.done.set()

    def notice(self, text: str) -> None:
        pass

    def unexpected(self, what: str) -> None:
        pass

    def lost(self, run_ids: list[int], code: int, stderr: str) -> None:
        self.done.set()


async def drive_worker(trial: Trial, kill_after: int | None, delay: float) -> tuple[int, bool]:
    """Start the run as the TUI's new-run dialog does: a ``NewRunRequest`` to the real worker
    subprocess through its client. Returns how many events the app heard and whether the kill
    landed."""
    from io_tui.core import NewRunRequest, WorkerClient
    from io_tui.core.run.settings import RunSettings

    tasks: set[asyncio.Future[None]] = set()

    def spawn(work: Any) -> None:
        task = asyncio.ensure_future(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    app = WorkerTrial(kill_after, delay)
    settings = RunSettings(
        provider=f"scripted:{trial.root / 'script.json'}",
        policy=trial.root / "policy.toml",
        max_steps=40,
    )
    app.client = WorkerClient(trial.store, settings, app, spawn)
    try:
        app.client.start(NewRunRequest("kill trial", trial.ws))
        await asyncio.wait_for(app.done.wait(), 300)
        killed = await app.kill if app.kill is not None else False
    finally:
        await app.client.close()
    return app.events, killed


def pending_approval(store: Path) -> int | None:
    with sqlite3.connect(store) as db:
        row = db.execute("SELECT id FROM approvals WHERE status = 'pending' ORDER BY id").fetchone()
    return row[0] if row else None


def run_status(store: Path) -> str | None:
    if not store.exists():
        return None
    with sqlite3.connect(store) as db:
        try:
            row = db.execute("SELECT status FROM runs WHERE id = 1").fetchone()
        except sqlite3.OperationalError:  # killed before the store's tables were made
            return None
    return row[0] if row else None


async def trace_json(store: Path) -> str:
    """What `io-tui trace 1 --json` prints (its function, without a process of its own)."""
    from io_tui.core import Store, build_trace

    async with await Store.open(store) as opened:
        return json.dumps(await build_trace(opened, 1), ensure_ascii=False, default=str)


def snapshot(trial: Trial) -> tuple[object, ...]:
    """The final workspace and trace, the trial's own paths replaced."""
    files = {
        p.relative_to(trial.ws).as_posix(): p.read_text()
        for p in sorted(trial.ws.rglob("*"))
        if p.is_file() and p != trial.log
    }
    trace = json.loads(asyncio.run(trace_json(trial.store)).replace(str(trial.root), "<T>"))
    steps = [(s["step"], s["text"], s["tool_calls"]) for s in trace["steps"]]
    # the one expected difference: a write re-run after the crashed attempt had written the
    # file reports "overwrote" where the uninterrupted run said "created"
    obs = [
        (s["step"], o["call_id"], o["tool"], o["full_text"].replace("overwrote ", "created "))
        for s in trace["steps"]
        for o in s["observations"]
    ]
    run = trace["run"]
    return files, steps, obs, (run["status"], run["outcome"], run["steps"], run["tokens"])


def reruns(store: Path) -> Counter[str]:
    with sqlite3.connect(store) as db:
        rows = db.execute("SELECT detail FROM events WHERE kind = 'reconciled'").fetchall()
    return Counter(json.loads(d)["call_id"] for (d,) in rows if json.loads(d)["choice"] == "rerun")


def effects_ok(trial: Trial, steps: int) -> bool:
    """Each command's effect happened at least once, and more only by the operator's rerun."""
    counts = Counter(trial.log.read_text().split()) if trial.log.exists() else Counter()
    said = reruns(trial.store)
    commands = [n for n in range(2, steps, 2) if n != steps // 2]
    return all(1 <= counts[f"c{n}"] <= 1 + said[f"c{n}"] for n in commands)


def drive(
    trial: Trial, steps: int, kill: str | None, kill_after: int, delay: float
) -> dict[str, object]:
    """One trial: run (paused at the gate), decide approve, each maybe killed; or the run in the
    TUI's worker, maybe killed; then resume."""
    trial.setup(steps)
    decide_lines = 0
    if kill == "worker":
        run_lines, killed = asyncio.run(drive_worker(trial, kill_after, delay))
        if run_status(trial.store) is None:  # killed before the run was created: start again
            asyncio.run(drive_worker(trial, None, 0))
    else:
        run_lines, killed = run_killed(
            trial.run_args("defer"), kill_after if kill == "run" else None, delay
        )
        approval = pending_approval(trial.store) if trial.store.exists() else None
        if run_status(trial.store) is None:
            # killed before the run was created: nothing to resume, the operator starts it again
            run_killed(trial.run_args("defer"), None, 0)
            approval = pending_approval(trial.store)
        if approval is not None and run_status(trial.store) == "paused":
            argv = trial.cli("decide", str(approval), "approve", "--approve", "all", "--json")
            decide_lines, k = run_killed(argv, kill_after if kill == "decide" else None, delay)
            killed |= k
    resumes = 0
    while run_status(trial.store) not in ("finished", "failed", "cancelled") and resumes < 5:
        argv = trial.cli("resume", "1", "--reconcile", "rerun", "--approve", "all", "--json")
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env())
        resumes += 1
    return {
        "lines": (run_lines, decide_lines),  # uninterrupted: the range of kill points
        "killed": killed,
        "resumes": resumes,
        "status": run_status(trial.store),
        "snapshot": snapshot(trial),
        "effects_ok": effects_ok(trial, steps),
    }


def first_difference(want: object, got: object) -> str:
    for part, (a, b) in enumerate(zip(want, got, strict=False)):
        if a != b:
            if isinstance(a, list):
                pairs = [(x, y) for x, y in zip(a, b, strict=False) if x != y] or [(len(a), len(b))]
                return f"part {part}: want {pairs[0][0]!r:.300} got {pairs[0][1]!r:.300}"
            return f"part {part}: want {a!r:.300} got {b!r:.300}"
    return "equal"


KINDS = ("run", "decide", "worker")  # what a trial kills, in turn


def trials(count: int, seed: int, steps: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="io-kill-"))
    try:
        baseline = drive(Trial(base / "b0000"), steps, None, 0, 0)
        run_lines, decide_lines = baseline["lines"]
        assert isinstance(run_lines, int) and isinstance(decide_lines, int)
        # `--json` prints one line per event: the worker sends the app the events of both
        points = {"run": run_lines, "decide": decide_lines, "worker": run_lines + decide_lines}
        rows = []
        for n in range(count):
            kill = KINDS[n % len(KINDS)]
            after = rng.randint(1, max(1, points[kill] - 1))
            delay = rng.uniform(0, 0.06)
            result = drive(
                Trial(base / f"t{n:04d}"), steps, kill, after, delay
            )  # names of one length: tokens count paths
            result.update(
                trial=n,
                kill=kill,
                after=after,
                equal=result["snapshot"] == baseline["snapshot"],
                resumable=result["status"] == baseline["status"],
            )
            if not result["equal"]:
                print(f"trial {n}: {first_difference(baseline['snapshot'], result['snapshot'])}")
            rows.append(result)
        return rows
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    started = time.monotonic()
    rows = trials(args.trials, args.seed, args.steps)
    print(
        f"{'kill':<7} {'trials':>6} {'killed':>6} {'resumable':>9} {'equal':>6} {'effects ok':>10} {'resumes':>7}"
    )
    for kill in KINDS:
        part = [r for r in rows if r["kill"] == kill]
        print(
            f"{kill:<7} {len(part):>6} {sum(bool(r['killed']) for r in part):>6}"
            f" {sum(bool(r['resumable']) for r in part):>9} {sum(bool(r['equal']) for r in part):>6}"
            f" {sum(bool(r['effects_ok']) for r in part):>10} {sum(int(r['resumes']) for r in part):>7}"
        )
    bad = [r["trial"] for r in rows if not (r["resumable"] and r["equal"] and r["effects_ok"])]
    print(f"{len(rows)} trials in {time.monotonic() - started:.0f} s; failing: {bad or 'none'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

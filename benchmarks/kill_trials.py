"""kill -9 trials: a 20-step scripted run that writes files and runs commands, its `io-tui run`
(or the `io-tui decide` that resumes it) killed at a seeded random point, then
`io-tui resume --reconcile rerun` until it ends. Every trial must resume; its final workspace
and trace must equal an uninterrupted run's; no command's effect may happen more often than
once plus the reruns the operator chose (each command appends a line to a log outside the
workspace). Prints a table (docs/RELIABILITY.md, "Crashes and resume").

    .venv/bin/python benchmarks/kill_trials.py [--trials 50] [--seed 15] [--steps 20]
"""

from __future__ import annotations

import argparse
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
        return self.root / "effects.log"

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


def pending_approval(store: Path) -> int | None:
    with sqlite3.connect(store) as db:
        row = db.execute("SELECT id FROM approvals WHERE status = 'pending' ORDER BY id").fetchone()
    return row[0] if row else None


def run_status(store: Path) -> str | None:
    with sqlite3.connect(store) as db:
        row = db.execute("SELECT status FROM runs WHERE id = 1").fetchone()
    return row[0] if row else None


def snapshot(trial: Trial) -> tuple[object, ...]:
    """The final workspace and trace, the trial's own paths replaced."""
    files = {
        p.relative_to(trial.ws).as_posix(): p.read_text()
        for p in sorted(trial.ws.rglob("*"))
        if p.is_file()
    }
    out = subprocess.run(
        trial.cli("trace", "1", "--json"), capture_output=True, text=True, env=env(), check=True
    )
    trace = json.loads(out.stdout.replace(str(trial.root), "<T>"))
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
    """One trial: run (paused at the gate), decide approve, each maybe killed; then resume."""
    trial.setup(steps)
    run_lines, killed = run_killed(
        trial.run_args("defer"), kill_after if kill == "run" else None, delay
    )
    decide_lines = 0
    approval = pending_approval(trial.store) if trial.store.exists() else None
    if not trial.store.exists() or run_status(trial.store) is None:
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


def trials(count: int, seed: int, steps: int) -> list[dict[str, object]]:
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="io-kill-"))
    try:
        baseline = drive(Trial(base / "b0000"), steps, None, 0, 0)
        run_lines, decide_lines = baseline["lines"]
        rows = []
        for n in range(count):
            kill = "run" if n % 2 == 0 else "decide"
            after = rng.randint(1, max(1, (run_lines if kill == "run" else decide_lines) - 1))
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
    for kill in ("run", "decide"):
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

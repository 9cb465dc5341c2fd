"""The harness's own speed, paired: a baseline commit against the current one, in one run.

Builds each side in a temporary ``git worktree`` (under ``.bench/`` or ``--tmp``: outside
``/tmp``, which a sandbox may hide from subprocesses), byte-compiles it, then runs ui_load's
"harness alone" workload (``benchmarks/harness_workload.py``: RUNS scripted runs of STEPS
``list_dir`` steps against a real SQLite store, a recording sink, no app) in a fresh
subprocess per side and round, the sides alternated (A B, B A, A B, ...) so that the shared
machine's drift touches both alike. Each side runs the same interpreter with ``PYTHONPATH`` set
to its own worktree; the workload file is this checkout's (it imports through the paths both
layouts have). Prints, per side, the median events/s and CPU ms per event over the rounds (with
their range), how much of that CPU is the event loop's thread (the rest is the store's thread),
function calls with ``--calls`` (one profiled run per side), and the ratio current / baseline
(of the medians: the verdict; and round by round, each round's two runs side by side).
The worktrees are removed afterwards.

Run: ``.venv/bin/python benchmarks/harness_speed.py [--base f6067af] [--head HEAD]
[--rounds 5] [--size 8x250] [--calls] [--json FILE]``; ``--head .`` measures this checkout as it is
(uncommitted changes included) instead of a worktree of a commit.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ROOT / "benchmarks" / "harness_workload.py"


def git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def worktree(stack: ExitStack, tmp: Path, rev: str) -> tuple[Path, str]:
    """A checkout of ``rev`` (``.``: this checkout as it is), byte-compiled; removed on exit."""
    if rev == ".":
        path, label = ROOT, f"{git('rev-parse', '--short', 'HEAD')}+worktree"
    else:
        sha = git("rev-parse", "--short", rev)
        path = Path(tempfile.mkdtemp(prefix=f"harness-{sha}-", dir=tmp))
        path.rmdir()
        git("worktree", "add", "--detach", str(path), sha)
        stack.callback(git, "worktree", "remove", "--force", str(path))
        label = sha
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(path / "io_tui")], check=True)
    return path, label


def run_side(path: Path, tmp: Path, size: str, calls: bool = False) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(path), HARNESS_TMP=str(tmp))
    command = [sys.executable, str(WORKLOAD), "--size", size] + (["--calls"] if calls else [])
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=path)
    if done.returncode:
        raise SystemExit(f"the workload failed under {path}:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def spread(values: list[float], fmt: str) -> str:
    return f"{format(statistics.median(values), fmt)} ({format(min(values), fmt)}–{format(max(values), fmt)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="f6067af", help="the baseline commit (f6067af)")
    parser.add_argument("--head", default="HEAD", help="the current commit; '.': this checkout")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each side once a round")
    parser.add_argument("--size", default="8x250", help="RUNSxSTEPS (default 8x250)")
    parser.add_argument("--calls", action="store_true", help="count function calls (cProfile)")
    parser.add_argument(
        "--tmp", default=str(ROOT / ".bench"), help="where the worktrees go (outside /tmp)"
    )
    parser.add_argument("--json", type=Path, help="write the medians and the ratio to this file")
    args = parser.parse_args()
    tmp = Path(args.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    load_before = loadavg()
    with ExitStack() as stack:
        sides = [worktree(stack, tmp, args.base), worktree(stack, tmp, args.head)]
        results: list[list[dict[str, Any]]] = [[], []]
        for round_ in range(args.rounds):
            order = (0, 1) if round_ % 2 == 0 else (1, 0)
            for side in order:
                results[side].append(run_side(sides[side][0], tmp, args.size))
                r = results[side][-1]
                print(
                    f"round {round_ + 1} {sides[side][1]:>16}: {r['events_per_s']:,.0f} ev/s, "
                    f"{r['cpu_ms_per_event']:.3f} CPU ms/event",
                    file=sys.stderr,
                )
        calls = (
            [run_side(path, tmp, args.size, calls=True)["calls"] for path, _ in sides]
            if args.calls
            else None
        )
    rates = [[r["events_per_s"] for r in side] for side in results]
    cpus = [[r["cpu_ms_per_event"] for r in side] for side in results]
    # the event loop's thread's own share (a workload file from before it was printed: none)
    loops = [[r.get("loop_cpu_ms_per_event", math.nan) for r in side] for side in results]
    events = {r["events"] for side in results for r in side}
    print(
        f"harness alone, {args.size} ({'/'.join(map(str, sorted(events)))} events), {args.rounds} rounds alternated; medians (min–max)"
    )
    print(f"load average (1/5/15 min): before {load_before}, after {loadavg()}")
    header = f"{'side':<24} {'events/s':<24} {'CPU ms/event':<24} {'of it the loop':<24}" + (
        " calls" if calls else ""
    )
    print(header)
    for n, (_, label) in enumerate(sides):
        name = ("baseline " if n == 0 else "current ") + label
        row = (
            f"{name:<24} {spread(rates[n], ',.0f'):<24} {spread(cpus[n], '.3f'):<24} "
            f"{spread(loops[n], '.3f'):<24}"
        )
        if calls:
            row += f" {calls[n]:,}"
        print(row)
    rate_ratio = statistics.median(rates[1]) / statistics.median(rates[0])
    cpu_ratio = statistics.median(cpus[1]) / statistics.median(cpus[0])
    loop_ratio = statistics.median(loops[1]) / statistics.median(loops[0])
    row = (
        f"{'current / baseline':<24} {f'{rate_ratio:.2f}×':<24} {f'{cpu_ratio:.2f}×':<24} "
        f"{f'{loop_ratio:.2f}×':<24}"
    )
    if calls:
        row += f" {calls[1] / calls[0]:.2f}×"
    print(row)
    # each round's two runs minutes apart at most: their ratio leaves out the machine's drift
    # between rounds, which the medians above keep (said beside, not the verdict)
    pairs = [cur / base for base, cur in zip(rates[0], rates[1], strict=True)]
    print(
        f"{'round by round':<24} {spread(pairs, '.2f') + '×':<24} "
        f"(current / baseline within each round; {sum(r >= 1.0 for r in pairs)} of "
        f"{len(pairs)} rounds ≥ 1.0×)"
    )
    verdict = "met" if rate_ratio >= 1.0 else "missed"
    print(f"target: current events/s ≥ 1.0× baseline — {verdict}")
    if args.json:
        medians = [statistics.median(side) for side in rates]
        data = {"base": sides[0][1], "events_per_s": medians, "ratio": rate_ratio, "rounds": pairs,
                "cpu_ms_per_event": [statistics.median(side) for side in cpus],
                "loop_cpu_ms_per_event": [statistics.median(side) for side in loops]}  # fmt: skip
        args.json.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    main()

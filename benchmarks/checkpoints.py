"""Workspace checkpoints: what one step costs on a 10,000-file repository with a small change,
and how much the shadow git store grows per step.

    .venv/bin/python benchmarks/checkpoints.py [--files N] [--steps N]

A git repository of ``--files`` files (100 directories, ~1.2 KB of text each, committed) gets
its first checkpoint (every file hashed once into a fresh shadow store), then ``--steps``
steps as a run takes them: the checkpoint a step takes before its first call that may change
files, after the previous step's small change (one file edited, one file added); and a
checkpoint of a workspace nothing changed in (a run's last one after read-only steps).
Prints the first checkpoint's time, medians, 95th percentiles and minimums of the wall time
and of the CPU time (io-tui's and its git processes': what a checkpoint costs on an idle core,
while a shared machine's load stretches the wall time; the load average is printed), the store's size after the first checkpoint, its growth
per step (loose objects), and after ``git gc``. No assertions (DESIGN §6).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from io_tui.core.checkpoints.shadow import ShadowStore

DIRS = 100


def _make_repo(root: Path, files: int, rng: random.Random) -> None:
    words = [f"word{i}" for i in range(2_000)]
    per_dir = max(1, files // DIRS)
    for d in range(DIRS):
        folder = root / f"pkg{d:03}"
        folder.mkdir(parents=True)
        for f in range(per_dir):
            lines = [" ".join(rng.choice(words) for _ in range(8)) for _ in range(20)]
            (folder / f"mod{f:03}.py").write_text("\n".join(lines) + "\n")
    (root / ".gitignore").write_text("build/\n__pycache__/\n")
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "fixture"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def _ms(seconds: float) -> float:
    return seconds * 1000


def _cpu() -> float:
    """CPU seconds spent so far by this process and the git processes it waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(len(values) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root, base = Path(tmp) / "repo", Path(tmp) / "checkpoints"
        _make_repo(root, args.files, rng)
        shadow = ShadowStore.for_workspace(base, root)
        started, cpu = time.perf_counter(), _cpu()
        first = shadow.snapshot("first", run_id=1)
        first_ms, first_cpu = _ms(time.perf_counter() - started), _ms(_cpu() - cpu)
        size_first = shadow.size_bytes()
        last = (first.commit, first.tree)
        step_ms: list[float] = []
        step_cpu: list[float] = []
        same_ms: list[float] = []
        same_cpu: list[float] = []
        growth: list[int] = []
        load = os.getloadavg()[0]
        for step in range(1, args.steps + 1):
            size = shadow.size_bytes()
            edited = root / f"pkg{rng.randrange(DIRS):03}" / "mod000.py"
            edited.write_text(edited.read_text() + f"# step {step}\n")
            (root / f"pkg{step % DIRS:03}" / f"new{step}.py").write_text(f"VALUE = {step}\n")
            started, cpu = time.perf_counter(), _cpu()
            snap = shadow.snapshot(f"step {step}", run_id=1, parent=last)
            step_ms.append(_ms(time.perf_counter() - started))
            step_cpu.append(_ms(_cpu() - cpu))
            last = (snap.commit, snap.tree)
            growth.append(shadow.size_bytes() - size)
            started, cpu = time.perf_counter(), _cpu()
            shadow.snapshot(f"step {step}, nothing changed", run_id=1, parent=last)
            same_ms.append(_ms(time.perf_counter() - started))
            same_cpu.append(_ms(_cpu() - cpu))
        load = max(load, os.getloadavg()[0])
        shadow.collect()
        size_gc = shadow.size_bytes()
    print(f"checkpoints of a {args.files:,}-file git repository, {args.steps} steps")
    print(f"(load average up to {load:.1f} on {os.cpu_count()} cores while measuring)")
    print(
        f"  first checkpoint (every file hashed):  {first_ms:8.0f} ms wall, {first_cpu:.0f} ms CPU"
    )
    print(f"  store after the first checkpoint:      {size_first / 1e6:8.1f} MB")
    print("                                          median      p95      min")
    for label, values in (
        ("a step (1 file edited, 1 new), wall:", step_ms),
        ("                                CPU:", step_cpu),
        ("nothing changed, wall:", same_ms),
        ("                 CPU:", same_cpu),
    ):
        print(
            f"  {label:37} {statistics.median(values):6.1f} ms"
            f"  {_p95(values):6.1f} ms  {min(values):5.1f} ms"
        )
    print(
        f"  store growth per step:                 {statistics.median(growth) / 1e3:6.1f} KB"
        f"  {_p95(growth) / 1e3:6.1f} KB"
    )
    print(f"  store after {args.steps} steps and git gc:       {size_gc / 1e6:6.1f} MB")


if __name__ == "__main__":
    main()

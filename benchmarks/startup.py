"""Startup as a user meets it: a new process in a terminal, until its first frame is on screen.

Each program runs in a pseudo-terminal of 140×44; the clock runs from the fork to the first
output that contains a marker: the empty Textual app's one word (the baseline); io-tui's header
title (its first paint: the main screen's layout, drawn before its panes mount) and the
transcript's empty-store line (the first frame with the panes); ``io-tui demo``'s header title.
The programs take turns, round after round (one warm-up round for the OS page cache), so a drift
of the machine's speed moves them alike; medians of ``--runs`` rounds. Issue 34's targets: first
paint ≤ 1.5× the empty app's, first frame with panes ≤ 2×. With ``--vs DIR`` io-tui runs from
the checkout in DIR too (``git worktree add DIR COMMIT``; ``python -m io_tui`` in DIR finds its
own package first), in the same rounds: the paired baseline.
Both checkouts are byte-compiled first, as ``make run``'s install does. Beside each median, the
program's peak RSS when its last marker was seen (its ``VmHWM``, median of the rounds).
Run: ``.venv/bin/python benchmarks/startup.py [--runs 7] [--vs /tmp/base] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ROWS, COLS = 44, 140
RUNS = 7
EMPTY_APP = """
from textual.app import App
from textual.widgets import Static

class Empty(App):
    def compose(self):
        yield Static("baseline-ready")

Empty().run()
"""


def first_frames(
    argv: list[str], markers: list[bytes], cwd: Path = ROOT, timeout_s: float = 20.0
) -> tuple[list[float], float]:
    """Seconds from the fork to the first output containing each of ``markers``, and the
    program's peak RSS (MB) then."""
    started = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of the benchmark's size, then the program
        os.environ["TERM"] = "xterm-256color"
        os.chdir(cwd)
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    seen, at = b"", {}
    try:
        while time.perf_counter() - started < timeout_s:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                seen += os.read(fd, 1 << 16)
            except OSError:
                break
            now = time.perf_counter() - started
            at.update({m: now for m in markers if m not in at and m in seen})
            if len(at) == len(markers):
                return [at[m] for m in markers], peak_rss_mb(pid)
        raise RuntimeError(f"{argv} never showed {[m for m in markers if m not in at]}")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident set so far (Linux's ``VmHWM``), in MB; NaN elsewhere."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return float("nan")
    kb = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return int(kb) / 1024 if kb is not None else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--vs", type=Path, help="a baseline checkout (git worktree add DIR C)")
    parser.add_argument("--json", type=Path, help="write the medians and ratios to this file")
    args = parser.parse_args()
    python = sys.executable
    trees = {"now": ROOT} | ({"base": args.vs.resolve()} if args.vs else {})
    for tree in trees.values():
        subprocess.run([python, "-m", "compileall", "-q", str(tree / "io_tui")], check=True)
    with tempfile.TemporaryDirectory(prefix="io-tui-startup-") as name:
        tmp = Path(name)
        empty_app = tmp / "empty_app.py"
        empty_app.write_text(EMPTY_APP)
        store = ["--store", str(tmp / "store.db")]
        os.environ["IO_TUI_CONFIG_DIR"] = str(tmp / "config")  # the defaults, not the user's
        programs = [([python, str(empty_app)], [b"baseline-ready"], ["empty Textual app"], ROOT)]
        for label, tree in trees.items():  # label → (argv, markers, the rows they time, where)
            suffix = "" if label == "now" else f" ({label})"
            programs += [
                (
                    [python, "-m", "io_tui", *store],
                    [b"cockpit", b"Select a run"],
                    [f"io-tui first paint{suffix}", f"io-tui frame with panes{suffix}"],
                    tree,
                ),
                (
                    [python, "-m", "io_tui", *store, "demo"],
                    [b"cockpit"],
                    [f"io-tui demo{suffix}"],
                    tree,
                ),
            ]
        samples: dict[str, list[float]] = {}
        rss: dict[str, list[float]] = {}
        for round_ in range(args.runs + 1):  # the first round warms the page cache
            for argv, markers, rows, cwd in programs:
                times, peak = first_frames(argv, markers, cwd)
                if round_:
                    for row, seconds in zip(rows, times, strict=True):
                        samples.setdefault(row, []).append(seconds * 1000)
                        rss.setdefault(row, []).append(peak)
    median = {row: statistics.median(values) for row, values in samples.items()}
    rss_mb = {row: statistics.median(values) for row, values in rss.items()}
    baseline = median["empty Textual app"]
    targets = {"io-tui first paint": 1.5, "io-tui frame with panes": 2.0}
    print(f"{args.runs} rounds, load {os.getloadavg()[0]:.2f}")
    print(f"{'process start → frame':<33} {'median':>9} {'vs empty':>9} {'RSS':>7}  target")
    for row, ms in sorted(median.items(), key=lambda item: item[0].endswith(")")):
        target = targets.get(row)
        verdict = "" if target is None else f"≤ {target}× {'✓' if ms / baseline <= target else '✗'}"
        print(f"{row:<33} {ms:>6.0f} ms {ms / baseline:>8.2f}× {rss_mb[row]:>4.0f} MB  {verdict}")
    if args.json:
        figures = {
            row: {"ms": ms, "ratio": ms / baseline, "rss_mb": rss_mb[row]}
            for row, ms in median.items()
        }
        args.json.write_text(json.dumps({"figures": figures, "targets": targets}, indent=1))


if __name__ == "__main__":
    main()

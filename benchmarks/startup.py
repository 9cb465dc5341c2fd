"""Startup as a user meets it: a new process in a terminal, until its first frame is on screen.

Each program runs in a pseudo-terminal of 140×44; the clock runs from the fork to the first
output that contains the program's own text (io-tui's header title; the empty app's one word).
Measured the same way, in the same process, for an empty Textual app (the baseline), for
``io-tui`` on an empty store, and for ``io-tui demo``. Median of 7 after one warm-up (the OS
page cache). Run: ``.venv/bin/python benchmarks/startup.py``.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import sys
import tempfile
import termios
import time
from pathlib import Path

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


def first_frame(argv: list[str], marker: bytes, timeout_s: float = 20.0) -> float:
    """Seconds from the fork to the first output containing ``marker``."""
    started = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # the child: a terminal of the benchmark's size, then the program
        os.environ["TERM"] = "xterm-256color"
        os.execv(argv[0], argv)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
    seen = b""
    try:
        while time.perf_counter() - started < timeout_s:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if not ready:
                continue
            try:
                seen += os.read(fd, 1 << 16)
            except OSError:
                break
            if marker in seen:
                return time.perf_counter() - started
        raise RuntimeError(f"{argv} never showed {marker!r}")
    finally:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(fd)


def median_frame(argv: list[str], marker: bytes) -> float:
    first_frame(argv, marker)
    return statistics.median(first_frame(argv, marker) for _ in range(RUNS))


def main() -> None:
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="io-tui-startup-") as name:
        tmp = Path(name)
        empty_app = tmp / "empty_app.py"
        empty_app.write_text(EMPTY_APP)
        env_store = ["--store", str(tmp / "store.db")]
        os.environ["IO_TUI_CONFIG_DIR"] = str(tmp / "config")  # the defaults, not the user's
        rows = [
            ("empty Textual app", median_frame([python, str(empty_app)], b"baseline-ready")),
            (
                "io-tui (empty store)",
                median_frame([python, "-m", "io_tui", *env_store], b"cockpit"),
            ),
            (
                "io-tui demo",
                median_frame([python, "-m", "io_tui", *env_store, "demo"], b"cockpit"),
            ),
        ]
    baseline = rows[0][1]
    print(f"{'process start → first frame':<28} {'median':>8} {'vs empty':>9}")
    for label, seconds in rows:
        print(f"{label:<28} {seconds * 1000:>6.0f} ms {seconds / baseline:>8.2f}×")


if __name__ == "__main__":
    main()

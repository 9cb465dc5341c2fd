"""The terminal hangs up under ``make run``: the app quits instead of spinning on forever.

The hangup signal goes to the terminal's session leader alone. Under ``make run`` that is make,
which waits for its recipe instead of passing the signal on; the app, left reading the dead
terminal's end of file, must notice by itself or spin at most of a core with nobody to see
it; and once it notices, its shutdown must not block on Textual's output queue, whose writer
thread the dead terminal killed (``io_tui.ui.driver``; under load only). Here the real app
runs under a real make in tmux, and the tmux server is killed under it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
    pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed"),
]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[0]
    return state != "Z"  # a zombie has exited; its parent has not collected it yet


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text()
    except OSError:  # gone already
        return ""


def test_a_hung_up_terminal_ends_the_app_under_make(tmp_path: Path) -> None:
    socket = f"io-tui-hangup-{os.getpid()}"
    store = tmp_path / "store.db"
    makefile = tmp_path / "Makefile"
    makefile.write_text(f"run:\n\t{sys.executable} -m io_tui --store {store} demo\n")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env |= {"TERM": "xterm-256color", "IO_TUI_CONFIG_DIR": str(tmp_path / "cfg")}
    command = f"make -f {makefile} run"
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-s", "io", "-x", "100", "-y", "30", command],
        check=True, env=env, timeout=10,
    )  # fmt: skip
    pid = None
    try:
        deadline = time.monotonic() + 30
        while pid is None and time.monotonic() < deadline:
            found = [  # the app itself, not a shell make may have run it in
                pid
                for pid in subprocess.run(
                    ["pgrep", "-f", "--", f"--store {store} demo"], capture_output=True, text=True
                ).stdout.split()
                if _command(int(pid)).startswith("python")
            ]
            screen = subprocess.run(
                ["tmux", "-L", socket, "capture-pane", "-p", "-t", "io"],
                capture_output=True, text=True,
            ).stdout  # fmt: skip
            if found and "step" in screen:  # drawn, the demo under way
                pid = int(found[0])
            time.sleep(0.2)
        assert pid is not None, "the app never started"
        subprocess.run(["tmux", "-L", socket, "kill-server"], check=True, timeout=10)
        deadline = time.monotonic() + 60  # it quits within about a second; a loaded CI is slow
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(pid), "the app kept running after its terminal hung up"
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)

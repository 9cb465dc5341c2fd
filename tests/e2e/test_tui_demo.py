"""End to end: the real ``io-tui demo`` in tmux, driven with send-keys and read with capture-pane."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]


def _tmux(socket: str, *args: str) -> str:
    out = subprocess.run(
        ["tmux", "-L", socket, *args], check=True, capture_output=True, text=True, timeout=10
    )
    return out.stdout


def _wait_for(socket: str, needle: str, within_s: float = 30.0) -> str:
    deadline = time.monotonic() + within_s
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux(socket, "capture-pane", "-p", "-t", "io")
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen was:\n{screen}")


def _wait_for_line(socket: str, words: tuple[str, ...], within_s: float = 30.0) -> str:
    """Wait for a screen line holding every one of ``words``."""
    deadline = time.monotonic() + within_s
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux(socket, "capture-pane", "-p", "-t", "io")
        if any(all(w in line for w in words) for line in screen.splitlines()):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"no line holds {words!r}; the screen was:\n{screen}")


def _wait_until(socket: str, test: Callable[[list[str]], bool], what: str) -> None:
    deadline = time.monotonic() + 30.0
    screen = ""
    while time.monotonic() < deadline:
        screen = _tmux(socket, "capture-pane", "-p", "-t", "io")
        if test(screen.splitlines()):
            return
        time.sleep(0.2)
    raise AssertionError(f"{what} never showed; the screen was:\n{screen}")


def _state(line: str) -> str:
    """A manifest row's state: its first cell inside the table's border."""
    cells = line.strip("│ ").split()
    return cells[0] if cells else ""


def test_demo_tree_inspector_and_stub_reasons(tmp_path: Path) -> None:
    socket = f"io-tui-e2e-{os.getpid()}"
    store = tmp_path / "store.db"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    command = f"{sys.executable} -m io_tui --store {store} demo"
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-s", "io", "-x", "160", "-y", "48", command],
        check=True,
        env={**env, "TERM": "xterm-256color", "IO_TUI_CONFIG_DIR": str(tmp_path / "cfg")},
        timeout=10,
    )
    try:
        _wait_for(socket, "step   1")  # the run tree shows the demo's steps
        screen = _wait_for(socket, "Approve", within_s=30)  # the edit asks a human
        _wait_for(socket, "escape defers")  # armed: keys pressed as it appeared were ignored
        _tmux(socket, "send-keys", "-t", "io", "1")  # 1 = approve
        screen = _wait_for(socket, "#1 verified", within_s=30)  # its outcome, in words
        assert "#1" in screen and "step  10" in screen
        # select the last step: down from the run node onto step 10
        for _ in range(10):
            _tmux(socket, "send-keys", "-t", "io", "Down")
        time.sleep(0.5)
        _tmux(socket, "send-keys", "-t", "io", "i")
        _wait_for(socket, "Manifest")
        # the trace is read from the store in a worker: the header says "loading…" and the
        # table is empty until the summary line counts the request's entries
        screen = _wait_for_line(socket, ("entries,", "stub", "filter:"))
        # every manifest row shows its state and reason on screen
        assert any(word in screen for word in ("carried whole", "superseded", "elided", "step"))
        _tmux(socket, "send-keys", "-t", "io", "f")  # filter: carried → stubs
        _tmux(socket, "send-keys", "-t", "io", "f")
        # step 9's grep, which gave step 4's result again: its step is left out, and the row
        # says why; under the stubs filter no row carried whole is listed (the summary line,
        # which may wrap, and the notice both say "filter: stubs" first)
        row = ("dropped", "word_count", "untrusted data")  # its reason: past 80 columns
        _wait_until(
            socket,
            lambda lines: (
                any(all(w in line for w in row) for line in lines)
                and not any(_state(line) in ("full", "refreshed") for line in lines)
            ),
            "the stub rows alone",
        )
        _tmux(socket, "send-keys", "-t", "io", "Escape")
        _wait_for(socket, "Runs")
        _tmux(socket, "send-keys", "-t", "io", "C-q")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)

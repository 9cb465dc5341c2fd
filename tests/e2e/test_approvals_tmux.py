"""End to end in tmux: the demo asks, the user defers (5) and quits; io-tui starts again on the
same --store, the inbox (F2) lists the request, 1 approves it, and the demo finishes verified."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
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


def _screen(socket: str) -> str:
    return _tmux(socket, "capture-pane", "-p", "-t", "io")


def _wait_for(socket: str, needle: str, within_s: float = 30.0) -> str:
    deadline = time.monotonic() + within_s
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(socket)
        if needle in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{needle!r} never appeared; the screen was:\n{screen}")


def _wait_gone(socket: str, within_s: float = 15.0) -> None:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if subprocess.run(
            ["tmux", "-L", socket, "has-session", "-t", "io"], capture_output=True
        ).returncode:
            return
        time.sleep(0.2)
    raise AssertionError("io-tui did not quit")


def _start(socket: str, command: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    subprocess.run(
        ["tmux", "-L", socket, "new-session", "-d", "-s", "io", "-x", "160", "-y", "48", command],
        check=True,
        env={**env, "TERM": "xterm-256color", "IO_TUI_CONFIG_DIR": str(tmp_path / "cfg")},
        timeout=10,
    )


def _run_row(store: Path) -> tuple[str, str, str]:
    with sqlite3.connect(store) as conn:
        row = conn.execute(
            "SELECT status, outcome, workspace FROM runs ORDER BY id LIMIT 1"
        ).fetchone()
    return row[0], row[1], row[2]


def test_defer_quit_restart_and_approve_from_the_inbox(tmp_path: Path) -> None:
    socket = f"io-tui-e2e-approvals-{os.getpid()}"
    store = tmp_path / "store.db"
    base = f"{sys.executable} -m io_tui --store {store}"
    try:
        _start(socket, f"{base} demo", tmp_path)
        _wait_for(socket, "asks to write", within_s=40)  # the edit_file step asks
        _wait_for(socket, "escape defers")  # armed: the modal takes keys now
        _tmux(socket, "send-keys", "-t", "io", "5")  # 5 = defer
        _wait_for(socket, "paused", within_s=30)
        status, outcome, workspace = _run_row(store)
        assert (status, outcome) == ("paused", "awaiting_approval")
        _tmux(socket, "send-keys", "-t", "io", "C-q")
        _wait_gone(socket)
        assert "len(words(text))" not in (Path(workspace) / "textstats" / "core.py").read_text()

        _start(socket, base, tmp_path)
        _wait_for(socket, "inbox 1", within_s=30)  # the badge in the title
        _tmux(socket, "send-keys", "-t", "io", "F2")
        screen = _wait_for(socket, "1 of 1 pending")
        assert "textstats/core.py" in screen
        _wait_for(socket, "return len(text.split")  # the preview: the diff of the write
        _tmux(socket, "send-keys", "-t", "io", "Enter")  # the full modal
        _wait_for(socket, "asks to write")
        _wait_for(socket, "escape defers")
        _tmux(socket, "send-keys", "-t", "io", "1")  # 1 = approve; the run resumes
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _run_row(store)[0] != "finished":
            time.sleep(0.3)
        _wait_for(socket, "nothing waiting")
        _tmux(socket, "send-keys", "-t", "io", "C-q")
        _wait_gone(socket)
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)
    status, outcome, workspace = _run_row(store)
    assert (status, outcome) == ("finished", "success")
    assert "len(words(text))" in (Path(workspace) / "textstats" / "core.py").read_text()


def test_an_ask_tells_the_terminal_from_the_cockpit(tmp_path: Path) -> None:
    """The cockpit's ask rings and sends the configured desktop notification (OSC 9), passed
    through tmux (the app sees ``TMUX``): read from the bytes the app wrote to its pane."""
    socket = f"io-tui-e2e-notice-{os.getpid()}"
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text('[ui]\nnotify_on_ask = "osc9"\n')
    written = tmp_path / "pane.bytes"
    base = f"{sys.executable} -m io_tui --store {tmp_path / 'store.db'}"
    try:
        _start(socket, f"sh -c 'sleep 1; exec {base} demo'", tmp_path)
        _tmux(socket, "pipe-pane", "-o", "-t", "io", f"cat >> {written}")
        _wait_for(socket, "asks to write", within_s=40)
        deadline = time.monotonic() + 10
        notice = b"\x1bPtmux;\x1b\x1b]9;io-tui run 1 asks: write textstats/core.py\a\x1b\\"
        while time.monotonic() < deadline and notice not in written.read_bytes():
            time.sleep(0.2)
        assert notice in written.read_bytes()
        assert b"\a" + notice in written.read_bytes()  # the bell first
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)


def test_an_ask_of_a_run_elsewhere_tells_the_terminal_too(tmp_path: Path) -> None:
    """Runs in another process (``io-tui run --approve defer`` on the same store) ask: the
    cockpit, which hosts none of them, finds each new ask in the store and tells its terminal
    (an ask already pending when it read the inbox first is not news)."""
    socket = f"io-tui-e2e-notice-elsewhere-{os.getpid()}"
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text('[ui]\nnotify_on_ask = "osc9"\n')
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("def parse(x):\n    return a\n")
    edit = {"name": "edit_file",
            "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"}}  # fmt: skip
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"tool_calls": [edit]}, {"text": "done"}]}))
    store = tmp_path / "store.db"
    written = tmp_path / "pane.bytes"
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}

    def ask_elsewhere() -> None:
        done = subprocess.run(
            [sys.executable, "-m", "io_tui", "run", "fix it", "-w", str(workspace), "--provider",
             f"scripted:{script}", "--approve", "defer", "--store", str(store)],
            capture_output=True, text=True, timeout=120,
            env={**env, "IO_TUI_CONFIG_DIR": str(cfg)},
        )  # fmt: skip
        assert done.returncode == 3, done.stdout + done.stderr  # paused on its ask

    try:
        _start(
            socket, f"sh -c 'sleep 1; exec {sys.executable} -m io_tui --store {store}'", tmp_path
        )
        _tmux(socket, "pipe-pane", "-o", "-t", "io", f"cat >> {written}")
        _wait_for(socket, "Runs", within_s=40)
        ask_elsewhere()  # run 1: news or not, depending on whether the inbox was read before
        _wait_for(socket, "inbox 1")  # the cockpit has read the inbox since
        ask_elsewhere()  # run 2: news
        notice = b"\x1b]9;io-tui run 2 asks: write src/app.py\a"
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and notice not in written.read_bytes():
            time.sleep(0.2)
        assert notice in written.read_bytes()
        _wait_for(socket, "inbox 2")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, timeout=10)

"""``io-tui`` as a user starts it, in a terminal (a pty): its first frame is drawn before the
settings and the core are loaded (issue 34 item 4), and what their load finds wrong (a
malformed config) ends the app with exit 2 and one line on the terminal, no traceback."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from cli_process import IO_TUI, user_env

ROWS, COLS = 30, 100
LEAVE_ALT_SCREEN = b"\x1b[?1049l"
ESCAPE = re.compile(rb"\x1b\[[0-9;?<>=]*[A-Za-z]")

# What the first frame must not wait for: the settings (pydantic) and the core behind the panes
NOT_AT_FIRST_FRAME = (
    "pydantic",
    "pydantic_settings",
    "io_tui.config",
    "io_tui.core.store",
    "io_tui.core.events",
    "io_tui.ui.screens.main",
)

# ``io-tui ARGV`` with the modules loaded when the terminal is first sent the app's title
# written to the file named first (Textual's driver writes each frame whole)
FIRST_FRAME_PROBE = """
import json, sys
from textual.drivers.linux_driver import LinuxDriver

out, write, written = sys.argv[1], LinuxDriver.write, []

def write_frame(self, data):
    if not written and "cockpit" in data:
        written.append(sorted(sys.modules))
        with open(out, "w") as f:
            json.dump(written[0], f)
    write(self, data)

LinuxDriver.write = write_frame
from io_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""


# ``io-tui ARGV`` with whether the collector ran at its first frame, and when ctrl+q quit it
# (after the panes were up), written to the file named first
COLLECTOR_PROBE = """
import gc, json, sys
from textual.drivers.linux_driver import LinuxDriver
from io_tui.ui.app import IoApp

out, write, seen = sys.argv[1], LinuxDriver.write, {}

def write_frame(self, data):
    if "first frame" not in seen and "cockpit" in data:
        seen["first frame"] = gc.isenabled()
    write(self, data)

quit = IoApp.action_quit

async def quitting(self):
    seen["quit"] = gc.isenabled()
    with open(out, "w") as f:
        json.dump(seen, f)
    await quit(self)

LinuxDriver.write = write_frame
IoApp.action_quit = quitting
from io_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""


# ``io-tui ARGV`` with the first frame that shows the panes (a gauge's label: the skeleton draws
# none) written to the file named first (Textual's driver writes each frame whole)
PANES_PROBE = """
import sys
from textual.drivers.linux_driver import LinuxDriver

out, write, written = sys.argv[1], LinuxDriver.write, []

def write_frame(self, data):
    if not written and "counted" in data:
        written.append(data)
        with open(out, "w") as f:
            f.write(data)
    write(self, data)

LinuxDriver.write = write_frame
from io_tui.cli import main
sys.exit(main(sys.argv[2:]))
"""


class Terminal:
    """A program on a pty of ``ROWS`` x ``COLS``: what it wrote, and keys typed into it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.process = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
        )
        os.close(slave)
        self.output = b""

    def read_until(self, done: object, within_s: float = 60.0) -> None:
        """Read what it writes until ``done()`` holds (or it exits and has nothing more)."""
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            if callable(done) and done():
                return
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # the program is gone and the pty with it
                    data = b""
                self.output += data
                if not data and self.process.poll() is not None:
                    return
            elif self.process.poll() is not None:
                return
        raise AssertionError(f"timed out; the terminal's last output: {self.output[-500:]!r}")

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def wait(self) -> int:
        self.read_until(lambda: self.process.poll() is not None and not self._pending())
        return self.process.wait(timeout=30)

    def _pending(self) -> bool:
        return bool(select.select([self.master], [], [], 0)[0])

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        os.close(self.master)

    def after_the_app(self) -> list[str]:
        """The lines written after the app left the alternate screen, escapes taken out."""
        _, left, tail = self.output.rpartition(LEAVE_ALT_SCREEN)
        assert left, f"the app never drew: {self.output[-500:]!r}"
        return ESCAPE.sub(b"", tail).decode().splitlines()


def _env(config: Path | None = None) -> dict[str, str]:
    """The user's environment (the suite's dirs, ``tests/conftest.py``) in an xterm."""
    extra = {"TERM": "xterm-256color"}
    if config is not None:
        extra["IO_TUI_CONFIG"] = str(config)
    return user_env(extra)


@pytest.mark.parametrize("command", [[], ["demo"]], ids=["io-tui", "io-tui demo"])
def test_the_first_frame_is_drawn_before_the_settings_and_the_core_load(
    tmp_path: Path, command: list[str]
) -> None:
    loaded = tmp_path / "modules.json"
    store = ["--store", str(tmp_path / "store.db")]
    argv = [sys.executable, "-c", FIRST_FRAME_PROBE, str(loaded), *store, *command]
    terminal = Terminal(argv, _env())
    try:
        terminal.read_until(lambda: b"Quit" in terminal.output)  # then the panes' footer
        terminal.type(b"\x11")  # ctrl+q
        assert terminal.wait() == 0
    finally:
        terminal.close()
    modules = set(json.loads(loaded.read_text()))
    assert "io_tui.ui.app" in modules  # the app's frame, not an earlier write
    assert sorted(m for m in NOT_AT_FIRST_FRAME if m in modules) == []


def test_the_panes_first_frame_shows_each_panes_lines(tmp_path: Path) -> None:
    """The frame the panes arrive in shows what they hold: the transcript's line too, which it
    lays out as it learns its size (after that frame), so it draws it in that frame."""
    frame = tmp_path / "frame.txt"
    argv = [sys.executable, "-c", PANES_PROBE, str(frame), "--store", str(tmp_path / "s.db")]
    terminal = Terminal(argv, _env())
    try:
        terminal.read_until(lambda: b"Quit" in terminal.output)
        terminal.type(b"\x11")  # ctrl+q
        assert terminal.wait() == 0
    finally:
        terminal.close()
    assert "Select a run, or press ctrl+n" in frame.read_text()


def test_the_collector_is_off_until_the_panes_are_up(tmp_path: Path) -> None:
    """The start's imports and first frames run without the collector's passes; the app turns
    it on once its panes are on screen."""
    seen = tmp_path / "collector.json"
    argv = [sys.executable, "-c", COLLECTOR_PROBE, str(seen), "--store", str(tmp_path / "s.db")]
    terminal = Terminal(argv, _env())
    try:
        terminal.read_until(lambda: b"Quit" in terminal.output)  # the panes' footer
        time.sleep(0.5)  # the panes painted, the app's work after them done
        terminal.type(b"\x11")  # ctrl+q
        assert terminal.wait() == 0
    finally:
        terminal.close()
    assert json.loads(seen.read_text()) == {"first frame": False, "quit": True}


@pytest.mark.parametrize(
    ("config", "said"),
    [("max_steps = 'many'\n", "max_steps"), ("provider = [unclosed\n", "not valid TOML")],
    ids=["invalid value", "invalid TOML"],
)
@pytest.mark.parametrize("command", [[], ["demo"]], ids=["io-tui", "io-tui demo"])
def test_a_malformed_config_ends_the_app_with_one_line_and_exit_2(
    tmp_path: Path, config: str, said: str, command: list[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config)
    store = tmp_path / "store.db"
    terminal = Terminal([*IO_TUI, "--store", str(store), *command], _env(path))
    try:
        assert terminal.wait() == 2
    finally:
        terminal.close()
    lines = [line for line in terminal.after_the_app() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("io-tui: ") and said in lines[0]
    assert b"Traceback" not in terminal.output
    assert not store.exists()  # nothing was opened

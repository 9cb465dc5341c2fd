"""``io-tui run --approve ask`` on a terminal tells it of the ask before it prompts: the bell
and the desktop notification the terminal shows (OSC 9 for WezTerm here), as ``[ui]
notify_on_ask`` says; stderr on a real pseudo-terminal, the answer typed on stdin."""

from __future__ import annotations

import os
import select
import subprocess
import time
from pathlib import Path

from cli_process import IO_TUI, user_env

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


def _ask_on_a_terminal(
    tmp_path: Path, workspace: Path, script: Path, env: dict[str, str]
) -> tuple[bytes, int]:
    """Run until it prompts, answer ``y``; what its stderr (a pty) showed, and its exit code."""
    primary, secondary = os.openpty()
    proc = subprocess.Popen(
        [*IO_TUI, "run", "fix it", "-w", str(workspace), "--provider", f"scripted:{script}",
         "--store", str(tmp_path / "s.db"), "--approve", "ask"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=secondary, env=env,
    )  # fmt: skip
    os.close(secondary)
    shown = b""
    deadline = time.monotonic() + 90
    try:
        while b"[d]efer: " not in shown and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.5)
            if ready:
                shown += os.read(primary, 65536)
        assert b"[d]efer: " in shown, shown.decode(errors="replace")
        assert proc.stdin is not None
        proc.stdin.write(b"y\n")
        proc.stdin.close()
        code = proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    return shown, code


def test_an_ask_on_a_terminal_rings_and_notifies(tmp_path, workspace, write_script):
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed."}])
    env = user_env({"TERM_PROGRAM": "WezTerm", "IO_TUI_CONFIG_DIR": str(tmp_path / "cfg")},
                   drop=["TMUX", "IO_TUI_CONFIG"])  # fmt: skip
    shown, code = _ask_on_a_terminal(tmp_path, workspace, script, env)
    assert code == 0
    assert b"\a\x1b]9;io-tui run 1 asks: write src/app.py\a" in shown
    assert (workspace / "src" / "app.py").read_text().endswith("return x\n")


def test_off_in_the_config_sends_nothing(tmp_path, workspace, write_script):
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed."}])
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    (cfg / "config.toml").write_text('[ui]\nnotify_on_ask = "off"\n')
    env = user_env({"TERM_PROGRAM": "WezTerm", "IO_TUI_CONFIG_DIR": str(cfg)},
                   drop=["TMUX", "IO_TUI_CONFIG"])  # fmt: skip
    shown, code = _ask_on_a_terminal(tmp_path, workspace, script, env)
    assert code == 0
    assert b"\x1b]9;" not in shown and b"\a" not in shown

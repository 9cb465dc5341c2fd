"""The TUI meets a run whose process was killed: the run tree says interrupted, R (and the
palette) resumes it, the reconcile modal shows the call that was in flight and takes the
operator's word; the run then finishes under the same id in its own `io-tui resume` process."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from waits import until

from io_tui.ui.screens.reconcile import ReconcileScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.run_tree import RunTree

from .conftest import SIZE

POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n'


def killed_in_a_command(tmp_path: Path) -> None:
    """Run 1 of tmp_path/store.db, killed with SIGKILL while its command runs."""
    ws, marker = tmp_path / "ws", tmp_path / "started"
    ws.mkdir()
    # the orphaned command ends when the test writes ``release``
    code = f"touch {marker}; while [ ! -e {tmp_path / 'release'} ]; do sleep 0.05; done"
    script = tmp_path / "script.json"
    script.write_text(
        '{"model": "scripted", "turns": [{"tool_calls": [{"id": "x1", "name": "run_command",'
        f' "arguments": {{"argv": ["sh", "-c", "{code}"]}}}}]}}, {{"text": "done"}}]}}'
    )
    (tmp_path / "policy.toml").write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    argv = [sys.executable, "-m", "io_tui", "run", "t", "-w", str(ws), "--provider",
            f"scripted:{script}", "--policy", str(tmp_path / "policy.toml"), "--approve", "all",
            "--store", str(tmp_path / "store.db")]  # fmt: skip
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert time.monotonic() < deadline, "the command never started"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()


def status(store: Path) -> str:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0]


async def test_an_interrupted_run_resumes_from_the_tui(tmp_path, make_app) -> None:
    killed_in_a_command(tmp_path)
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        assert app.runs[1].status == "interrupted"
        tree = app.screen.query_one(RunTree)
        assert "interrupted" in str(tree.run_nodes[1].label)
        main = app.main_screen()
        assert main is not None
        main.select_run(1)
        await wait_until_idle(pilot)
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, ReconcileScreen), "the reconcile modal")
        modal = app.screen
        assert isinstance(modal, ReconcileScreen)
        assert "run_command" in modal.calls[0].known and "exec" in modal.calls[0].known
        await pilot.press("s")
        await until(lambda: status(tmp_path / "store.db") == "finished", "the resumed run", 90)
        app.refresh_runs(None)
        await wait_until_idle(pilot)
        await until(lambda: app.runs[1].status == "finished", "the app to see it finished")
    (tmp_path / "release").touch()

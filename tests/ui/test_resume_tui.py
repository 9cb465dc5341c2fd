"""The TUI meets a run whose process was killed (an `io-tui run`, or the app's own harness worker):
the run tree and transcript say interrupted, R (and the palette) resumes it, the reconcile modal
shows the call that was in flight and takes the operator's word; the run then finishes under the
same id in its own `io-tui resume` process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from textual.notifications import Notify
from textual.widgets._footer import FooterKey
from waits import until

from io_tui.config import Settings
from io_tui.core import ApproveAll, NewRunRequest
from io_tui.ui.app import create_app
from io_tui.ui.hosts import ProcessHost
from io_tui.ui.screens.reconcile import ReconcileScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.transcript import Transcript

from .conftest import SIZE

POLICY = '[defaults]\nwrite = "allow"\nexec = "allow"\n'


def killed_in_a_command(tmp_path: Path, then: tuple[dict[str, Any], ...] = (), *extra: str) -> None:
    """Run 1 of tmp_path/store.db, killed with SIGKILL while its command runs (its later turns:
    ``then``, and "done"; ``extra`` arguments for ``io-tui run``)."""
    # the markers live in the workspace: a sandboxed command has a /tmp of its own
    ws, marker = tmp_path / "ws", tmp_path / "ws" / "started"
    ws.mkdir()
    # the orphaned command ends when the test writes ``release``
    code = f"touch {marker}; while [ ! -e {tmp_path / 'ws' / 'release'} ]; do sleep 0.05; done"
    command = {"id": "x1", "name": "run_command", "arguments": {"argv": ["sh", "-c", code]}}
    turns = [{"tool_calls": [command]}, *then, {"text": "done"}]
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"model": "scripted", "turns": turns}))
    (tmp_path / "policy.toml").write_text(POLICY)
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    argv = [sys.executable, "-m", "io_tui", "run", "t", "-w", str(ws), "--provider",
            f"scripted:{script}", "--policy", str(tmp_path / "policy.toml"), "--approve", "all",
            "--store", str(tmp_path / "store.db"), *extra]  # fmt: skip
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
    (tmp_path / "ws" / "release").touch()


async def test_a_run_resumed_from_the_tui_gets_the_mcp_servers_it_started_with(
    tmp_path, make_app
) -> None:
    """Started with --mcp-config, killed; the app (no MCP servers in its settings) resumes it:
    the resumed run calls the server it started with."""
    config = tmp_path / "mcp.toml"
    config.write_text(
        f"[mcp.servers.time]\ncommand = {json.dumps(sys.executable)}\n"
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
    )
    clock = {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
    killed_in_a_command(tmp_path, ({"tool_calls": [clock]},), "--mcp-config", str(config))
    (tmp_path / "ws" / "release").touch()
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        main = app.main_screen()
        assert main is not None
        main.select_run(1)
        await wait_until_idle(pilot)
        await pilot.press("R")
        await until(lambda: isinstance(app.screen, ReconcileScreen), "the reconcile modal")
        await pilot.press("s")
        await until(lambda: status(tmp_path / "store.db") == "finished", "the resumed run", 90)
    with sqlite3.connect(tmp_path / "store.db") as db:
        [(text, is_error)] = db.execute(
            "SELECT text, is_error FROM observations WHERE tool = ?", (clock["name"],)
        ).fetchall()
    assert not is_error, text
    assert json.loads(text.split("\n", 1)[1])["timezone"] == "Asia/Tokyo"


async def test_a_run_whose_worker_was_killed_shows_interrupted_and_resumes_with_r(
    tmp_path: Path,
) -> None:
    ws, marker, release = tmp_path / "ws", tmp_path / "ws" / "started", tmp_path / "ws" / "release"
    ws.mkdir()
    # the first attempt waits for ``release``; its rerun finds the marker and ends at once
    code = (
        f"if [ -e {marker} ]; then echo again; else touch {marker};"
        f" while [ ! -e {release} ]; do sleep 0.05; done; fi"
    )
    call = {"id": "x1", "name": "run_command", "arguments": {"argv": ["sh", "-c", code]}}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"tool_calls": [call]}, {"text": "done"}]}))
    (tmp_path / "policy.toml").write_text(POLICY)
    store = tmp_path / "store.db"
    settings = Settings(policy=tmp_path / "policy.toml")
    app = create_app(settings, store, poll_interval=None, approver=ApproveAll())
    assert isinstance(app.host, ProcessHost)  # the default: the app's runs in a worker process
    notes: list[str] = []

    def hook(message: object) -> None:
        if isinstance(message, Notify):
            notes.append(message.notification.message)

    try:
        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            app.start_request(NewRunRequest("t", ws, f"scripted:{script}"))
            await until(marker.exists, "the command to start", 60)
            pid = app.host.client.pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)
            await until(lambda: app.runs[1].status == "interrupted", "the run interrupted")
            await until(lambda: any("(R resumes)" in n for n in notes), "the notice")
            assert "was killed (SIGKILL); interrupted: run 1" in notes[-1]
            main = app.main_screen()
            assert main is not None
            main.select_run(1)
            await wait_until_idle(pilot)
            assert "interrupted" in str(app.screen.query_one(RunTree).run_nodes[1].label)
            transcript = app.screen.query_one(Transcript)
            await until(lambda: "R resumes it" in transcript.live_text, "the status line")
            assert "running" not in transcript.live_text
            footer = [k.description for k in app.screen.query(FooterKey)]
            assert "Resume" in footer, footer  # the footer offers R once the run is interrupted
            await pilot.press("R")
            await until(lambda: isinstance(app.screen, ReconcileScreen), "the reconcile modal")
            await pilot.press("r")  # re-run the command
            await until(lambda: status(store) == "finished", "the resumed run", 90)
    finally:
        release.touch()  # the first attempt's orphaned command ends
    with sqlite3.connect(store) as db:
        (text,) = db.execute("SELECT text FROM observations WHERE call_id = 'x1'").fetchone()
    assert "again" in text  # the rerun's output, under the same run id

"""Live everywhere, on a real PostgreSQL server with a real ``io-tui worker`` process: two
cockpits attached to the store see a queued run as the worker drives it (status, steps, who
holds it) and its ask in their inboxes, through LISTEN/NOTIFY alone (the fallback sweep is put
out of reach); one operator decides from their inbox, the other cockpit says who did, the CLI
is told it came second, and the decision reaches the worker, which finishes the run. And the
other way round: the CLI decides first, the cockpit's inbox drops the request saying who, and
its own decision is told it came second."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import cli_process
import pytest
from cli_process import user_env as env
from textual.pilot import Pilot

from io_tui.config import Settings
from io_tui.core import operator
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.inbox import InboxScreen
from io_tui.ui.widgets.run_tree import RunTree, run_label

TRIES = 1200  # pauses of 0.05 s: what a condition may take on a loaded machine, at most


def io_tui(*args: str, store: str) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", store)


def start_worker(store: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "io_tui", "worker", "--store", store]
    return subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env()
    )


def label(app: IoApp, run_id: int) -> str:
    tree = app.screen.query_one(RunTree)
    view = tree.views.get(run_id)
    return run_label(view, tree.styles_by_status).plain if view is not None else ""


async def until(pilots: list[Pilot[int]], condition, what: str) -> None:
    for _ in range(TRIES):
        if condition():
            return
        for pilot in pilots:
            await pilot.pause(0.05 / len(pilots))
    raise AssertionError(f"never happened: {what}")


def said(app: IoApp) -> list[str]:
    return [n.message for n in app._notifications]


@pytest.fixture
def no_sweep(monkeypatch: pytest.MonkeyPatch) -> None:
    """The listeners' fallback sweep far off: whatever the cockpits show came by NOTIFY."""
    from io_tui.core.store import live

    monkeypatch.setattr(live, "FALLBACK_S", 3600.0)


async def test_two_cockpits_follow_a_worker_run_and_the_first_decider_wins(
    pg_url, no_sweep, tmp_path: Path, write_script
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = write_script(
        [
            {"tool_calls": [{"id": "w1", "name": "write_file",
                             "arguments": {"path": "a.txt", "content": "one\n"}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    first = create_app(Settings(ui={"harness": "inline"}), pg_url, poll_interval=2.0)
    second = create_app(Settings(ui={"harness": "inline"}), pg_url, poll_interval=2.0)
    worker: subprocess.Popen[str] | None = None
    async with first.run_test(size=(130, 32)) as one, second.run_test(size=(130, 32)) as two:
        pilots = [one, two]
        await until(pilots, lambda: first.main_screen() and second.main_screen(), "both composed")
        queued = io_tui("run", "write a", "-w", str(workspace), "--provider",
                        f"scripted:{script}", "--queue", store=pg_url)  # fmt: skip
        assert queued.returncode == 0, queued.stderr
        await until(pilots, lambda: all("#1 queued" in label(a, 1) for a in (first, second)),
                    "the queued run in both trees")  # fmt: skip
        worker = start_worker(pg_url)
        try:
            held_by = f"on {socket.gethostname()} pid {worker.pid}"
            await until(
                pilots,
                lambda: all(
                    a.runs[1].status == "asking" and held_by in label(a, 1) and a.desk.inbox_count
                    for a in (first, second)
                ),
                "the worker's ask in both cockpits, and who holds the run",
            )
            assert "write_file" in first.runs[1].steps[1].tools  # its events, read as they came
            # the second operator decides from their inbox
            second.action_inbox()
            await until(pilots, lambda: isinstance(second.screen, InboxScreen), "the inbox")
            inbox = second.screen
            assert isinstance(inbox, InboxScreen)
            await until(pilots, lambda: bool(inbox.records), "the request in the inbox")
            await two.press("1")
            me = operator("io-tui")
            await until(
                pilots,
                lambda: any(f"approve by {me}" in line for line in said(first)),
                "the first cockpit told who decided",
            )
            assert first.desk.inbox_count == 0
            # the CLI, too late
            late = io_tui("decide", "1", "deny", store=pg_url)
            assert late.returncode != 0
            assert f"already decided: approved by {me}" in late.stderr  # an error: on stderr
            # the worker holding the run got the decision: the run finishes, everywhere
            await until(
                pilots,
                lambda: all(a.runs[1].status == "finished" for a in (first, second)),
                "the run finished in both cockpits",
            )
            assert (workspace / "a.txt").read_text() == "one\n"
            await until(pilots, lambda: "on " not in label(first, 1), "no one holds it now")
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    trace = io_tui("approvals", "--history", store=pg_url)
    assert f"by {me}" in trace.stdout


async def test_a_decision_from_the_cli_leaves_the_inbox_saying_who_and_wins(
    pg_url, no_sweep
) -> None:
    from io_tui.core import Decision, Store
    from io_tui.core.authority.approvals import ApprovalRequest
    from io_tui.core.authority.policy import Act

    app = create_app(Settings(ui={"harness": "inline"}), pg_url, poll_interval=2.0)
    async with app.run_test(size=(130, 32)) as pilot:
        await until([pilot], lambda: app.main_screen() is not None, "composed")
        worker_side = await Store.open(pg_url)  # as a worker's approver writes its ask
        try:
            run_id = await worker_side.runs.create(
                goal="g", workspace="/w", contract={}, provider={}, policy={}
            )
            await worker_side.runs.set_status(run_id, "asking")
            request = ApprovalRequest(
                id=0, run_id=run_id, step=1, call_id="c1", tool="write_file", arguments={},
                act=Act.WRITE, target="b.txt", content="x", rule="r", layer="l", workspace="/w",
            )  # fmt: skip
            asked = await worker_side.approvals.create(request)
        finally:
            await worker_side.close()
        await until([pilot], lambda: app.desk.inbox_count == 1, "the ask in the inbox badge")
        app.action_inbox()
        await until([pilot], lambda: isinstance(app.screen, InboxScreen), "the inbox")
        inbox = app.screen
        assert isinstance(inbox, InboxScreen)
        await until([pilot], lambda: len(inbox.records) == 1, "the request listed")
        done = io_tui("decide", str(asked.id), "approve", store=pg_url)
        assert done.returncode == 0, done.stdout + done.stderr
        cli = operator("cli")
        await until([pilot], lambda: not inbox.records, "the request gone from the inbox")
        await until(
            [pilot],
            lambda: any(f"b.txt): approve by {cli}" in line for line in said(app)),
            "who decided, said",
        )
        line = await app.run_worker(app.desk.decide_pending(asked.id, Decision.deny())).wait()
        assert line == f"request {asked.id} was already decided: approved by {cli}"  # once

"""The app with its runs in a harness worker process (the default for users): asks answered in the
modal, interrupts, a worker that dies (while a run works, writes or asks), quitting while a run
asks, a request that cannot start."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from replay_server import ReplayServer, Reply
from textual.pilot import Pilot

from io_tui.config import Settings
from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.events import OPERATOR_CANCEL
from io_tui.core.run.request import NewRunRequest
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.hosts import ProcessHost
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import prepare_demo_workspace
from io_tui.ui.widgets.transcript import Transcript

SIZE = (120, 36)
WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire" / "openai_chat"


def process_app(tmp_path: Path, **kw: object) -> IoApp:
    app = create_app(Settings(), tmp_path / "store.db", poll_interval=None, **kw)  # type: ignore[arg-type]
    assert isinstance(app.host, ProcessHost)  # the default
    return app


async def until(predicate, pilot: Pilot, limit: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


def sleepy_script(path: Path, seconds: int = 60) -> str:
    turn = {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["sleep", str(seconds)]}}]}
    path.write_text(json.dumps({"turns": [turn, {"text": "done"}]}))
    return f"scripted:{path}"


async def row(app: IoApp, run_id: int) -> tuple[str, str]:
    async with await Store.open(app.store_path) as store:
        found = await store.runs.get(run_id)
    assert found is not None
    return found.status, found.outcome


async def test_the_demo_runs_in_the_worker_and_its_ask_is_answered_in_the_modal(
    tmp_path: Path,
) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    app = process_app(tmp_path, demo=True, demo_workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        assert app.host.is_live(1)
        await until(lambda: app.screen.armed, pilot)  # type: ignore[attr-defined]
        await pilot.press("1")  # approve
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot)
        await until(lambda: not app.host.is_live(1), pilot)
        assert app.runs[1].outcome == "success"
        assert len(app.runs[1].steps) >= 6  # every step arrived over the pipe
    assert await row(app, 1) == ("finished", "success")
    assert "words(text)" in (workspace / "textstats" / "core.py").read_text()


async def test_interrupt_cancels_a_run_in_the_worker(tmp_path: Path) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    app = process_app(tmp_path, approver=ApproveAll())
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("wait", workspace, sleepy_script(tmp_path / "s.json")))
        await until(lambda: app.host.is_live(1) and 1 in app.runs, pilot)
        app.screen.select_run(1)  # type: ignore[attr-defined]
        await pilot.pause(0.2)
        await pilot.press("x")
        await until(lambda: not app.host.is_live(1), pilot)
        await until(lambda: app.runs[1].status == "cancelled", pilot)
        assert app.runs[1].error == OPERATOR_CANCEL  # the worker says who cancelled it
        transcript = app.screen.query_one(Transcript)
        await until(lambda: "cancelled by the operator" in transcript.live_text, pilot)
        assert "thinking…" not in transcript.live_text
    assert await row(app, 1) == ("cancelled", "cancelled")
    async with await Store.open(app.store_path) as store:
        found = await store.runs.get(1)
    assert found is not None and found.error == OPERATOR_CANCEL


async def test_a_worker_that_dies_is_reported_and_the_next_run_gets_a_fresh_one(
    tmp_path: Path,
) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    app = process_app(tmp_path, approver=ApproveAll())
    notes: list[str] = []
    async with app.run_test(size=SIZE, message_hook=_notes(notes)) as pilot:
        app.start_request(NewRunRequest("wait", workspace, sleepy_script(tmp_path / "s.json")))
        await until(lambda: app.host.is_live(1), pilot)
        host = app.host
        assert isinstance(host, ProcessHost) and host.client._process is not None
        host.client._process.kill()
        await until(lambda: not app.host.is_live(1), pilot)
        await until(lambda: any("harness process was killed" in n for n in notes), pilot)
        note = next(n for n in notes if "harness process was killed" in n)
        assert "(SIGKILL); interrupted: run 1 (R resumes)" in note
        # not "running" forever: interrupted, so R (or io-tui resume) can continue it
        await until(lambda: app.runs[1].status == "interrupted", pilot)
        # the app is still up, and a new run starts a new worker and finishes
        script = tmp_path / "quick.json"
        script.write_text(json.dumps({"turns": [{"text": "all done"}]}))
        app.start_request(NewRunRequest("quick", workspace, f"scripted:{script}"))
        await until(lambda: 2 in app.runs and app.runs[2].status == "finished", pilot)
    assert await row(app, 1) == ("interrupted", "interrupted")


async def test_a_worker_that_dies_while_its_run_asks_withdraws_the_modal(tmp_path: Path) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    app = process_app(tmp_path, demo=True, demo_workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        pid = app.host.client.pid  # type: ignore[attr-defined]
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        # no modal left taking an answer nobody reads: the run is interrupted, R resumes it
        await until(lambda: not isinstance(app.screen, ApprovalScreen), pilot)
        await until(lambda: app.runs[1].status == "interrupted", pilot)
    assert await row(app, 1) == ("interrupted", "interrupted")
    async with await Store.open(app.store_path) as store:
        pending = await store.approvals.pending()
    assert [p.request.run_id for p in pending] == [1]  # its request waits in the inbox


async def test_quitting_while_a_run_asks_pauses_it_durably(tmp_path: Path) -> None:
    workspace = prepare_demo_workspace(tmp_path / "ws")
    app = process_app(tmp_path, demo=True, demo_workspace=workspace)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        await app.action_quit()
    assert await row(app, 1) == ("paused", "awaiting_approval")
    async with await Store.open(app.store_path) as store:
        pending = await store.approvals.pending()
    assert [p.request.run_id for p in pending] == [1]


async def test_a_request_that_cannot_start_is_reported(tmp_path: Path) -> None:
    app = process_app(tmp_path)
    notes: list[str] = []
    async with app.run_test(size=SIZE, message_hook=_notes(notes)) as pilot:
        app.start_request(NewRunRequest("x", tmp_path, "scripted:/nope.json"))
        await until(lambda: any("script not found" in n for n in notes), pilot)


def _notes(into: list[str]):  # type: ignore[no-untyped-def]
    from textual.notifications import Notify

    def hook(message: object) -> None:
        if isinstance(message, Notify):
            into.append(f"{message.notification.title}: {message.notification.message}")

    return hook


async def test_a_paused_run_decided_in_the_inbox_resumes_in_the_worker(tmp_path: Path) -> None:
    from textual.widgets import DataTable

    from io_tui.ui.screens.inbox import InboxScreen

    from ._steering import EDIT_TURN, make_workspace, paused_run

    workspace = make_workspace(tmp_path / "ws")
    turns = [EDIT_TURN, {"text": "done"}]
    async with await Store.open(tmp_path / "store.db") as store:
        paused = await paused_run(store, workspace, turns, tmp_path / "s.json")
    assert paused.status == "paused"
    app = process_app(tmp_path)
    notes: list[str] = []
    async with app.run_test(size=SIZE, message_hook=_notes(notes)) as pilot:
        await pilot.press("f2")
        await until(lambda: isinstance(app.screen, InboxScreen), pilot)
        table = app.screen.query_one("#inbox-table", DataTable)
        await until(lambda: table.row_count == 1, pilot)
        await pilot.press("enter")  # the full modal; its approve goes to the worker
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        await until(lambda: app.screen.armed, pilot)  # type: ignore[attr-defined]
        await pilot.press("1")  # the worker records it and resumes the run
        await until(lambda: any("run 1 finished" in n for n in notes), pilot)
    assert await row(app, 1) == ("finished", "finished")
    assert "return x" in (workspace / "src" / "app.py").read_text()


async def test_a_step_writing_when_its_worker_dies_stops_its_clock_and_says_so(
    tmp_path: Path, clock
) -> None:
    """The worker dies mid-answer: no event says so, the store's row does (interrupted); the
    step's "writing… 15s" stops there and reads how it ended, in the tree and the transcript."""
    body = (WIRE / "text_plain.sse").read_bytes()
    first = body.index(b"\n\n", body.index(b"\n\n") + 2) + 2  # the role, then "I'm"
    server = ReplayServer()  # the first piece of an answer, then nothing for an hour
    server.add(Reply(body=body, chunk_size=first, delay_s=3600))
    await server.start()
    workspace = prepare_demo_workspace(tmp_path / "ws")
    app = process_app(tmp_path, approver=ApproveAll())
    try:
        async with app.run_test(size=SIZE) as pilot:
            request = NewRunRequest(
                "wait", workspace, "llamacpp", model="m", base_url=server.base_url + "/v1"
            )
            app.start_request(request)
            await until(lambda: 1 in app.runs and 1 in app.runs[1].steps, pilot)
            await until(lambda: app.runs[1].steps[1].writing, pilot)
            screen = app.screen
            assert isinstance(screen, MainScreen)
            tree, transcript = screen.run_tree, screen.transcript
            screen.select_run(1)
            clock.advance(15)
            tree.tick()
            await until(lambda: "writing… 15s" in str(tree.step_nodes[(1, 1)].label), pilot)
            host = app.host
            assert isinstance(host, ProcessHost) and host.client._process is not None
            host.client._process.kill()
            await until(lambda: app.runs[1].status == "interrupted", pilot)
            await until(lambda: "interrupted" in str(tree.step_nodes[(1, 1)].label), pilot)
            clock.advance(30)  # the clock has stopped: nothing ticks on
            tree.tick()
            transcript.tick()
            await pilot.pause(0.2)
            label = str(tree.step_nodes[(1, 1)].label)
            assert "writing" not in label and "not finished (interrupted)" in label
            assert "writing…" not in transcript.live_text
            assert "↯ interrupted: its process died; R resumes it" in transcript.live_text
    finally:
        await server.stop()

"""The queue in the cockpit: the new-run dialog puts a run on the queue ("Run on: the queue",
with its labels and the settings it was started with), a worker serving those labels on another
connection to the same store file (as another process would) claims it, the run tree says which
host and pid drives it, its ask shows in this app's inbox, and the app's decision reaches the
worker; a held takeover goes back to the queue from the reconcile modal."""

from __future__ import annotations

import asyncio
import hashlib
import json

from textual.widgets import Input, Select

from io_tui.core import (
    Decision,
    Policy,
    QueueWorker,
    ScriptedProvider,
    Store,
    TaskContract,
    WorkerOptions,
    enqueue_run,
)
from io_tui.core.store.intents import Intent
from io_tui.core.store.leases import OWNER
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.reconcile import ReconcileScreen
from io_tui.ui.widgets.run_tree import RunTree, run_label

from .test_new_run import open_dialog, until


def tree_label(app, run_id: int) -> str:
    tree = app.screen.query_one(RunTree)
    return run_label(tree.views[run_id], tree.styles_by_status).plain


async def polled(pilot, app, condition, what: str) -> None:
    """Poll the store as the app's timer does (``poll_store``) until ``condition()``."""
    for _ in range(200):
        app.poll_store()
        await pilot.pause(0.05)
        if condition():
            return
    raise AssertionError(f"never happened: {what}")


async def test_a_run_queued_from_the_dialog_is_driven_by_a_worker_and_decided_here(
    make_app, tmp_path, write_script
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
    app = make_app(demo=False)
    app.settings.provider = f"scripted:{script}"  # the config's provider: the dialog's default
    async with app.run_test(size=(120, 30)) as pilot:
        dialog = await open_dialog(pilot)
        dialog.query_one("#workspace", Input).value = str(workspace)
        labels = dialog.query_one("#labels-row")
        assert not labels.display  # labels are the queue's: hidden for this machine
        dialog.query_one("#run-on", Select).value = "queue"
        await until(pilot, lambda: labels.display, "the labels field shown for the queue")
        dialog.query_one("#labels", Input).value = "linux, gpu  gpu"
        dialog.query_one("#task", Input).focus()
        await pilot.press(*"queued task", "ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        tree = app.screen.query_one(RunTree)
        await polled(pilot, app, lambda: 1 in tree.views, "the queued run in the tree")
        row = await app.store.runs.get(1)
        assert row is not None and row.status == "queued"
        assert row.origin is not None and row.origin["settings"]["provider"] == f"scripted:{script}"
        assert tree_label(app, 1).startswith("◌ #1 queued")
        entry = await app.store.queue.entry(1)
        assert entry is not None and entry.labels == ("gpu", "linux")
        assert await app.store.queue.claim(("gpu",)) is None  # a worker lacking "linux"

        other = await Store.open(app.store_path)  # the worker's own connection
        options = WorkerOptions(
            scratch=tmp_path / "scratch", labels=("gpu", "linux"), poll_s=0.02, until_empty=True
        )
        worker = QueueWorker(other, options, log=lambda line: None)
        serving = asyncio.create_task(worker.serve())
        try:
            await polled(pilot, app, lambda: app.runs[1].status == "asking", "the ask")
            assert f"on {OWNER.host} pid {OWNER.pid}" in tree_label(app, 1)
            (pending,) = await app.store.approvals.pending()
            deciding = app.desk.decide_pending(pending.request.id, Decision.approve())
            said = await app.run_worker(deciding).wait()  # as the inbox does, in a worker
            assert "approve recorded" in said
            await asyncio.wait_for(serving, 30)
        finally:
            if not serving.done():
                serving.cancel()
            await other.close()
        await polled(pilot, app, lambda: app.runs[1].status == "finished", "the run finished")
        assert "on " not in tree_label(app, 1)  # no one holds it now
        assert (workspace / "a.txt").read_text() == "one\n"


async def test_resuming_a_held_queue_run_puts_it_back_on_the_queue_with_the_choice(
    make_app, tmp_path, write_script
) -> None:
    app = make_app(demo=False)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = write_script([{"text": "done"}])
    async with app.run_test(size=(120, 30)) as pilot:
        store = app.store
        await store.db.open_soon()
        contract = TaskContract(goal="held", workspace=workspace)
        run_id = await enqueue_run(store, contract, ScriptedProvider.from_file(script), Policy())
        await store.queue.claim(())
        await store.intents.begin(
            Intent(run_id, 1, "x1", "run_command", {"argv": ["true"]}, "exec", "true")
        )
        await store.queue.hold(run_id, "run_command was in flight")
        await store.runs.set_status(run_id, "interrupted", "interrupted")
        await until(pilot, lambda: bool(app.screen.query(RunTree)), "the main screen composed")
        tree = app.screen.query_one(RunTree)
        await polled(pilot, app, lambda: run_id in tree.views, "the held run in the tree")
        assert "held for the operator" in tree_label(app, run_id)
        app.action_resume_run(run_id)
        await until(pilot, lambda: isinstance(app.screen, ReconcileScreen), "the reconcile modal")
        await pilot.press("s")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the modal closed")
        entry = None
        for _ in range(100):
            entry = await store.queue.entry(run_id)
            if entry is not None and entry.held is None:
                break
            await pilot.pause(0.05)
        assert entry is not None and entry.held is None and entry.reconcile == "skip"


async def test_a_run_queued_from_the_dialog_records_its_workspaces_mcp_json(
    make_app, tmp_path, write_script
) -> None:
    """The dialog's queue takes the servers ``io-tui run`` would give a run in that workspace:
    its ``.mcp.json``'s with the config's, recorded for the worker, and the file announced."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    entry = {"command": "uvx", "args": ["mcp-server-time"]}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))
    app = make_app(demo=False)
    app.settings.provider = f"scripted:{write_script([{'text': 'done'}])}"
    async with app.run_test(size=(120, 30)) as pilot:
        digest = hashlib.sha256((workspace / ".mcp.json").read_bytes()).hexdigest()
        await app.store.trust.trust(str(workspace.resolve()), digest, "the operator")
        dialog = await open_dialog(pilot)
        dialog.query_one("#workspace", Input).value = str(workspace)
        dialog.query_one("#run-on", Select).value = "queue"
        dialog.query_one("#task", Input).focus()
        await pilot.press(*"queued task", "ctrl+s")
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog closed")
        await polled(pilot, app, lambda: 1 in app.runs, "the queued run")
        row = await app.store.runs.get(1)
        assert row is not None and row.origin is not None
        assert row.origin["settings"]["mcp"]["servers"]["proj"]["args"] == ["mcp-server-time"]
        said = [n.message for n in app._notifications]
        announced = f"MCP servers from {workspace / '.mcp.json'}: proj (uvx mcp-server-time)"
        assert announced in said

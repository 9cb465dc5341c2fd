"""The inbox: pending requests across runs, oldest first, "1 of N"; deciding resumes the run —
also after quitting and starting again on the same store; several asks at once are all kept."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import on
from textual.app import App, ComposeResult
from textual.widgets import DataTable, Static

from io_tui.core.approvals import ApprovalRequest, DecisionKind
from io_tui.core.contract import TaskContract
from io_tui.core.policy import Act
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run import Harness, RunResult, start_run
from io_tui.core.store import Store
from io_tui.ui.approver import ApprovalDesk, UIApprover
from io_tui.ui.messages import ApprovalRequested
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.inbox import InboxScreen
from ui._steering import EDIT_TURN, StoreHost, make_workspace, paused_run, script

FIXED = "def parse(x):\n    return x\n"


class RunsHost(App[None]):
    """A minimal app that runs tasks with the UI approver and answers asks through the desk."""

    def __init__(self, store_path: Path) -> None:
        super().__init__()
        self.store = Store(store_path)
        self.results: list[RunResult] = []

    async def on_load(self) -> None:
        await self.store.db.open()

    def compose(self) -> ComposeResult:
        yield Static("runs")

    @on(ApprovalRequested)
    def _asked(self, message: ApprovalRequested) -> None:
        ApprovalDesk.of(self).ask(message.request, message.future)

    def start(self, workspace: Path, script_path: Path) -> None:
        async def go() -> None:
            harness = Harness(
                store=self.store,
                provider=ScriptedProvider.from_file(script_path),
                approver=UIApprover(self),
            )
            contract = TaskContract(goal="fix parse", workspace=workspace, max_steps=5)
            self.results.append(await start_run(harness, contract))

        self.run_worker(go(), group="runs", exit_on_error=False)

    async def on_unmount(self) -> None:
        ApprovalDesk.of(self).shutdown()
        await self.store.close()


async def _until(predicate, pilot, limit: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


async def test_defer_quit_reopen_and_decide_from_the_inbox(
    tmp_path: Path, store_path: Path
) -> None:
    ws = make_workspace(tmp_path / "ws")
    path = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    first = RunsHost(store_path)
    async with first.run_test(size=(100, 32)) as pilot:
        first.start(ws, path)
        await _until(lambda: isinstance(first.screen, ApprovalScreen), pilot)
        assert "1 asking" in first.title
        await _until(lambda: first.screen.armed, pilot)  # type: ignore[attr-defined]
        await pilot.press("5")
        await _until(lambda: bool(first.results), pilot)
        assert first.results[0].status == "paused"
        assert "asking" not in first.title
    assert "return a" in (ws / "src" / "app.py").read_text()

    second = StoreHost(store_path, lambda store: InboxScreen(store, poll_interval=None))
    async with second.run_test(size=(100, 32)) as pilot:
        await second.workers.wait_for_complete()
        await pilot.pause()
        assert "1 of 1" in str(second.screen.query_one("#inbox-title").render())
        await pilot.press("1")
        await _until(lambda: not [w for w in second.workers if w.group == "runs"], pilot)
        await second.workers.wait_for_complete()
        await pilot.pause()
        assert second.screen.query_one("#inbox-table", DataTable).row_count == 0
    assert (ws / "src" / "app.py").read_text().startswith(FIXED)
    async with await Store.open(store_path) as store:
        run = await store.runs.get(first.results[0].run_id)
        assert run is not None and (run.status, run.outcome) == ("finished", "finished")
        (record,) = await store.approvals.history()
        assert record.decision is not None and record.decision.kind is DecisionKind.APPROVE
        assert record.performed and record.performed["performed"]


async def test_several_runs_asking_at_once_queue_one_modal_each(
    tmp_path: Path, store_path: Path
) -> None:
    app = RunsHost(store_path)
    workspaces = [make_workspace(tmp_path / f"ws{i}") for i in range(3)]
    async with app.run_test(size=(100, 32)) as pilot:
        for i, ws in enumerate(workspaces):
            app.start(ws, script(tmp_path / f"s{i}.json", [EDIT_TURN, {"text": "done"}]))
        await _until(lambda: len(ApprovalDesk.of(app).queue) == 3, pilot)
        assert "3 asking" in app.title
        seen = []
        for key in ("1", "4", "1"):
            await _until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
            screen = app.screen
            assert isinstance(screen, ApprovalScreen)
            seen.append(screen.request.id)
            assert screen.position.endswith(f"of {3 - len(seen) + 1}")
            await _until(lambda s=screen: s.armed, pilot)  # type: ignore[misc]
            await pilot.press(key)
            if key == "4":
                await pilot.pause()
                await pilot.press("enter")
            await _until(lambda s=screen: app.screen is not s, pilot)  # type: ignore[misc]
        await _until(lambda: len(app.results) == 3, pilot)
    assert seen == sorted(seen) and len(set(seen)) == 3
    statuses = sorted(r.outcome.value for r in app.results)
    assert statuses == ["denied", "finished", "finished"]
    async with await Store.open(store_path) as store:
        kinds = [r.decision.kind for r in await store.approvals.history() if r.decision]
        assert kinds == [DecisionKind.APPROVE, DecisionKind.DENY, DecisionKind.APPROVE]


async def test_inbox_lists_every_pending_request_oldest_first(
    tmp_path: Path, store_path: Path
) -> None:
    async with await Store.open(store_path) as store:
        for i in range(3):
            ws = make_workspace(tmp_path / f"ws{i}")
            await paused_run(store, ws, [EDIT_TURN], tmp_path / f"s{i}.json")
        ids = [r.request.id for r in await store.approvals.pending()]
    app = StoreHost(store_path, lambda store: InboxScreen(store, poll_interval=None))
    async with app.run_test(size=(100, 32)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.screen.query_one("#inbox-table", DataTable)
        assert [int(k.value or 0) for k in table.rows] == ids
        assert "1 of 3" in str(app.screen.query_one("#inbox-title").render())
        await pilot.press("down")
        assert "2 of 3" in str(app.screen.query_one("#inbox-title").render())
        await pilot.press("4")
        await pilot.pause()
        await pilot.press(*"no", "enter")
        await _until(lambda: not [w for w in app.workers if w.group == "runs"], pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert [int(k.value or 0) for k in table.rows] == [ids[0], ids[2]]
    async with await Store.open(store_path) as store:
        record = await store.approvals.get(ids[1])
        assert record is not None and record.decision is not None
        assert (record.decision.kind, record.decision.reason) == (DecisionKind.DENY, "no")


async def test_an_app_that_is_not_running_defers(store_path: Path) -> None:
    request = ApprovalRequest(1, 1, 1, "c", "write_file", {}, Act.WRITE, "x", "", "r", "l", "/w")
    decision = await asyncio.wait_for(UIApprover(RunsHost(store_path)).decide(request), 1)
    assert decision.kind is DecisionKind.DEFER


async def test_the_preview_follows_the_highlighted_request(
    tmp_path: Path, store_path: Path
) -> None:
    """A write previews its diff, an exec its argv and cwd, an MCP call its arguments."""
    from textual.widgets import Label

    from io_tui.ui.widgets.diff_view import DiffView
    from ui._steering import EXEC_TURN, mcp_request

    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EDIT_TURN], tmp_path / "a.json")
        await paused_run(store, ws, [EXEC_TURN], tmp_path / "b.json")
        await mcp_request(store, ws)
    app = StoreHost(store_path, lambda store: InboxScreen(store, poll_interval=None))

    def preview() -> str:
        pane = app.screen.query_one("#inbox-preview")
        return " ".join(str(w.render()) for w in pane.query("Static, Label"))

    async with app.run_test(size=(80, 24)) as pilot:
        await _until(lambda: app.screen.query("#inbox-preview DiffView"), pilot)
        view = app.screen.query_one("#inbox-preview").query_one(DiffView)
        assert view.old is not None and "return a" in view.old and "return x" in view.new
        await pilot.press("down")
        await _until(lambda: '["git", "status", "--short"]' in preview(), pilot)
        assert str(ws) in preview()
        await pilot.press("down")
        await _until(lambda: "Europe/Paris" in preview(), pilot)
        assert not app.screen.query(DiffView) and app.screen.query(Label)


async def test_enter_opens_the_modal_and_its_decision_resumes_the_paused_run(
    tmp_path: Path, store_path: Path
) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EDIT_TURN, {"text": "done"}], tmp_path / "s.json")
    app = StoreHost(store_path, lambda store: InboxScreen(store, poll_interval=None))
    async with app.run_test(size=(80, 24)) as pilot:
        await _until(lambda: app.screen.query_one("#inbox-table", DataTable).row_count, pilot)
        await pilot.press("enter")
        await _until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and screen.position == "1 of 1"
        await _until(lambda: screen.armed, pilot)
        await pilot.press("escape")  # a defer: back to the inbox, the request still pending
        await _until(lambda: isinstance(app.screen, InboxScreen), pilot)
        assert app.screen.query_one("#inbox-table", DataTable).row_count == 1
        await pilot.press("enter")
        await _until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        await _until(lambda: app.screen.armed, pilot)  # type: ignore[attr-defined]
        await pilot.press("1")
        await _until(lambda: isinstance(app.screen, InboxScreen), pilot)
        await _until(lambda: not [w for w in app.workers if w.group == "runs"], pilot)
    assert (ws / "src" / "app.py").read_text().startswith(FIXED)
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.history()
        assert record.decision is not None and record.decision.kind is DecisionKind.APPROVE

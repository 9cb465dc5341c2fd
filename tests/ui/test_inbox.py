"""The inbox: pending requests across runs, oldest first, "1 of N"; deciding resumes the run —
also after quitting and starting again on the same store; several asks at once are all kept."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from textual.containers import Vertical
from textual.pilot import Pilot
from textual.widgets import DataTable, Static

from io_tui.config import Settings
from io_tui.core.authority.approvals import ApprovalRequest, DecisionKind
from io_tui.core.authority.policy import Act, Policy
from io_tui.core.authority.review import ReviewerSpec
from io_tui.core.run.request import NewRunRequest
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.approver import UIApprover
from io_tui.ui.data import load_steps
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.inbox import InboxScreen
from ui._steering import EDIT_TURN, make_workspace, paused_run, script

FIXED = "def parse(x):\n    return x\n"


def _app(store_path: Path) -> IoApp:
    """The real app, its runs in its own loop, asking through its own desk."""
    return create_app(Settings(ui={"harness": "inline"}), store_path, poll_interval=None)


async def _inbox(app: IoApp, pilot: Pilot[None]) -> InboxScreen:
    app.action_inbox()
    await _until(
        lambda: isinstance(app.screen, InboxScreen) and app.screen.query("#inbox-table"), pilot
    )
    assert isinstance(app.screen, InboxScreen)
    return app.screen


def _start(app: IoApp, workspace: Path, script_path: Path) -> None:
    app.start_request(NewRunRequest("fix parse", workspace, f"scripted:{script_path}"))


async def _until(predicate, pilot, limit: float = 30.0) -> None:  # type: ignore[no-untyped-def]
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
    first = _app(store_path)
    async with first.run_test(size=(100, 32)) as pilot:
        _start(first, ws, path)
        await _until(lambda: isinstance(first.screen, ApprovalScreen), pilot)
        assert "1 asking" in first.title
        await _until(lambda: first.screen.armed, pilot)  # type: ignore[attr-defined]
        await pilot.press("5")
        await _until(lambda: 1 in first.runs and first.runs[1].status == "paused", pilot)
        await _until(lambda: "asking" not in first.title, pilot)
    assert "return a" in (ws / "src" / "app.py").read_text()

    second = _app(store_path)
    async with second.run_test(size=(100, 32)) as pilot:
        inbox = await _inbox(second, pilot)
        await second.workers.wait_for_complete()
        await pilot.pause()
        assert "1 of 1" in str(inbox.query_one("#inbox-title", Static).render())
        await pilot.press("1")
        await _until(lambda: not [w for w in second.workers if w.group == "runs"], pilot)
        await second.workers.wait_for_complete()
        await pilot.pause()
        assert inbox.query_one("#inbox-table", DataTable).row_count == 0
    assert (ws / "src" / "app.py").read_text().startswith(FIXED)
    async with await Store.open(store_path) as store:
        run = await store.runs.get(1)
        assert run is not None and (run.status, run.outcome) == ("finished", "finished")
        (record,) = await store.approvals.history()
        assert record.decision is not None and record.decision.kind is DecisionKind.APPROVE
        assert record.performed and record.performed["performed"]


async def test_several_runs_asking_at_once_queue_one_modal_each(
    tmp_path: Path, store_path: Path
) -> None:
    app = _app(store_path)
    workspaces = [make_workspace(tmp_path / f"ws{i}") for i in range(3)]
    async with app.run_test(size=(100, 32)) as pilot:
        for i, ws in enumerate(workspaces):
            _start(app, ws, script(tmp_path / f"s{i}.json", [EDIT_TURN, {"text": "done"}]))
        await _until(lambda: len(app.desk.queue) == 3, pilot)
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
        ended = lambda: [r for r in app.runs.values() if not r.live]  # noqa: E731
        await _until(lambda: len(ended()) == 3, pilot)
        statuses = sorted(str(r.outcome) for r in ended())
    assert seen == sorted(seen) and len(set(seen)) == 3
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
    app = _app(store_path)
    async with app.run_test(size=(100, 32)) as pilot:
        inbox = await _inbox(app, pilot)
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = inbox.query_one("#inbox-table", DataTable)
        assert [int(k.value or 0) for k in table.rows] == ids
        assert "1 of 3" in str(inbox.query_one("#inbox-title", Static).render())
        await pilot.press("down")
        assert "2 of 3" in str(inbox.query_one("#inbox-title", Static).render())
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
    decision = await asyncio.wait_for(UIApprover(_app(store_path)).decide(request), 1)
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
    app = _app(store_path)

    def preview() -> str:
        pane = app.screen.query_one("#inbox-preview", Vertical)
        return " ".join(str(w.render()) for w in pane.query("Static, Label"))

    async with app.run_test(size=(80, 24)) as pilot:
        await _inbox(app, pilot)
        await _until(lambda: app.screen.query("#inbox-preview DiffView"), pilot)
        view = app.screen.query_one("#inbox-preview", Vertical).query_one(DiffView)
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
    app = _app(store_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await _inbox(app, pilot)
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


async def test_the_inbox_says_why_the_reviewer_escalated(tmp_path: Path, store_path: Path) -> None:
    """A request a reviewer model escalated waits in the inbox with the reviewer's reason under
    it, and the run's transcript notes the verdict at its step."""
    judge = tmp_path / "judge.json"
    answer = {"text": "VERDICT: escalate\nREASON: the diff touches the parser's contract"}
    judge.write_text(json.dumps({"model": "judge", "turns": [answer]}))
    policy = Policy().with_reviewer(ReviewerSpec(f"scripted:{judge}"))
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        paused = await paused_run(store, ws, [EDIT_TURN], tmp_path / "s.json", policy=policy)
        (step,) = await load_steps(store, paused.run_id)
    assert ("asking", "⚖ reviewer scripted:judge on request 1: escalate — the diff touches"
            " the parser's contract") in step.notes  # fmt: skip
    app = _app(store_path)
    async with app.run_test(size=(120, 32)) as pilot:
        inbox = await _inbox(app, pilot)
        detail = inbox.query_one("#inbox-detail", Static)
        await _until(lambda: "escalate" in str(detail.render()), pilot)
        assert "reviewer scripted:judge: escalate — the diff touches the parser's contract" in str(
            detail.render()
        )

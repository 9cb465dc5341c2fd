"""The audit screen: every decision with the approval rate and median time to decide."""

from __future__ import annotations

import json
from pathlib import Path

from textual.widgets import Static

from io_tui.core.authority.approvals import Decision
from io_tui.core.authority.policy import Policy
from io_tui.core.authority.review import ReviewerSpec
from io_tui.core.steering.decisions import decide
from io_tui.core.store import Store
from io_tui.ui.screens.audit import AuditScreen
from io_tui.ui.widgets.table import Table
from ui._steering import EDIT_TURN, StoreHost, freeze_times, make_workspace, paused_run


async def test_audit_lists_decisions_with_stats(tmp_path: Path, store_path: Path) -> None:
    async with await Store.open(store_path) as store:
        for i in range(3):
            ws = make_workspace(tmp_path / f"ws{i}")
            await paused_run(store, ws, [EDIT_TURN], tmp_path / f"s{i}.json")
        pending = await store.approvals.pending()
        await decide(store, pending[0].request.id, Decision.approve())
        await decide(store, pending[1].request.id, Decision.deny("not now"))
        await freeze_times(store)
    app = StoreHost(store_path, lambda store: AuditScreen(store))
    async with app.run_test(size=(160, 24)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        stats = str(app.screen.query_one("#audit-stats", Static).render())
        assert "3 requests: 2 decided, 1 pending" in stats
        assert "approval rate 50%" in stats and "median time to decide 45.0s" in stats
        table = app.screen.query_one("#audit-table", Table)
        assert table.row_count == 3
        decisions = [str(table.cell(k, "decision")) for k in table.rows]  # cells are Text
        assert decisions == ["approve", "deny: not now", "pending"]
        assert str(table.cell(next(iter(table.rows)), "performed")) == "as proposed"


async def test_audit_shows_the_reviewers_verdicts_beside_who_decided(
    tmp_path: Path, store_path: Path
) -> None:
    """A request the reviewer approved, and one it escalated that a person then denied: the
    reviewer column, the decider, and the review's reasons and tokens in the detail."""
    judge = tmp_path / "judge.json"
    answers = [
        "VERDICT: approve\nREASON: the fix the goal asks for",
        "VERDICT: escalate\nREASON: unsure",
    ]
    turns = [{"text": a, "usage": {"prompt_tokens": 400, "completion_tokens": 10}} for a in answers]
    judge.write_text(json.dumps({"model": "judge", "turns": turns}))
    policy = Policy().with_reviewer(ReviewerSpec(f"scripted:{judge}"))
    async with await Store.open(store_path) as store:
        for i in range(2):  # one reviewer per run: the first approves, the second escalates
            judge.write_text(json.dumps({"model": "judge", "turns": turns[i:]}))
            ws = make_workspace(tmp_path / f"ws{i}")
            await paused_run(store, ws, [EDIT_TURN], tmp_path / f"s{i}.json", policy=policy)
        (pending,) = await store.approvals.pending()
        await decide(
            store, pending.request.id, Decision.deny("not now", decided_by="bob@desk (io-tui)")
        )
        await freeze_times(store)
    app = StoreHost(store_path, lambda store: AuditScreen(store))
    async with app.run_test(size=(200, 30)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        stats = str(app.screen.query_one("#audit-stats", Static).render())
        assert "reviewer: 2 reviewed, 1 decided, 1 escalated" in stats
        table = app.screen.query_one("#audit-table", Table)
        keys = list(table.rows)
        assert [str(table.cell(k, "reviewer")) for k in keys] == [
            "approve by scripted:judge", "escalate by scripted:judge",
        ]  # fmt: skip
        assert [str(table.cell(k, "by")) for k in keys] == [
            "reviewer scripted:judge", "bob@desk (io-tui)",
        ]  # fmt: skip
        table.focus()
        await pilot.press("down")
        await pilot.pause()
        detail = str(app.screen.query_one("#audit-detail", Static).render())
        assert "deny: not now (by bob@desk (io-tui))" in detail
        assert "reviewer scripted:judge: escalate — unsure (410 tokens" in detail

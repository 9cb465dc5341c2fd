"""A reviewer model in the TUI: a run started from the app under a policy file that names one is
reviewed before any modal would open. Its approve goes ahead with no modal at all; its
escalation opens the approval modal for the operator, and the transcript says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from io_tui.config import Settings
from io_tui.core.run.request import NewRunRequest
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.approval import ApprovalScreen
from ui._steering import EDIT_TURN, make_workspace, script

FIXED = "def parse(x):\n    return x\n"


def _app(tmp_path: Path, store_path: Path, answer: str, harness: str = "inline") -> IoApp:
    judge = tmp_path / "judge.json"
    judge.write_text(json.dumps({"model": "judge", "turns": [{"text": answer}]}))
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[reviewer]\nmodel = "scripted:{judge}"\n')
    settings = Settings(ui={"harness": harness}, policy=policy)
    return create_app(settings, store_path, poll_interval=None)


async def _until(predicate, pilot, limit: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


@pytest.mark.parametrize("harness", ["inline", "process"])
async def test_an_approve_goes_ahead_with_no_modal(
    tmp_path: Path, store_path: Path, harness: str
) -> None:
    """In the app's loop, and in the harness worker process the app sends its policy to."""
    ws = make_workspace(tmp_path / "ws")
    turns = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    app = _app(tmp_path, store_path, "VERDICT: approve\nREASON: the fix the goal asks for", harness)
    modals = []
    async with app.run_test(size=(120, 32)) as pilot:
        app.start_request(NewRunRequest("fix parse", ws, f"scripted:{turns}"))
        while not (1 in app.runs and app.runs[1].status == "finished"):
            modals.append(isinstance(app.screen, ApprovalScreen))
            await pilot.pause(0.05)
            assert len(modals) < 1200, "the run did not finish"
    assert not any(modals)
    assert (ws / "src" / "app.py").read_text().startswith(FIXED)
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.history()
    assert record.decision is not None and record.decision.decided_by == "reviewer scripted:judge"


async def test_an_escalation_opens_the_modal(tmp_path: Path, store_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    turns = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    app = _app(tmp_path, store_path, "VERDICT: escalate\nREASON: the goal does not say")
    async with app.run_test(size=(120, 32)) as pilot:
        app.start_request(NewRunRequest("fix parse", ws, f"scripted:{turns}"))
        await _until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        await _until(lambda: app.screen.armed, pilot)  # type: ignore[attr-defined]
        await pilot.press("1")
        await _until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot)
    assert (ws / "src" / "app.py").read_text().startswith(FIXED)
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.history()
    assert [r.verdict.value for r in record.reviews] == ["escalate"]
    assert record.decision is not None and not record.decision.decided_by.startswith("reviewer")

"""A run of this app asks, and another operator decides first (``io-tui decide`` from another
process): the desk hears the decision from the store, with no inbox timer running
(``poll_interval=None``), so the modal goes, the run goes on with that decision, and the
operator is told who decided. With the app's runs in its own loop and in the harness worker
process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from io_tui.config import Settings
from io_tui.core import Decision, Store, decide
from io_tui.core.run.request import NewRunRequest
from io_tui.ui.app import create_app
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.main import MainScreen
from ui._steering import APP_PY, EDIT_TURN, make_workspace, script


async def until(predicate: Callable[[], object], pilot: Pilot[Any], what: str) -> None:
    for _ in range(600):  # 30 s at most
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{what}: not reached")


@pytest.mark.parametrize("harness", ["inline", "process"])
async def test_an_ask_decided_elsewhere_leaves_the_screen_and_the_run_takes_it(
    tmp_path: Path, harness: str
) -> None:
    workspace = make_workspace(tmp_path / "ws")
    path = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    settings = Settings(ui={"harness": harness})  # type: ignore[arg-type]
    app = create_app(settings, tmp_path / "store.db", poll_interval=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: isinstance(app.screen, MainScreen), pilot, "the main screen")
        app.start_request(NewRunRequest("fix parse", workspace, f"scripted:{path}"))
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot, "the edit's modal")
        modal = app.screen
        assert isinstance(modal, ApprovalScreen)
        async with await Store.open(tmp_path / "store.db") as elsewhere:
            denial = Decision.deny("not now", decided_by="bob@elsewhere (cli)")
            decided = await decide(elsewhere, modal.request.id, denial)
        assert decided.result is None  # the run is live here: this app's run carries it out
        await until(lambda: app.screen is not modal, pilot, "the modal to go")

        def told() -> list[str]:
            return [n.message for n in app._notifications if n.title == "Decided elsewhere"]

        await until(told, pilot, "the operator told")  # a notification is a message, posted
        assert told() == [
            f"request {modal.request.id} (run 1: write src/app.py): deny by bob@elsewhere (cli)"
        ]
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot, "the run")
    assert (workspace / "src" / "app.py").read_text() == APP_PY  # denied: never written
    async with await Store.open(tmp_path / "store.db") as store:
        record = await store.approvals.get(modal.request.id)
    assert record is not None and record.decision == denial
    assert record.performed == {"performed": False}

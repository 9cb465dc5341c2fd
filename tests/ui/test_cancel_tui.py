"""``x`` on a paused run: the footer says "Cancel", a yes/no dialog names the request it denies,
and yes ends the run cancelled; its request leaves the inbox and the badge. No leaves it as it
was. (A live run's ``x`` still interrupts: ``test_process_host.py``.)"""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey
from waits import until

from io_tui.core import DecisionKind, Store
from io_tui.ui.screens.confirm import ConfirmScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.transcript import Transcript
from ui._steering import APP_PY, EDIT_TURN, make_workspace, paused_run

from .conftest import SIZE


def footer(app) -> list[str]:
    return [k.description for k in app.screen.query(FooterKey)]


async def test_x_cancels_a_paused_run_after_asking(tmp_path: Path, make_app) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(tmp_path / "store.db") as store:
        await paused_run(store, ws, [EDIT_TURN, {"text": "done"}], tmp_path / "s.json")
        other = await paused_run(store, ws, [EDIT_TURN], tmp_path / "t.json")
        assert other.status == "paused"
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        await until(lambda: app.desk.inbox_count == 2, "the inbox badge")
        assert "inbox 2" in app.title
        main = app.main_screen()
        assert isinstance(main, MainScreen)
        main.select_run(1)
        await wait_until_idle(pilot)
        assert app.runs[1].status == "paused"
        assert "Cancel" in footer(app) and "Interrupt" not in footer(app)

        await pilot.press("x")  # asks first: no it is
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        question = app.screen.question  # type: ignore[attr-defined]
        assert question.startswith("Cancel run 1, “fix parse”? It is paused, its ask deferred.")
        assert 'request 1 (write src/app.py) is denied ("the run was cancelled")' in question
        await pilot.press("n")
        await wait_until_idle(pilot)
        assert app.screen is main and app.runs[1].status == "paused"
        assert app.desk.inbox_count == 2

        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        await pilot.press("y")
        await until(lambda: app.runs[1].status == "cancelled", "the run cancelled")
        await until(lambda: app.desk.inbox_count == 1, "the inbox badge to drop")
        await wait_until_idle(pilot)
        assert "inbox 1" in app.title
        assert "cancelled" in str(app.screen.query_one(RunTree).run_nodes[1].label)
        transcript = app.screen.query_one(Transcript)
        await until(
            lambda: "cancelled by the operator while paused" in transcript.live_text,
            "the status line",
        )
        assert "Cancel" not in footer(app) and "Interrupt" not in footer(app)
        assert app.runs[2].status == "paused"  # the other run keeps its ask

    async with await Store.open(tmp_path / "store.db") as store:
        (left,) = await store.approvals.pending()
        assert left.request.run_id == 2
        record = await store.approvals.get(1)
        assert record is not None and record.decision is not None
        assert record.decision.kind is DecisionKind.DENY
        assert record.decision.decided_by.endswith("(io-tui)")
        row = await store.runs.get(1)
        assert row is not None and (row.status, row.outcome) == ("cancelled", "cancelled")
    assert (ws / "src" / "app.py").read_text() == APP_PY  # never written


async def test_x_cancels_an_interrupted_run_and_the_palette_says_cancel(
    tmp_path: Path, make_app
) -> None:
    from io_tui.ui.commands import KeyCommands

    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(tmp_path / "store.db") as store:
        await paused_run(store, ws, [EDIT_TURN], tmp_path / "s.json")
        await store.runs.set_status(1, "interrupted", "interrupted")  # its process died
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        main = app.main_screen()
        assert isinstance(main, MainScreen)
        main.select_run(1)
        await wait_until_idle(pilot)
        assert {"Cancel", "Resume"} <= set(footer(app))
        names = [name for name, _, _ in KeyCommands(app.screen).commands()]
        assert "Main: Cancel" in names and "Main: Interrupt" not in names
        await pilot.press("x")
        await until(lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
        question = app.screen.question  # type: ignore[attr-defined]
        assert "It is interrupted, its process died." in question
        await pilot.press("y")
        await until(lambda: app.runs[1].status == "cancelled", "the run cancelled")
        await until(lambda: app.desk.inbox_count == 0, "the inbox badge to drop")
        await wait_until_idle(pilot)
        assert "Resume" not in footer(app) and "Cancel" not in footer(app)

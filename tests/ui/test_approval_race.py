"""No accidental decision: keystrokes racing an ask, in the real app (create_app), with its runs
in the app's own loop and in the harness worker process.

While the operator types, a new ask waits as a banner (the title names it and the inbox key) and
the keys stay in the prompt; the modal opens once the operator is idle, or from the inbox, and
takes no key until it has armed. A fake clock stands for time passing (no timed assertions)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, Static

from io_tui.config import Settings
from io_tui.core.authority.approvals import DecisionKind
from io_tui.core.run.request import NewRunRequest
from io_tui.core.store import Store
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.inbox import InboxScreen
from io_tui.ui.screens.main import MainScreen
from ui._steering import EDIT_TURN, FakeClock, make_workspace, script

SIZE = (100, 30)
FIXED = "    return x\n"


def _app(tmp_path: Path, harness: str, **ui: Any) -> IoApp:
    settings = Settings(ui={"harness": harness, **ui})  # type: ignore[arg-type]
    return create_app(settings, tmp_path / "store.db", poll_interval=None)


async def until(predicate: Callable[[], object], pilot: Pilot[Any], limit: float = 30.0) -> None:
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


async def _type_while_a_run_asks(app: IoApp, pilot: Pilot[Any], tmp_path: Path) -> Input:
    """Type "please wait" into the prompt while a run starts and asks to edit src/app.py; then
    type on after the ask arrived, letters and digits that decide in a modal."""
    workspace = make_workspace(tmp_path / "ws")
    path = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    await until(lambda: isinstance(app.screen, MainScreen) and app.screen.query("#prompt"), pilot)
    prompt = app.screen.query_one("#prompt", Input)
    prompt.focus()
    await pilot.press(*"pl")
    app.start_request(NewRunRequest("fix parse", workspace, f"scripted:{path}"))
    await pilot.press(*"ease wait")  # the ask arrives somewhere in here
    desk = app.desk
    await until(lambda: desk.queue, pilot)
    await pilot.press(*" try yeand 12345", "enter")
    await pilot.pause()
    return prompt


def _toasts(app: IoApp) -> list[str]:
    return [n.message for n in app._notifications if n.title == "Approval waiting"]


async def _pending(app: IoApp) -> list[Any]:
    async with await Store.open(app.store_path) as store:
        return await store.approvals.pending()


@pytest.mark.parametrize("harness", ["inline", "process"])
async def test_keys_typed_into_the_prompt_never_decide_an_ask(tmp_path: Path, harness: str) -> None:
    app = _app(tmp_path, harness)
    clock = FakeClock()
    app.activity.clock = clock
    async with app.run_test(size=SIZE) as pilot:
        prompt = await _type_while_a_run_asks(app, pilot, tmp_path)
        # enter sent the text as a message; nothing else took a key
        assert not any(isinstance(s, ApprovalScreen) for s in app.screen_stack)
        assert "run 1 asks: write src/app.py — f2 to review" in app.title
        assert _toasts(app) == ["run 1 asks: write src/app.py — f2 to review"]
        (record,) = await _pending(app)
        assert record.request.target == "src/app.py" and record.decision is None
        # The operator stops typing: once the quiet time has passed the modal opens...
        prompt.value = ""
        clock.advance(1.0)
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await until(lambda: screen.armed_at is not None, pilot)  # painted: arming
        assert "asks: write" not in app.title  # the banner has become the modal
        assert _toasts(app) == []  # withdrawn: it would cover the modal's keys
        # ...and takes no key until it has armed (a key meanwhile arms it again).
        await pilot.press("1")
        await pilot.pause()
        assert app.screen is screen and not screen.armed
        clock.advance(1.0)
        await pilot.press("1")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot)
    assert FIXED in (tmp_path / "ws" / "src" / "app.py").read_text()


@pytest.mark.parametrize("harness", ["inline", "process"])
async def test_a_held_ask_is_decided_from_the_inbox(tmp_path: Path, harness: str) -> None:
    """The banner's key opens the inbox on the waiting request; enter opens its modal; its
    decision resolves the live run as the modal of the ask would have."""
    app = _app(tmp_path, harness)
    clock = FakeClock()
    app.activity.clock = clock
    async with app.run_test(size=SIZE) as pilot:
        prompt = await _type_while_a_run_asks(app, pilot, tmp_path)
        prompt.value = "still typing"
        await pilot.press("f2")
        await until(lambda: isinstance(app.screen, InboxScreen), pilot)
        table = app.screen.query_one("#inbox-table", DataTable)
        await until(lambda: table.row_count == 1, pilot)
        clock.advance(5.0)  # idle, but in the inbox: no modal pops over it
        await pilot.pause(0.3)
        assert isinstance(app.screen, InboxScreen)
        assert "waiting now" in str(app.screen.query_one("#inbox-detail", Static).render())
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        await until(lambda: screen.armed_at is not None, pilot)  # painted: arming
        await pilot.press("4")  # before it armed: ignored
        assert app.screen is screen
        clock.advance(1.0)
        await pilot.press("1")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot)
        assert not any(isinstance(s, ApprovalScreen) for s in app.screen_stack)
    assert FIXED in (tmp_path / "ws" / "src" / "app.py").read_text()
    async with await Store.open(app.store_path) as store:
        (record,) = await store.approvals.history()
    assert record.decision is not None and record.decision.kind is DecisionKind.APPROVE


async def test_a_recent_key_alone_holds_the_ask(tmp_path: Path) -> None:
    """An empty prompt, but a key a moment ago: the ask still waits; letters on, from the config,
    decide in the modal once it is armed."""
    app = _app(tmp_path, "inline", letter_shortcuts=True)
    clock = FakeClock()
    app.activity.clock = clock
    workspace = make_workspace(tmp_path / "ws")
    path = script(tmp_path / "s.json", [EDIT_TURN, {"text": "done"}])
    async with app.run_test(size=SIZE) as pilot:
        await until(
            lambda: isinstance(app.screen, MainScreen) and app.screen.query("#prompt"), pilot
        )
        await pilot.press("down")
        app.start_request(NewRunRequest("fix parse", workspace, f"scripted:{path}"))
        await until(lambda: app.desk.held, pilot)
        assert not isinstance(app.screen, ApprovalScreen)
        clock.advance(0.7)  # past typing_quiet_ms (600)
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        await until(lambda: app.screen.armed_at is not None, pilot)  # type: ignore[attr-defined]
        clock.advance(0.5)  # past approval_arm_ms (400)
        await pilot.press("y")
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot)


def test_letter_shortcuts_reach_the_config() -> None:
    assert Settings().ui.letter_shortcuts is False
    assert Settings(ui={"letter_shortcuts": True}).ui.letter_shortcuts  # type: ignore[arg-type]
    assert json.loads(Settings().model_dump_json())["ui"]["approval_arm_ms"] == 400

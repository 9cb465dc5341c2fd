"""The approval modal: every decision through its keys, rewrite refused across a deny, remember
with its live preview, and core applying what the modal returned."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Static, TextArea

from io_tui.core.authority.approvals import Decision, DecisionKind, RememberRule
from io_tui.core.authority.policy import Act
from io_tui.core.steering.decisions import decide
from io_tui.core.store import Store
from io_tui.ui.screens.approval import ApprovalScreen
from io_tui.ui.screens.deny import DenyScreen
from io_tui.ui.screens.remember import RememberScreen
from io_tui.ui.screens.rewrite import RewriteScreen
from io_tui.ui.widgets.diff_view import DiffView
from ui._steering import (
    EDIT_TURN,
    EXEC_TURN,
    FakeClock,
    StoreHost,
    make_workspace,
    paused_run,
)


@pytest.fixture
async def paused(tmp_path: Path, store_path: Path) -> Path:
    """A store with one paused run whose edit_file of src/app.py waits for a decision."""
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        result = await paused_run(store, ws, [EDIT_TURN, {"text": "done"}], tmp_path / "s.json")
        assert result.status == "paused"
    return ws


async def _screen(store: Store) -> ApprovalScreen:
    (record,) = await store.approvals.pending()
    return await ApprovalScreen.prepared(record.request, store=store, position="1 of 1", arm_s=0)


@pytest.mark.parametrize(
    ("keys", "kind"),
    [
        (["1"], DecisionKind.APPROVE),
        (["5"], DecisionKind.DEFER),
        (["escape"], DecisionKind.DEFER),
    ],
)
async def test_keys_decide(
    paused: Path, store_path: Path, keys: list[str], kind: DecisionKind
) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press(*keys)
        await pilot.pause()
    assert [d.kind for d in app.results] == [kind]


async def test_enter_and_stray_keys_never_decide(paused: Path, store_path: Path) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("enter", "space", "x", "down", "tab", "enter")
        await pilot.pause()
        assert app.results == []
        assert isinstance(app.screen, ApprovalScreen)


async def test_write_shows_diff_and_toggles(paused: Path, store_path: Path) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        view = app.screen.query_one(DiffView)
        assert view.old is not None and "return a" in view.old and "return x" in view.new
        assert view.stats.describe() == "+1 −1"
        assert not view.split
        await pilot.press("v")
        assert app.screen.query_one(DiffView).split


async def test_deny_with_reason(paused: Path, store_path: Path) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("4")
        await pilot.pause()
        assert isinstance(app.screen, DenyScreen)
        await pilot.press(*"generated file")
        await pilot.press("enter")
        await pilot.pause()
    assert app.results == [Decision.deny("generated file")]
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.pending()
        decided = await decide(store, record.request.id, app.results[0])
        assert decided.result is not None
        obs = await store.trace.observations(decided.run_id)
        assert any("generated file" in row.text for row in obs)


async def test_deny_escape_goes_back_to_the_request(paused: Path, store_path: Path) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("4", "escape")
        await pilot.pause()
        assert isinstance(app.screen, ApprovalScreen) and app.results == []


async def test_rewrite_is_validated_then_performed(paused: Path, store_path: Path) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RewriteScreen)
        editor = screen.query_one("#rewrite-json", TextArea)
        editor.text = (
            '{"path": "src/app.py", "old": "    return a\\n", "new": "    return x + 1\\n"}'
        )
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
    (decision,) = app.results
    assert decision.kind is DecisionKind.REWRITE
    assert decision.arguments == {
        "path": "src/app.py",
        "old": "    return a\n",
        "new": "    return x + 1\n",
    }
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.pending()
        await decide(store, record.request.id, decision)
        after = await store.approvals.get(record.request.id)
        assert after is not None and after.performed and after.performed["performed"]
        assert after.performed["arguments"] == decision.arguments
        assert after.request.arguments["new"] == "    return x\n"  # proposed kept
    assert "return x + 1" in (paused / "src" / "app.py").read_text()


async def test_rewrite_across_a_deny_is_refused_and_stays_open(
    paused: Path, store_path: Path
) -> None:
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RewriteScreen)
        screen.query_one(
            "#rewrite-json", TextArea
        ).text = '{"path": ".env", "old": "x", "new": "y"}'
        (paused / ".env").write_text("x=1\n")
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen
        error = str(screen.query_one("#rewrite-error", Static).render())
        assert "refused" in error and "builtin-secrets" in error
        assert screen.query_one("#rewrite-error", Static).has_class("-shown")
        # Invalid arguments are refused the same way.
        screen.query_one("#rewrite-json", TextArea).text = '{"path": "src/app.py"}'
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "invalid arguments" in str(screen.query_one("#rewrite-error", Static).render())
        assert app.results == []


async def test_rewrite_of_a_write_edits_path_and_content(tmp_path: Path, store_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    turn = {
        "tool_calls": [
            {"name": "write_file", "arguments": {"path": "src/new.py", "content": "a\n"}}
        ]
    }
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [turn], tmp_path / "s.json")
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("2")
        await pilot.pause()
        screen = app.screen
        screen.query_one("#rewrite-path", Input).value = "src/other.py"
        screen.query_one("#rewrite-content", TextArea).text = "b\n"
        await pilot.press("ctrl+s")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert app.results[0].arguments == {"path": "src/other.py", "content": "b\n"}


async def test_remember_prefills_pattern_and_previews_earlier_requests(
    tmp_path: Path, store_path: Path
) -> None:
    ws = make_workspace(tmp_path / "ws")
    other = make_workspace(tmp_path / "other")

    def write(path: str) -> dict[str, object]:
        return {
            "tool_calls": [{"name": "write_file", "arguments": {"path": path, "content": "z\n"}}]
        }

    async with await Store.open(store_path) as store:
        first = await paused_run(store, ws, [write("src/a.py")], tmp_path / "1.json")
        await paused_run(store, ws, [write("docs/x.md")], tmp_path / "2.json")
        elsewhere = await paused_run(store, other, [write("src/b.py")], tmp_path / "3.json")
        await paused_run(store, ws, [EDIT_TURN], tmp_path / "4.json")
        pending = await store.approvals.pending()
    ids = {r.request.target + str(r.request.run_id): r.request.id for r in pending}
    current = pending[-1]

    async def make(store: Store) -> ApprovalScreen:
        record = await store.approvals.get(current.request.id)
        assert record is not None
        return ApprovalScreen(record.request, store=store, arm_s=0)

    app = StoreHost(store_path, make)
    async with app.run_test(size=(110, 36)) as pilot:
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RememberScreen)
        await pilot.pause()
        # Exactly the path asked, by default: no earlier request wrote it.
        pattern = screen.query_one("#remember-pattern", Input)
        assert pattern.value == "src/app.py"
        table = screen.query_one("#remember-preview", DataTable)
        assert len(table.rows) == 0
        choices = [str(b.label) for b in screen.query("#remember-choices RadioButton")]
        assert choices == [
            "src/app.py  only this file · none of 3 earlier",
            "src/*       every file under src/ · 1 of 3 earlier (1 run)",
            "*.py        every .py file, in any folder · 1 of 3 earlier (1 run)",
        ]
        # The folder, chosen from the list: the pattern follows, and so does the preview.
        await pilot.click(screen.query("#remember-choices RadioButton")[1])
        await pilot.pause()
        assert pattern.value == "src/*"
        assert [int(k.value or 0) for k in table.rows] == [ids[f"src/a.py{first.run_id}"]]
        await pilot.click("#remember-scope RadioButton:last-of-type")
        await pilot.pause()
        assert [int(k.value or 0) for k in table.rows] == [
            ids[f"src/a.py{first.run_id}"],
            ids[f"src/b.py{elsewhere.run_id}"],
        ]
        status = str(screen.query_one("#remember-status", Static).render())
        assert "matches this request" in status
        assert "would have allowed 2 of the 3 earlier write requests (2 runs)" in status
        assert "everywhere: every run in every workspace" in str(
            screen.query_one("#remember-grant", Static).render()
        )
        assert "src/*       every file under src/ · 2 of 3 earlier (2 runs)" in [
            str(b.label) for b in screen.query("#remember-choices RadioButton")
        ]
        pattern.value = "docs/*"  # typed: no choice is filled
        await pilot.pause()
        assert not any(b.value for b in screen.query("#remember-choices RadioButton"))
        assert len(table.rows) == 1
        assert "does NOT match" in str(screen.query_one("#remember-status", Static).render())
        pattern.value = "src/*"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
    (decision,) = app.results
    assert decision.kind is DecisionKind.REMEMBER
    assert decision.rule == RememberRule("src/*", Act.WRITE, "global")
    async with await Store.open(store_path) as store:
        await decide(store, current.request.id, decision)
        (rule,) = await store.rules.list()
        assert (rule.pattern, rule.scope, rule.approval_id) == (
            "src/*",
            "global",
            current.request.id,
        )


async def test_exec_shows_argv_and_cwd(tmp_path: Path, store_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EXEC_TURN], tmp_path / "s.json")
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        text = " ".join(str(w.render()) for w in app.screen.query("Static, Label"))
        assert '["git", "status", "--short"]' in text
        assert str(ws) in text
        assert "default exec" in text
        await pilot.press("v")  # disabled for exec: nothing happens
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        # The exact command line, not the bare program; the hint's wider examples all match it.
        assert screen.query_one("#remember-pattern", Input).value == "git status --short"
        choices = [str(b.label) for b in screen.query("#remember-choices RadioButton")]
        assert [" ".join(c.split(" · ")[0].split()) for c in choices] == [
            "git status --short only this command",
            "git status * 'git status' with any arguments",
            "git every git command",
        ]
        grant = str(screen.query_one("#remember-grant", Static).render())
        assert "exactly the command 'git status --short'" in grant
        assert f"this workspace: every run in {ws}" in grant


async def test_markup_and_escapes_in_arguments_are_shown_as_text(
    tmp_path: Path, store_path: Path
) -> None:
    """A command may hold "[/]" (markup to Textual) or escape sequences: the modal and the
    inbox show them as text, and nothing reaches the terminal raw."""

    ws = make_workspace(tmp_path / "ws")
    argv = ["echo", "[/]", "[bold]x", "\x1b[2J"]
    turn = {"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [turn], tmp_path / "s.json")
    for app in (StoreHost(store_path, _screen), StoreHost.inbox(store_path)):
        async with app.run_test(size=(100, 32)) as pilot:
            await app.workers.wait_for_complete()
            await pilot.pause()
            text = " ".join(str(w.render()) for w in app.screen.query("Static, Label"))
            assert "[/]" in text and "[bold]x" in text
            assert "\x1b" not in text


async def test_letter_shortcuts_are_off_by_default(paused: Path, store_path: Path) -> None:
    """y e a n d are the letters that decided approvals typed into the prompt: they do nothing."""
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press(*"yeand", "t", "r")
        await pilot.pause()
        assert app.results == [] and isinstance(app.screen, ApprovalScreen)


async def test_letter_shortcuts_when_turned_on(paused: Path, store_path: Path) -> None:
    from io_tui.ui.approver import letter_keymap

    assert letter_keymap()["approval.approve"] == "1,y"
    assert letter_keymap()["approval.defer"] == "5,escape,d"
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        app.update_keymap(letter_keymap())
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert [d.kind for d in app.results] == [DecisionKind.APPROVE]


async def test_the_modal_ignores_keys_until_armed(paused: Path, store_path: Path) -> None:
    """Keys inside the arming time decide nothing and start it again; clicks wait too."""
    clock = FakeClock()

    async def make(store: Store) -> ApprovalScreen:
        (record,) = await store.approvals.pending()
        return ApprovalScreen(record.request, store=store, arm_s=0.4, clock=clock)

    app = StoreHost(store_path, make)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ApprovalScreen) and not screen.armed
        assert screen.has_class("-arming")
        await pilot.press("1")  # at once: ignored, arming again from now
        clock.advance(0.3)
        await pilot.press("4")  # 0.3 s after the last key: still ignored
        await pilot.click("#act-approve")
        clock.advance(0.3)
        await pilot.press("1")  # 0.3 s after the last key: ignored
        await pilot.pause()
        assert app.results == [] and app.screen is screen
        clock.advance(0.41)
        assert screen.armed
        await pilot.press("1")
        await pilot.pause()
    assert [d.kind for d in app.results] == [DecisionKind.APPROVE]


async def test_remember_a_rule_that_does_not_match_needs_a_second_ctrl_s(
    tmp_path: Path, store_path: Path
) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EXEC_TURN], tmp_path / "s.json")
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, RememberScreen)
        screen.query_one("#remember-pattern", Input).value = "pytest"
        await pilot.pause()
        status = screen.query_one("#remember-status", Static)
        assert "does NOT match this request" in str(status.render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen and app.results == []
        assert "ctrl+s again saves it anyway" in str(status.render())
        # Any change asks again.
        screen.query_one("#remember-pattern", Input).value = "pytest -q"
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert app.screen is screen and app.results == []
        await pilot.press("ctrl+s")
        await pilot.pause()
    (decision,) = app.results
    assert decision.rule == RememberRule("pytest -q", Act.EXEC, "workspace")


async def test_remember_saves_a_matching_rule_at_once(tmp_path: Path, store_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(store_path) as store:
        await paused_run(store, ws, [EXEC_TURN], tmp_path / "s.json")
    app = StoreHost(store_path, _screen)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        await pilot.press("3")
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
    (decision,) = app.results
    assert decision.rule == RememberRule("git status --short", Act.EXEC, "workspace")

"""Inspector, trace viewer, help, new-run dialog, command palette and themes, driven by Pilot."""

from __future__ import annotations

import json
from pathlib import Path

from palette import run_from_palette
from rich.console import Console
from scripted_run import run_script
from textual.widgets import DataTable, Input, Static, TabbedContent, TextArea

from io_tui.core import (
    ApproveAll,
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    start_run,
)
from io_tui.core.steering.trace import build_trace
from io_tui.ui.keymap import is_key
from io_tui.ui.messages import NewRunRequest
from io_tui.ui.screens.help import HelpScreen
from io_tui.ui.screens.inspector import InspectorScreen, _render_entry
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.new_run import SCRIPTED_DEMO, NewRunScreen
from io_tui.ui.screens.trace import TraceScreen, render_trace
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.themes import ThemeFile, load_theme, load_themes
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.table import Table
from io_tui.ui.widgets.title_bar import TitleBar
from io_tui.ui.widgets.transcript import status_line

from .conftest import SIZE


async def _inspector_at(app, pilot, step: int) -> InspectorScreen:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    screen.select_run(1, step)
    await pilot.pause(0.1)
    await pilot.press("i")
    await wait_until_idle(pilot)
    inspector = app.screen
    assert isinstance(inspector, InspectorScreen)
    return inspector


async def test_inspector_shows_the_manifest_keyed_with_states_and_reasons(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 10)
        assert inspector.step == 10
        assert "run 1 · step 10" in str(inspector.query_one(TitleBar).render())
        table = inspector.query_one("#entries", DataTable)
        assert table.row_count == len(inspector.rows) > 0
        states = {r.state for r in inspector.rows.values()}
        assert "full" in states
        sections = inspector.query_one("#sections", DataTable)
        assert {"system", "tools", "contract"} <= {k.value for k in sections.rows}
        # the first entry's full text is shown
        assert inspector.selected is not None


async def test_inspector_filter_is_a_keyed_update(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 10)
        table = inspector.query_one("#entries", DataTable)
        total = table.row_count
        inspector.set_filter("full")
        full = sum(1 for r in inspector.rows.values() if r.state == "full")
        assert table.row_count == full
        await pilot.press("f")  # cycles on to the next filter
        assert inspector.state_filter != "full"
        inspector.set_filter("all")
        assert table.row_count == total


async def test_inspector_filters_by_role_then_by_authority(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 10)
        table = inspector.query_one("#entries", DataTable)
        total = table.row_count
        roles = [r.role for r in inspector.rows.values()]
        assert "untrusted data" in roles and "runtime evidence" in roles
        await pilot.press("a")  # the first role present, in the vocabulary's order
        assert inspector.label_filter == "role: runtime evidence"
        assert table.row_count == roles.count("runtime evidence") < total
        await pilot.press("a")
        assert inspector.label_filter == "role: untrusted data"
        assert table.row_count == roles.count("untrusted data")
        await pilot.press("a")  # then by authority: the tools, by name
        authorities = sorted({r.authority for r in inspector.rows.values()})
        assert inspector.label_filter == f"authority: {authorities[0]}"
        shown = [inspector.rows[str(k.value)] for k in table.rows]
        assert shown and all(r.authority == authorities[0] for r in shown)
        detail = Console(width=200, record=True)
        assert inspector.view is not None
        detail.print(_render_entry(inspector.view.steps, None, shown[0]))
        assert f"authority: {authorities[0]}" in detail.export_text()
        assert "authority: " in str(inspector.query_one("#summary", Static).render())


async def test_inspector_stub_jumps_to_the_replacing_step(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 10)
        stubs = [(k, r) for k, r in inspector.rows.items() if r.superseded_by is not None]
        if not stubs:  # the context engine in this tree marks no supersession yet
            return
        key, stub = stubs[0]
        inspector.set_filter("stubs")
        inspector.show_entry(key)
        await pilot.press("j")
        await wait_until_idle(pilot)  # the later step's request read
        assert inspector.step > stub.superseded_by
        assert inspector.selected is None or inspector.selected.step == stub.superseded_by


async def test_inspector_steps_and_diff(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 5)
        await pilot.press("left_square_bracket")
        assert inspector.step == 4
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert inspector.step == 6
        await wait_until_idle(pilot)  # step 6's request read
        await pilot.press("d")
        assert inspector.query_one(TabbedContent).active == "tab-diff"
        diff = str(inspector.query_one("#diff", Static).render())
        assert "step 5 → step 6" in diff and "added (1)" in diff
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_inspector_diff_lists_a_step_left_out_before_it_was_sent_as_dropped(
    make_app,
) -> None:
    """The demo's step 9 grep is superseded before any request sends it: step 10's diff tab
    lists it under "left out (dropped)", never under "added"."""
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 10)
        await pilot.press("d")
        await wait_until_idle(pilot)
        diff = str(inspector.query_one("#diff", Static).render())
        added, rest = diff.split("added (", 1)[1].split("stubbed (", 1)
        dropped = rest.split("left out (dropped) (", 1)[1].split("refreshed (", 1)[0]
        assert "step 9 grep" not in added and added.startswith("0)")
        assert dropped.startswith("1)") and "- step 9 grep" in dropped


async def test_trace_viewer_searches_full_results(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        await pilot.press("t")
        await wait_until_idle(pilot)
        trace = app.screen
        assert isinstance(trace, TraceScreen)
        text = trace.query_one(TextArea).text
        assert "step 10" in text and "AssertionError: 4 != 0" in text  # unelided result
        assert "io-tui — trace of run 1" in str(trace.query_one(TitleBar).render())
        await pilot.press("slash")
        assert trace.query_one("#search", Input).has_focus
        await pilot.press(*"word_count", "enter")
        assert len(trace.matches) > 3
        first = trace.current
        await pilot.press("n")
        assert trace.current == first + 1
        await pilot.press("N")
        assert trace.current == first
        selected = trace.query_one(TextArea).selected_text
        assert selected.lower() == "word_count"


async def test_help_lists_every_binding_with_ids(make_app) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one(Table)
        ids = {str(table.cell(k, "binding id")) for k in table.rows}
        assert {
            "app.new_run",
            "main.inspect",
            "main.interrupt",
            "inspector.jump",
            "trace.search",
        } <= ids
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_keys_are_remappable_from_settings(make_app) -> None:
    app = make_app(demo=False, ui={"keys": {"app.help": "f2"}})
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f2")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)


async def test_key_entries_that_cannot_work_are_said_and_ignored(make_app) -> None:
    """An unknown binding id and a key Textual has no name for were taken without a word: F2
    went dead and the help listed "notakey!!". Now both are named in one error at start, and
    the bindings keep their keys; a good entry beside them still applies."""
    keys = {"app.inbox": "notakey!!", "nonexistent.id": "z", "app.help": "f9"}
    app = make_app(demo=False, ui={"keys": keys})
    async with app.run_test(size=SIZE) as pilot:
        (toast,) = [n for n in app._notifications if n.title == "[ui.keys] entries ignored"]
        assert "'nonexistent.id' is no binding's id" in toast.message
        assert "app.inbox = 'notakey!!': 'notakey!!' is not a key" in toast.message
        assert toast.severity == "error"
        assert "app.inbox" not in app.key_remaps and app.key_remaps["app.help"] == "f9"
        await pilot.press("f9")
        await pilot.pause(0.1)
        assert isinstance(app.screen, HelpScreen)
        assert "notakey" not in "".join(str(w.render()) for w in app.screen.query("*"))
        await pilot.press("escape")
        await pilot.press("f2")  # the inbox's own key still opens it
        await pilot.pause(0.1)
        assert type(app.screen).__name__ == "InboxScreen"


def test_key_names_are_checked_as_textual_names_keys() -> None:
    good = ["f2", "ctrl+i", "x", "?", "question_mark", "shift+tab", "ctrl+shift+up", "space"]
    assert all(is_key(k) for k in good)
    assert not any(is_key(k) for k in ["notakey!!", "ctrl+", "foo", " ", "ctl+x", ""])


async def test_new_run_dialog_validates_and_returns_a_request(make_app, tmp_path: Path) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+n")
        await pilot.pause(0.1)
        dialog = app.screen
        assert isinstance(dialog, NewRunScreen)
        await pilot.click("#start")
        await pilot.pause(0.1)
        assert "the task is empty" in str(dialog.query_one("#error", Static).render())
        dialog.query_one("#task", Input).value = "count lines"
        dialog.query_one("#workspace", Input).value = str(tmp_path / "missing")
        await pilot.click("#start")
        await pilot.pause(0.1)
        assert "no such directory" in str(dialog.query_one("#error", Static).render())
        assert app.screen is dialog
        dialog.query_one("#task", Input).value = "count lines"
        dialog.query_one("#workspace", Input).value = str(tmp_path)
        dialog.query_one("#token-budget", Input).value = "5000"
        request = dialog.request()
        assert request == NewRunRequest(
            "count lines", tmp_path, SCRIPTED_DEMO, None, None, 12, 5000, 24_000, None
        )
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_new_run_with_a_bad_provider_is_reported_not_fatal(make_app, tmp_path) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        app.start_request(NewRunRequest("x", tmp_path, provider="scripted:/nope.json"))
        await wait_until_idle(pilot)
        assert any("script not found" in n.message for n in app._notifications)
        assert app.runs == {}


async def test_command_palette_switches_theme(make_app) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await run_from_palette(pilot, "theme io-light")
        assert app.theme == "io-light"
        await pilot.press("ctrl+t")
        assert app.theme != "io-light"


def test_bundled_themes_validate() -> None:
    themes, errors = load_themes()
    assert errors == []
    names = {t.name for t in themes}
    assert {"io-dark", "io-light", "io-ember"} <= names
    assert any(not t.dark for t in themes)


def test_broken_theme_file_is_an_error_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nprimary = "not-a-colour"\n')
    try:
        load_theme(bad)
    except ValueError as exc:
        assert "bad.toml" in str(exc) and "primary" in str(exc)
    else:
        raise AssertionError("a broken theme must not load")
    themes, errors = load_themes(tmp_path)
    assert len(errors) == 1 and any(t.name == "io-dark" for t in themes)
    assert ThemeFile(name="x", primary="#112233").to_theme().name == "x"


async def test_broken_theme_is_notified_not_fatal(make_app, monkeypatch, tmp_path) -> None:
    from io_tui.ui import themes

    bad = tmp_path / "themes"
    bad.mkdir()
    (bad / "oops.toml").write_text("name = ")
    monkeypatch.setattr(themes, "load_themes", lambda: load_themes(bad))  # the app's, when built
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.1)
        assert app.theme == "io-dark"
        assert any("oops.toml" in n.message for n in app._notifications)


async def test_notifications_and_goals_are_text_not_markup(make_app) -> None:
    """A notification carries errors, paths and notes ("[/]" would raise as markup); a goal
    is the user's text: neither lets an escape sequence through."""
    from io_tui.ui.state import RunView
    from io_tui.ui.widgets.run_tree import RunTree

    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MainScreen)
        app.notify("cannot read a[/]b \x1b[2Jnow", title="[bold]x")
        screen.upsert_run(RunView(7, "fix [/] the \x1b]0;pwned\x07tests", "/w"))
        await pilot.pause()
        (note,) = app._notifications
        assert (note.message, note.title) == ("cannot read a[/]b now", "[bold]x")
        label = str(screen.query_one(RunTree).run_nodes[7].label)
        assert "fix [/] the tests" in label and "\x1b" not in label


async def test_inspector_diff_says_where_the_prompt_cache_prefix_broke(
    make_app, tmp_path: Path, workspace: Path
) -> None:
    # a run that rewrites its own AGENTS.md: the next request's frame changes, its prefix breaks
    (workspace / "AGENTS.md").write_text("Indent with tabs.\n")
    script = tmp_path / "frame.json"
    script.write_text(json.dumps({"turns": [
        {"tool_calls": [{"id": "c1", "name": "write_file",
                         "arguments": {"path": "AGENTS.md", "content": "Indent with spaces.\n"}}]},
        {"text": "done"},
    ]}))  # fmt: skip
    store = await Store.open(tmp_path / "store.db", create=True)
    await run_script(store, workspace, script)
    await store.close()
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        broken = (await build_trace(app.store, 1))["requests"][1]
        assert broken["cache"]["broke_at"] is not None
        inspector = await _inspector_at(app, pilot, broken["step"])
        await pilot.press("d")
        diff = str(inspector.query_one("#diff", Static).render())
        assert f"broke at message {broken['cache']['broke_at']}: " in diff
        assert broken["cache"]["why"] in diff.replace("\n", " ")


async def test_inspector_diff_says_a_request_extends_the_previous_one_whole(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        work = [r for r in (await build_trace(app.store, 1))["requests"] if r["purpose"] == "work"]
        whole = next(r for r in work[1:] if r["cache"]["broke_at"] is None)
        inspector = await _inspector_at(app, pilot, whole["step"])
        await pilot.press("d")
        diff = str(inspector.query_one("#diff", Static).render())
        assert "prompt cache: extends the previous request whole" in diff


async def test_inspector_trace_viewer_and_transcript_say_an_answer_was_cut(
    make_app, tmp_path: Path, workspace: Path
) -> None:
    script = tmp_path / "cut.json"
    script.write_text(json.dumps({"turns": [{"text": "The fix is to", "finish_reason": "length"}]}))
    store = await Store.open(tmp_path / "store.db", create=True)
    await run_script(store, workspace, script)
    trace = await build_trace(store, 1)
    await store.close()
    assert "request 1: stop reason length (raw 'length')" in render_trace(trace)
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 1)
        assert "stop reason length (length)" in str(inspector.summary.render())
        note = status_line(app.runs[1])  # the transcript's last line for the run
        assert note.startswith("✂ answer cut: the final answer was cut")
        # the tree marks it as the trace does: its own mark, never the ✓ of a verified run
        label = str(app.screen_stack[0].query_one(RunTree).run_nodes[1].label)
        assert label.startswith("✂ #1 answer cut ") and "✓" not in label
        assert render_trace(trace).startswith(
            "run 1 · ✂ finished with its final answer cut at the output limit · 1 step"
        )


async def test_the_inspector_says_why_a_section_is_in_and_what_it_left_out(
    make_app, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": "done"}]}))
    store = await Store.open(tmp_path / "store.db", create=True)
    ws = str(workspace.resolve())
    for key in ("style", "tone", "old-cmd", "test-cmd"):
        await store.notes.set(key, f"{key} value", "workspace", ws)
    await store.notes.expire("tone", "workspace", ws, 1.0)
    await store.notes.supersede("old-cmd", "test-cmd", "workspace", ws)
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=ApproveAll(),
        policy=Policy(),
    )
    await start_run(harness, TaskContract("answer", workspace))
    await store.close()
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        inspector = await _inspector_at(app, pilot, 1)

        async def detail_of(name: str) -> str:
            sections = inspector.query_one("#sections", DataTable)
            sections.focus()
            sections.move_cursor(row=sections.get_row_index(name))
            await pilot.pause(0.1)
            console = Console(width=200, record=True)
            console.print(inspector.query_one("#detail", Static).content)
            return console.export_text()

        memory = await detail_of("memory")
        assert "why: 2 notes of 4 recalled: 1 expired, 1 superseded" in memory
        assert "left out: tone — expired" in memory
        assert "left out: old-cmd — superseded by test-cmd" in memory
        agents = await detail_of("AGENTS.md")
        assert f"why: AGENTS.md found at {workspace / 'AGENTS.md'}" in agents
        assert "left out" not in agents
        system = await detail_of("system")
        assert "why: the harness's system prompt and skill catalogue" in system
        assert "version: " in system  # the skill catalogue's version


async def test_f_keys_work_while_the_help_is_open(make_app) -> None:
    """Each F-key opens its screen from the help (which closes: escape goes back to the
    main screen), and F1 closes it (issue 29)."""
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        for key, name in (("f2", "InboxScreen"), ("f3", "RulesScreen"), ("f4", "MemoryEditorScreen"), ("f5", "AuditScreen")):  # fmt: skip
            await pilot.press("f1")
            await until_screen(pilot, app, "HelpScreen")
            await pilot.press(key)
            await until_screen(pilot, app, name)
            await pilot.press("escape")
            await until_screen(pilot, app, "MainScreen")
        await pilot.press("f1")
        await until_screen(pilot, app, "HelpScreen")
        await pilot.press("f1")
        await until_screen(pilot, app, "MainScreen")


async def until_screen(pilot, app, name: str) -> None:
    for _ in range(200):
        if type(app.screen).__name__ == name:
            return
        await pilot.pause(0.05)
    raise AssertionError(f"{name} never showed; {type(app.screen).__name__} did")

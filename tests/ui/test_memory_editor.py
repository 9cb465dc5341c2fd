"""The memory editor: provenance, edit, pin/unpin, delete and clear with confirmation, recall
history, caps as gauges, and every change audited; snapshot of the editor."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.containers import Horizontal
from textual.widgets import DataTable, Input, OptionList, RadioButton, Static, TextArea

from io_tui.core import LogLine, MemoryNote
from io_tui.core.contract import MemoryLimits
from io_tui.core.store import Store
from io_tui.ui.screens.confirm import ConfirmScreen
from io_tui.ui.screens.memory_consolidate import ChooseNoteScreen, MergeScreen, PromoteScreen
from io_tui.ui.screens.memory_editor import (
    AddNoteScreen,
    ChooseWorkspaceScreen,
    EditValueScreen,
    MemoryEditorScreen,
)
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.gauges import Gauge
from io_tui.ui.widgets.table import Table
from ui._steering import StoreHost, freeze_times

WS = "/work/project-a"
LOG_AT = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC


async def _seed(store_path: Path) -> None:
    async with await Store.open(store_path) as store:
        limits = MemoryLimits()
        for i, (key, value) in enumerate(
            [
                ("test-command", "python3 -m unittest"),
                ("style", "ruff, 100 columns"),
                ("todo", "docs"),
            ]
        ):
            await store.notes.write(
                key=key,
                value=value,
                scope="workspace",
                workspace=WS,
                run_id=4,
                step=i + 2,
                limits=limits,
            )
        await store.notes.set("editor", "vim", "global", None)
        await store.daily_log.append(
            WS,
            [
                ("goal", "fix the parser"),
                ("outcome", "success after 3 steps, 1,200 tokens"),
                ("files", "src/app.py"),
                ("tests", "`python3 -m unittest` → exit code 0"),
            ],
            run_id=4,
            at=LOG_AT,
        )
        await store.recalls.record(4, 5, 11, ["test-command"], WS)
        await store.recalls.record(5, 2, 19, ["test-command"], WS)
        await freeze_times(store)
        await store.db.conn.execute("UPDATE memory_recalls SET at = 1700000000 + id * 600")
        await store.db.conn.commit()


def _editor(store: Store) -> MemoryEditorScreen:
    return MemoryEditorScreen(store, WS)


async def _settle(pilot: Any) -> None:
    """Workers done and the tables laid out at their final column widths (a table sizes its
    columns as rows arrive, so a picture taken a frame early shows them squeezed)."""
    await wait_until_idle(pilot)


async def test_notes_with_provenance_gauges_and_recalls(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(120, 36)) as pilot:
        await _settle(pilot)
        screen = app.screen
        table = screen.query_one("#memory-table", Table)
        rows = [{c: str(v) for c, v in table.row_cells(k).items()} for k in table.rows]
        assert [r["key"] for r in rows] == ["test-command", "style", "todo", "editor"]
        assert rows[0]["written by"] == "run 4 step 2" and rows[0]["recalls"] == "2"
        assert rows[3]["written by"] == "operator"
        assert screen.query_one("#gauge-workspace-entries", Gauge).value == 3
        recalls = screen.query_one("#memory-recalls", DataTable)
        # by run and step, what `io-tui trace RUN --context STEP` takes (a request's row id,
        # always empty for a real run's recall, is not shown)
        assert [[str(c) for c in recalls.get_row(k)[:2]] for k in recalls.rows] == [
            ["4", "5"],
            ["5", "2"],
        ]


async def test_edit_pin_delete_clear_are_audited(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(120, 36)) as pilot:
        await _settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditValueScreen)
        app.screen.query_one("#memory-value", TextArea).text = "python3 -m unittest -q"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        await pilot.press("p")
        await _settle(pilot)
        await pilot.press("down", "x")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.press("x")
        await pilot.pause()
        await pilot.press("y")
        await _settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        await pilot.press("y")
        await _settle(pilot)
        table = app.screen.query_one("#memory-table", Table)
        assert [str(table.cell(k, "key")) for k in table.rows] == ["test-command", "editor"]
    async with await Store.open(store_path) as store:
        note = await store.notes.get("test-command", "workspace", WS)
        assert note is not None and note.value == "python3 -m unittest -q" and note.pinned
        # a new text is not a new provenance: the agent's inference stays one until verified
        assert (note.section, note.kind, note.status) == ("project", "inference", "unverified")
        ops = [e.detail["op"] for e in await store.trace.events(0)]
        assert ops[-4:] == ["set", "pin", "delete", "clear"]


async def test_an_edit_that_empties_a_note_is_refused_inside_the_dialog(
    store_path: Path,
) -> None:
    """A note needs a value (an empty one could not be read back from an export): clearing one
    with `e` is refused, and the dialog stays open and says so, as the add dialog does."""
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, EditValueScreen)
        dialog.query_one("#memory-value", TextArea).text = "  \n"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert app.screen is dialog
        assert "a note needs a value" in str(dialog.query_one("#edit-error", Static).render())
        dialog.query_one("#memory-value", TextArea).text = "python3 -m unittest -v"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert isinstance(app.screen, MemoryEditorScreen)
    async with await Store.open(store_path) as store:
        note = await store.notes.get("test-command", "workspace", WS)
        assert note is not None and note.value == "python3 -m unittest -v"


def test_memory_editor_snapshot(snap_compare: Any, store_path: Path) -> None:
    """Three workspace notes and one global note, gauges, the first note's two recalls."""
    asyncio.run(_seed(store_path))
    assert snap_compare(StoreHost(store_path, _editor), terminal_size=(120, 30), run_before=_settle)


async def test_a_note_the_agent_wrote_with_markup_and_escapes_is_shown_as_text(
    store_path: Path,
) -> None:
    async with await Store.open(store_path) as store:
        value = "use [/] then [bold]x\x1b[2J"
        await store.notes.set("odd [/]", value, "workspace", WS)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(120, 36)) as pilot:
        await _settle(pilot)
        view = str(app.screen.query_one("#memory-value-view", Static).render())
        assert view == "verified fact · Project knowledge · by operator\nuse [/] then [bold]x"
        table = app.screen.query_one("#memory-table", Table)
        assert str(table.cell(next(iter(table.rows)), "key")) == "odd [/]"


async def test_add_a_note_with_its_errors_said_inside_the_dialog(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("a")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, AddNoteScreen)
        await pilot.press("ctrl+s")  # no key yet: said in the dialog, which stays open
        assert app.screen is dialog
        assert "must not be empty" in str(dialog.query_one("#note-error", Static).render())
        await pilot.press(*"lint")
        await pilot.press("ctrl+s")  # no value yet
        assert app.screen is dialog and dialog.query_one("#note-key", Input).value == "lint"
        dialog.query_one("#note-value", TextArea).text = "ruff check ."
        dialog.query_one("#scope-global", RadioButton).value = True
        await pilot.click("#section-lessons")  # section and type, as promote asks them
        await pilot.click("#kind-preference")
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert isinstance(app.screen, MemoryEditorScreen)
        table = app.screen.query_one("#memory-table", Table)
        assert "global\x1f\x1flint" in {k.value for k in table.rows}
    async with await Store.open(store_path) as store:
        note = await store.notes.get("lint", "global", None)
        assert note is not None and note.value == "ruff check ." and note.origin == "operator"
        assert (note.section, note.label) == ("lessons", "confirmed preference")


async def test_add_on_a_key_that_holds_a_note_asks_before_replacing_it(store_path: Path) -> None:
    """`a` with a key that holds a note does not replace it unseen: the dialog says so inside,
    keeps what was typed, and only a second ctrl+s on the same key replaces it."""
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("a")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, AddNoteScreen)
        await pilot.press(*"test-command")
        dialog.query_one("#note-value", TextArea).text = "pytest -q"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert app.screen is dialog
        error = str(dialog.query_one("#note-error", Static).render())
        assert "'test-command' already holds a workspace note (model inference" in error
        assert "ctrl+s again replaces it, or change the key" in error
        assert dialog.query_one("#note-key", Input).value == "test-command"
        assert dialog.query_one("#note-value", TextArea).text == "pytest -q"
        await pilot.press("s")  # another key (test-commands): a new note, the old one stays
        assert str(dialog.query_one("#note-error", Static).render()) == ""
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert isinstance(app.screen, MemoryEditorScreen)
        await pilot.press("a")  # again, and this time replace it
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, AddNoteScreen)
        await pilot.press(*"test-command")
        dialog.query_one("#note-value", TextArea).text = "python3 -m unittest -v"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert app.screen is dialog and "already holds" in str(
            dialog.query_one("#note-error", Static).render()
        )
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert isinstance(app.screen, MemoryEditorScreen)
    async with await Store.open(store_path) as store:
        kept = await store.notes.get("test-commands", "workspace", WS)
        assert kept is not None and kept.value == "pytest -q"
        replaced = await store.notes.get("test-command", "workspace", WS)
        assert replaced is not None and replaced.value == "python3 -m unittest -v"
        assert replaced.origin == "operator"


async def test_promote_to_a_key_that_holds_a_note_asks_before_replacing_it(
    store_path: Path,
) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        await pilot.press("l")
        await _settle(pilot)
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, PromoteScreen)
        await pilot.press(*"test-command", "ctrl+s")
        await _settle(pilot)
        assert app.screen is dialog
        error = str(dialog.query_one("#promote-error", Static).render())
        assert "'test-command' already holds a workspace note" in error
        async with await Store.open(store_path) as store:  # nothing written yet
            held = await store.notes.get("test-command", "workspace", WS)
            assert held is not None and held.value == "python3 -m unittest"
        await pilot.press("ctrl+s")  # the second press replaces it
        await _settle(pilot)
        assert isinstance(app.screen, MemoryEditorScreen)
    async with await Store.open(store_path) as store:
        note = await store.notes.get("test-command", "workspace", WS)
        assert note is not None and note.value.startswith("`python3 -m unittest`")
        assert note.source == "log 2023-11-14 run 4"


async def test_switch_to_another_workspace_the_store_knows_or_global_only(
    store_path: Path,
) -> None:
    await _seed(store_path)
    async with await Store.open(store_path) as store:
        await store.notes.set("deploy", "make ship", "workspace", "/work/project-b")
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        editor = app.screen
        assert isinstance(editor, MemoryEditorScreen)
        await pilot.press("w")
        await pilot.pause()
        chooser = app.screen
        assert isinstance(chooser, ChooseWorkspaceScreen)
        assert chooser.workspaces == [WS, "/work/project-b"]  # sorted: a before b
        await pilot.press("down", "enter")  # from project-a (highlighted) to project-b
        await _settle(pilot)
        table = editor.query_one("#memory-table", Table)
        assert [str(table.cell(k, "key")) for k in table.rows] == ["deploy", "editor"]
        assert "project-b" in str(editor.query_one("#memory-title", Static).render())
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("home", "enter")  # global notes only
        await _settle(pilot)
        assert [str(table.cell(k, "key")) for k in table.rows] == ["editor"]
        assert not editor.query_one("#gauges-workspace", Horizontal).display


def _keys_and_states(table: Table) -> list[tuple[str, str, str]]:
    return [
        (str(table.cell(k, "key")), str(table.cell(k, "type")), str(table.cell(k, "state")))
        for k in table.rows
    ]


async def test_consolidate_verify_supersede_expire_and_merge(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        table = app.screen.query_one("#memory-table", Table)
        await pilot.press("v")  # test-command: the agent's inference, now verified
        await _settle(pilot)
        await pilot.press("down", "down", "s")  # todo is superseded by ...
        await pilot.pause()
        chooser = app.screen
        assert isinstance(chooser, ChooseNoteScreen)
        assert [o.id for o in chooser.query_one(OptionList).options] == ["test-command", "style"]
        await pilot.press("down", "enter")  # ... style
        await _settle(pilot)
        await pilot.press("up", "t")  # style expires now
        await _settle(pilot)
        assert _keys_and_states(table) == [
            ("test-command", "verified inference", "active"),
            ("style", "model inference", "expired"),
            ("todo", "model inference", "→ style"),
            ("editor", "verified fact", "active"),
        ]
        view = str(app.screen.query_one("#memory-value-view", Static).render())
        assert view.startswith("model inference · Project knowledge · by run 4 step 3 · expired")
        await pilot.press("t")  # current again
        await _settle(pilot)
        await pilot.press("m")  # merge style into test-command
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
        merge = app.screen
        assert isinstance(merge, MergeScreen)
        value = merge.query_one("#merge-value", TextArea)
        assert value.text == "python3 -m unittest\nruff, 100 columns"
        value.text = "python3 -m unittest; lint with ruff (100 columns)"
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert _keys_and_states(table)[:2] == [
            ("test-command", "verified inference", "active"),
            ("style", "model inference", "→ test-command"),
        ]
    async with await Store.open(store_path) as store:
        recalled = {n.key: n for n in await store.notes.notes_for(WS)}
        assert set(recalled) == {"test-command", "editor"}  # superseded notes are not recalled
        assert recalled["test-command"].value == "python3 -m unittest; lint with ruff (100 columns)"
        ops = [e.detail["op"] for e in await store.trace.events(0)]
        assert ops[-6:] == ["verify", "supersede", "expire", "expire", "set", "supersede"]


async def test_deleting_the_note_that_superseded_another_says_it_becomes_current(
    store_path: Path,
) -> None:
    await _seed(store_path)
    async with await Store.open(store_path) as store:
        await store.notes.supersede("todo", "style", "workspace", WS)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        table = app.screen.query_one("#memory-table", Table)
        assert ("todo", "model inference", "→ style") in _keys_and_states(table)
        await pilot.press("down", "x")  # style
        await pilot.pause()
        confirm = app.screen
        assert isinstance(confirm, ConfirmScreen)
        assert confirm.question == (
            "Delete workspace note 'style'? It supersedes 'todo': it becomes current again"
            " (recalled)."
        )
        await pilot.press("y")
        await _settle(pilot)
        assert _keys_and_states(table)[:2] == [
            ("test-command", "model inference", "active"),
            ("todo", "model inference", "active"),
        ]
    async with await Store.open(store_path) as store:
        assert "todo" in {n.key for n in await store.notes.notes_for(WS)}


async def test_the_daily_log_view_promotes_a_line_to_a_note(store_path: Path) -> None:
    await _seed(store_path)
    app = StoreHost(store_path, _editor)
    async with app.run_test(size=(80, 24)) as pilot:
        await _settle(pilot)
        editor = app.screen
        assert isinstance(editor, MemoryEditorScreen)
        await pilot.press("l")
        await _settle(pilot)
        log = editor.query_one("#memory-log", Table)
        assert log.display and not editor.query_one("#memory-table", Table).display
        assert [str(log.cell(k, "field")) for k in log.rows] == [
            "goal",
            "outcome",
            "files",
            "tests",
        ]
        assert "Daily log" in str(editor.query_one("#memory-title", Static).render())
        await pilot.press("v")  # a notes action: not bound in the log
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, PromoteScreen)
        assert dialog.query_one("#promote-value", TextArea).text.startswith("`python3 -m unittest`")
        await pilot.press("ctrl+s")  # no key yet: said inside, the dialog stays
        assert app.screen is dialog
        assert "must not be empty" in str(dialog.query_one("#promote-error", Static).render())
        await pilot.press(*"tests")
        dialog.query_one("#section-lessons", RadioButton).value = True
        await pilot.press("ctrl+s")
        await _settle(pilot)
        assert str(log.cell(next(reversed(list(log.rows))), "promoted to")) == "tests"
        await pilot.press("l")
        await _settle(pilot)
        table = editor.query_one("#memory-table", Table)
        assert ("tests", "verified fact", "active") in _keys_and_states(table)
    async with await Store.open(store_path) as store:
        note = await store.notes.get("tests", "workspace", WS)
        assert note is not None
        assert (note.section, note.label, note.source) == (
            "lessons",
            "verified fact",
            "log 2023-11-14 run 4",
        )
        assert note.status == "verified"
        untouched = await store.notes.get("test-command", "workspace", WS)
        assert untouched is not None and untouched.status == "unverified"


# -- every dialog fits the screen --------------------------------------------------------------

LONG_WS = "/home/someone/projects/" + "a-rather-long-directory-name/" * 4 + "repo"
LONG_KEY = "test-command-with-a-rather-long-key-name"


def _dialogs() -> dict[str, Any]:
    note = MemoryNote(LONG_KEY, "python3 -m unittest\n" * 20, workspace=LONG_WS)
    other = MemoryNote("style", "ruff, 100 columns\n" * 10, workspace=LONG_WS)
    notes = [MemoryNote(f"key-{i}", f"value {i} " * 20) for i in range(30)]
    line = LogLine(1, LONG_WS, "2026-12-01", 12, "tests", "`python3 -m unittest` → 0 " * 8, 0.0)
    return {
        "edit": lambda: EditValueScreen(note),
        "confirm": lambda: ConfirmScreen(f"Delete the note '{LONG_KEY}' of {LONG_WS}?"),
        "add": lambda: AddNoteScreen(LONG_WS),
        "workspaces": lambda: ChooseWorkspaceScreen([f"{LONG_WS}-{i}" for i in range(40)], None),
        "choose-note": lambda: ChooseNoteScreen(f"Merge '{LONG_KEY}' into which note?", notes),
        "merge": lambda: MergeScreen(note, other),
        "promote": lambda: PromoteScreen(line),
    }


@pytest.mark.parametrize("size", [(80, 24), (80, 18)])
@pytest.mark.parametrize("name", list(_dialogs()))
async def test_every_memory_dialog_fits_with_long_content(name: str, size: tuple[int, int]) -> None:
    """Long keys, paths and values, many workspaces and notes: each dialog's parts stay inside
    its frame down to 80×24 and below, the list or text box giving up rows, never the title,
    the hint or the error line (the workspace list's last row stays inside at 80×24)."""
    app: App[None] = App()
    async with app.run_test(size=size) as pilot:
        screen = _dialogs()[name]()
        app.push_screen(screen)
        await wait_until_idle(pilot)
        if isinstance(screen, MergeScreen | EditValueScreen):  # the error line too
            screen.query_one(TextArea).text = ""
            screen.action_save()
            await wait_until_idle(pilot)
        dialog = screen.query_one(".memory-dialog, #confirm")
        inside = dialog.content_region
        shown = [w for w in dialog.query("*") if w.display and isinstance(w, Static | Input)]
        shown += [w for w in dialog.query("OptionList, TextArea, RadioSet")]
        for widget in shown:
            region = widget.region
            assert region.height > 0 and inside.contains_region(region), (widget, region, inside)

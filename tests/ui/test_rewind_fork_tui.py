"""Rewind, undo and fork through the real app: enter on a step's row opens what can be done from
it; "Rewind files to before this step" shows the diff first and restores the workspace; a hand
edit needs a choice before it goes on; W undoes; "Fork from here" makes a run that the tree
shows under its parent with the step it left from, and a real ``io-tui resume`` process drives
it to its end."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from waits import until

from io_tui.core import (
    ApproveAll,
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    start_run,
)
from io_tui.ui.screens.fork import ForkScreen
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.rewind import RewindScreen
from io_tui.ui.screens.step_menu import StepMenu
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.transcript import Transcript
from ui._steering import make_workspace

from .conftest import SIZE

TURNS = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "n\n"}}]},
    {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["rm", "README.md"]}}]},
    {"text": "done"},
]


async def finished_run(store: Store, ws: Path, script: Path) -> int:
    await asyncio.to_thread(script.write_text, json.dumps({"model": "scripted", "turns": TURNS}))
    harness = Harness(store, ScriptedProvider.from_file(script), ApproveAll(), policy=Policy())
    result = await start_run(harness, TaskContract("change files", ws))
    assert result.status == "finished"
    return result.run_id


async def open_step(app: Any, pilot: Any, run_id: int, step: int) -> MainScreen:
    main = app.main_screen()
    assert isinstance(main, MainScreen)
    await until(lambda: (run_id, step) in main.run_tree.step_nodes, "the step's row")
    main.select_run(run_id, step)  # opens the run's steps
    await wait_until_idle(pilot)
    main.select_run(run_id, step)  # the cursor on the step's row, now shown
    await wait_until_idle(pilot)
    main.run_tree.focus()
    assert main.run_tree.cursor_node is main.run_tree.step_nodes[(run_id, step)]
    return main


async def test_rewind_from_a_step_row_shows_the_diff_then_restores_and_undoes(
    tmp_path: Path, make_app
) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(tmp_path / "store.db") as store:
        await finished_run(store, ws, tmp_path / "s.json")
    assert await asyncio.to_thread(lambda: not (ws / "README.md").exists())
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        await open_step(app, pilot, 1, 2)
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, StepMenu), "the step's menu")
        await pilot.press("w")
        await until(lambda: isinstance(app.screen, RewindScreen), "the rewind dialog")
        screen = app.screen
        assert isinstance(screen, RewindScreen)
        await until(lambda: screen.plan is not None, "the plan")
        assert "1 file recreated" in str(screen.head.render())
        assert str(screen.files.get_row("README.md")[2]) == "recreated (deleted after)"
        assert (ws / "new.txt").exists()  # nothing changed yet
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, MainScreen), "the dialog to close")
        await until(lambda: (ws / "README.md").exists(), "README.md to come back")
        assert (ws / "new.txt").exists()  # step 1 made it: before step 2 it was there
        transcript = app.screen.query_one(Transcript)
        await until(
            lambda: "↶ files rewound to before step 2: 1 file recreated" in transcript.text_of(3),
            "the rewind in the transcript",
        )

        await pilot.press("W")  # undo it: back to the workspace the run left
        await until(lambda: isinstance(app.screen, RewindScreen), "the undo dialog")
        screen = app.screen
        assert isinstance(screen, RewindScreen)
        await until(lambda: screen.plan is not None, "the plan")
        assert str(screen.files.get_row("README.md")[2]) == "removed (created after)"
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, MainScreen), "the dialog to close")
        assert not (ws / "README.md").exists()

        (ws / "new.txt").write_text("edited by hand\n")  # someone else, after the run
        await pilot.press("w")
        await until(lambda: isinstance(app.screen, RewindScreen), "the rewind dialog")
        screen = app.screen
        assert isinstance(screen, RewindScreen)
        await until(lambda: screen.plan is not None, "the plan")
        assert screen.foreign.display and screen.foreign.row_count == 1
        assert screen.query_one("#rewind-go").disabled
        await pilot.press("y")  # refused until the file has a choice
        assert isinstance(app.screen, RewindScreen)
        screen.foreign.focus()
        await pilot.press("k")
        assert not screen.query_one("#rewind-go").disabled
        await pilot.press("y")
        await until(lambda: isinstance(app.screen, MainScreen), "the dialog to close")
        assert (ws / "new.txt").read_text() == "edited by hand\n"
        assert (ws / "README.md").exists()
    async with await Store.open(tmp_path / "store.db") as store:
        events = [e.detail for e in await store.trace.events(1) if e.kind == "rewound"]
    assert [(e["to_step"], e["undo"], e["kept"]) for e in events] == [
        (2, False, []),
        (None, True, []),
        (2, False, ["new.txt"]),
    ]


async def test_fork_from_a_step_row_runs_beside_its_parent(tmp_path: Path, make_app) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(tmp_path / "store.db") as store:
        await finished_run(store, ws, tmp_path / "s.json")
    copy = tmp_path / "fork-copy"
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        await open_step(app, pilot, 1, 3)
        await pilot.press("f")
        await until(lambda: isinstance(app.screen, ForkScreen), "the fork dialog")
        screen = app.screen
        assert isinstance(screen, ForkScreen)
        await until(lambda: screen.plan is not None, "the fork's plan")
        assert "sent again as recorded" in str(screen.head.render())
        screen.instruction.value = "say hello instead"
        screen.places.query("RadioButton")[2].value = True  # a copy of the files
        # not wait_until_idle: the worker that opened the dialog waits for it to close
        await until(lambda: screen.directory.display, "the directory to ask for")
        screen.directory.value = str(copy)
        await pilot.press("ctrl+s")
        await until(lambda: isinstance(app.screen, MainScreen), "the dialog to close", 60)
        await until(lambda: 2 in app.screen.query_one(RunTree).run_nodes, "the fork in the tree")
        tree = app.screen.query_one(RunTree)
        fork_node = tree.run_nodes[2]
        assert fork_node.parent is tree.run_nodes[1]
        assert "⑂ step 3 #2" in str(fork_node.label)
    assert (copy / "new.txt").exists() and not (copy / "README.md").exists()

    async def finished() -> bool:
        async with await Store.open(tmp_path / "store.db") as store:
            row = await store.runs.get(2)
            return row is not None and row.status in ("finished", "failed")

    for _ in range(600):  # the resume process drives it: wait for its end
        if await finished():
            break
        await asyncio.sleep(0.2)
    async with await Store.open(tmp_path / "store.db") as store:
        row = await store.runs.get(2)
        assert row is not None and row.status == "finished", row
        request = await store.trace.answered_request(2, 3)
        parent = await store.trace.answered_request(1, 3)
    assert request is not None and parent is not None
    assert request.messages[:-1] == parent.messages
    assert request.messages[-1]["content"] == "[operator] say hello instead"

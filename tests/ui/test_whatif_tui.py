""" "What if" through the real app: `?` on a step's row opens the inspector on its request and
the what-if screen over it; an entry dropped and the memory block edited there, `s` sends the
changed request to the run's own provider (the scripted one, which answers with its next
turn), the answer shows beside the recorded one, nothing it proposes is executed, and the probe
is stored with the run and listed (`p`)."""

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
from io_tui.ui.screens.inspector import InspectorScreen
from io_tui.ui.screens.whatif import EditText, WhatIfScreen
from io_tui.ui.testing import wait_until_idle
from ui._steering import make_workspace

from .conftest import SIZE
from .test_rewind_fork_tui import open_step

TURNS = [
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}]},
    {"text": "done"},
    # what the provider answers when step 3's request is sent again: never executed
    {
        "text": "Without the README I would start over.",
        "tool_calls": [{"name": "run_command", "arguments": {"argv": ["rm", "-rf", "src"]}}],
    },
]


async def finished_run(store: Store, ws: Path, script: Path) -> int:
    await asyncio.to_thread(script.write_text, json.dumps({"model": "scripted", "turns": TURNS}))
    harness = Harness(store, ScriptedProvider.from_file(script), ApproveAll(), policy=Policy())
    result = await start_run(harness, TaskContract("read two files", ws))
    assert result.status == "finished"
    return result.run_id


async def test_whatif_drops_an_entry_sends_and_shows_both_answers(
    tmp_path: Path, make_app: Any
) -> None:
    ws = make_workspace(tmp_path / "ws")
    async with await Store.open(tmp_path / "store.db") as store:
        run_id = await finished_run(store, ws, tmp_path / "s.json")
        recorded = await store.trace.answered_request(run_id, 3)
    assert recorded is not None
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        await open_step(app, pilot, run_id, 3)
        await pilot.press("question_mark")
        await until(lambda: isinstance(app.screen, WhatIfScreen), "the what-if screen")
        screen = app.screen
        assert isinstance(screen, WhatIfScreen)
        assert isinstance(app.screen_stack[-2], InspectorScreen)
        await until(lambda: screen.base is not None, "the recorded request")
        assert "done" in str(screen.recorded.render())
        assert set(screen.entries.rows) >= {"call_1_1", "call_2_1"}

        screen.entries.move_cursor(row=screen.entries.get_row_index("call_1_1"))
        await pilot.press("d")
        assert str(screen.entries.get_cell("call_1_1", "change")) == "drop"
        await pilot.press("m")
        await until(lambda: isinstance(app.screen, EditText), "the memory editor")
        app.screen.query_one("#edit-text").text = "## Memory\n- the README is stale"
        await pilot.press("ctrl+s")
        await until(lambda: app.screen is screen, "back to what if")
        assert "drop call_1_1" in str(screen.changes.render())
        assert "memory block edited" in str(screen.changes.render())

        await pilot.press("s")
        await until(lambda: "probe" in str(screen.status.render()), "the answer", 30)
        answer = str(screen.answer.render())
        assert "Without the README I would start over." in answer
        assert "run_command" in answer
        await pilot.press("p")
        await until(lambda: screen.probes.row_count == 1, "the stored probe")

    assert (ws / "src" / "app.py").exists()  # proposed, never executed
    async with await Store.open(tmp_path / "store.db") as store:
        (probe,) = await store.probes.for_run(run_id, 3)
        assert probe.changes and probe.answer["tool_calls"][0]["name"] == "run_command"
        sent = probe.messages
    kept = [m for m in recorded.messages if "call_1_1" not in json.dumps(m)]
    assert len(sent) == len(kept) + 1  # one call and its result left out, a memory block added
    assert any("the README is stale" in str(m.get("content")) for m in sent)

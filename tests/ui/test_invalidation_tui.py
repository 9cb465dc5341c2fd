"""A derived part invalidated mid-run (``core/derived/parts.py``) is shown where the operator looks:
a line in the transcript under the step whose request carried the rebuild, and in the trace
viewer; the CLI's event sink prints the same line."""

from __future__ import annotations

import io
import json
from pathlib import Path

from textual.widgets import TextArea

from io_tui.cli.sinks import HumanSink
from io_tui.core import (
    Act,
    ApproveAll,
    Effect,
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    build_trace,
    start_run,
)
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.trace import TraceScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.transcript import Transcript

from .conftest import SIZE

LINE = "↻ instructions rebuilt: AGENTS.md — step 1 wrote AGENTS.md (write_file)"


async def test_the_transcript_trace_viewer_and_cli_show_an_invalidation(
    make_app, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("Use tabs.\n")
    script = tmp_path / "script.json"
    write = {"name": "write_file", "arguments": {"path": "AGENTS.md", "content": "Use spaces.\n"}}
    note = {"name": "remember", "arguments": {"key": "style", "value": "spaces"}}
    turns = [{"tool_calls": [write]}, {"tool_calls": [note]}, {"text": "done"}]
    script.write_text(json.dumps({"turns": turns}))
    store = await Store.open(tmp_path / "store.db", create=True)
    printed = io.StringIO()
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=ApproveAll(),
        sink=HumanSink(printed),
        policy=Policy(defaults={a: Effect.ALLOW for a in Act}),
    )
    await start_run(harness, TaskContract("switch to spaces", workspace))
    events = (await build_trace(store, 1))["events"]
    await store.close()
    # the run's own new note is a deferred invalidation: kept in the trace, not shown, since
    # nothing the request sent changed (its memory write line says what happened)
    [deferred] = [e for e in events if e["kind"] == "invalidated" and e["step"] == 3]
    assert deferred["detail"]["effect"] == "deferred"
    assert f"step 2 {LINE}" in printed.getvalue()
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.select_run(1, 2)
        await wait_until_idle(pilot)
        transcript = screen.query_one(Transcript)
        assert ("note", LINE) in transcript.steps[2].data.notes
        assert transcript.steps[1].data.notes == []
        assert not any("↻" in line for _, line in transcript.steps[3].data.notes)
        await pilot.press("t")
        await wait_until_idle(pilot)
        trace = app.screen
        assert isinstance(trace, TraceScreen)
        lines = trace.query_one(TextArea).text.splitlines()
        at = lines.index(LINE)
        assert lines[at - 1].startswith("━━ step 2")
        assert sum("↻" in line for line in lines) == 1

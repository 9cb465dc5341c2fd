"""Every screen at 80×24 (and a couple at 200×60): tables keep their most important columns,
dialogs fit, nothing runs off screen. Each picture was looked at; the docstring says what it
must show."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from io_tui.core.authority.approvals import Decision
from io_tui.core.authority.policy import Policy
from io_tui.core.authority.review import ReviewerSpec
from io_tui.core.steering.decisions import decide
from io_tui.core.store import Store
from io_tui.ui.screens.audit import AuditScreen
from io_tui.ui.screens.memory_editor import MemoryEditorScreen
from io_tui.ui.screens.rules import RulesScreen
from io_tui.ui.testing import freeze, wait_until_idle
from ui._steering import EDIT_TURN, EXEC_TURN, StoreHost, fixed_workspace, freeze_times, paused_run

from .test_memory_editor import WS, _seed as seed_memory
from .test_rules_screen import _seed as seed_rules
from .test_snapshots import _settle

pytestmark = pytest.mark.fixed_paths  # the workspaces under /tmp/io-tui-steering-snapshots

NARROW = (80, 24)
WIDE = (200, 60)


def test_main_80x24(snap_compare, make_app) -> None:
    """Runs, the budgets in words (short forms) with the context breakdown, the transcript."""
    assert snap_compare(make_app(), terminal_size=NARROW, run_before=_settle)


def test_main_200x60(snap_compare, make_app) -> None:
    """The same at 200×60: every budget in full words, the breakdown's legend with shares."""
    assert snap_compare(make_app(), terminal_size=WIDE, run_before=_settle)


def test_inspector_80x24(snap_compare, make_app) -> None:
    """Step 10's manifest across the width: state, kind, target, step, tokens and reason."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", step=10)

    assert snap_compare(make_app(), terminal_size=NARROW, run_before=run_before)


def test_inspector_entry_80x24(snap_compare, make_app) -> None:
    """Enter on the third entry: its text in the table's place (escape goes back)."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", "down", "down", "enter", step=10)

    assert snap_compare(make_app(), terminal_size=NARROW, run_before=run_before)


def test_inspector_dropped_entry_160x48(snap_compare, make_app) -> None:
    """The last entry, step 9's grep, selected: its state ``dropped`` (struck through) and why
    in the row (step 4's grep gave the same result, to the character), then beside the table
    the reason in full, the step it points at (step 4, ``j``), that nothing was sent for it,
    and the result as recorded."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", *["down"] * 8, step=10)

    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=run_before)


def test_inspector_dropped_entry_80x24(snap_compare, make_app) -> None:
    """Enter on that entry at 80×24: the same, in the table's place."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", *["down"] * 8, "enter", step=10)

    assert snap_compare(make_app(), terminal_size=NARROW, run_before=run_before)


def test_inspector_200x60(snap_compare, make_app) -> None:
    """Side by side at 200×60: every column whole, the entry's text beside the table."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", step=10)

    assert snap_compare(make_app(), terminal_size=WIDE, run_before=run_before)


def test_lifecycle_80x24(snap_compare, make_app) -> None:
    """The lifecycle of step 9's grep at 80×24: the entry table above, its phases below."""

    async def run_before(pilot: Pilot[object]) -> None:
        await _settle(pilot, "i", *["down"] * 8, "l", step=10)

    assert snap_compare(make_app(), terminal_size=NARROW, run_before=run_before)


def test_trace_80x24(snap_compare, make_app) -> None:
    """The trace viewer: search box, line count, the run header and first step."""
    assert snap_compare(make_app(), terminal_size=NARROW, run_before=lambda p: _settle(p, "t"))


def test_help_80x24(snap_compare, make_app) -> None:
    """Help inside the screen: where, key, what it does (cut), and the whole binding id."""
    assert snap_compare(
        make_app(demo=False), terminal_size=NARROW, run_before=lambda p: _settle(p, "f1")
    )


async def _seed_audit(store_path: Path) -> None:
    """Two requests people decided, and one a reviewer model approved."""
    async with await Store.open(store_path) as store:
        for name, turn in (("a", EDIT_TURN), ("b", EXEC_TURN), ("c", EDIT_TURN)):
            ws = fixed_workspace(f"audit-{name}")
            judge = ws.parent / f"{name}-judge.json"
            answer = {"text": "VERDICT: approve\nREASON: the fix", "usage": {"prompt_tokens": 400}}
            judge.write_text(json.dumps({"model": "judge", "turns": [answer]}))
            policy = (
                Policy().with_reviewer(ReviewerSpec(f"scripted:{judge}")) if name == "c" else None
            )
            await paused_run(store, ws, [turn], Path(ws.parent / f"{name}.json"), policy=policy)
        pending = await store.approvals.pending()
        await decide(store, pending[0].request.id, Decision.approve())
        await decide(store, pending[1].request.id, Decision.deny("not on main"))
        await freeze_times(store)


def test_audit_80x24(snap_compare: Any, store_path: Path) -> None:
    """Three requests: #, run, act, target, the reviewer's verdict and the decision kept; the
    detail below."""
    asyncio.run(_seed_audit(store_path))
    app = StoreHost(store_path, lambda store: AuditScreen(store))
    assert snap_compare(app, terminal_size=NARROW, run_before=wait_until_idle)


def test_rules_80x24(snap_compare: Any, store_path: Path) -> None:
    """Three rules: #, act, effect, pattern, scope, state and what they apply to."""
    asyncio.run(seed_rules(store_path))
    app = StoreHost(store_path, lambda store: RulesScreen(store))
    assert snap_compare(app, terminal_size=NARROW, run_before=wait_until_idle)


def test_memory_editor_80x24(snap_compare: Any, store_path: Path) -> None:
    """One gauge line per scope, no header over another; scope, key, type, state, value (cut);
    the highlighted note's provenance over its value."""
    asyncio.run(seed_memory(store_path))
    app = StoreHost(store_path, lambda store: MemoryEditorScreen(store, WS))
    assert snap_compare(app, terminal_size=NARROW, run_before=wait_until_idle)


def test_memory_log_80x24(snap_compare: Any, store_path: Path) -> None:
    """The daily log in place of the notes: day, run, field, text; the line under the cursor
    with its reference below; the footer offers promote and back to the notes."""
    asyncio.run(seed_memory(store_path))
    app = StoreHost(store_path, lambda store: MemoryEditorScreen(store, WS))

    async def run_before(pilot: Any) -> None:
        await wait_until_idle(pilot)
        await pilot.press("l")
        await wait_until_idle(pilot)

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_promote_line_80x24(snap_compare: Any, store_path: Path) -> None:
    """The promote dialog fits: key, the three sections, the three types, the line's text."""
    asyncio.run(seed_memory(store_path))
    app = StoreHost(store_path, lambda store: MemoryEditorScreen(store, WS))

    async def run_before(pilot: Any) -> None:
        await wait_until_idle(pilot)
        await pilot.press("l")
        await wait_until_idle(pilot)
        await pilot.press("down", "down", "down", "o")
        await wait_until_idle(pilot)
        freeze(pilot.app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)


def test_add_note_80x24(snap_compare: Any, store_path: Path) -> None:
    """The new-note dialog fits: key, scope (this workspace / global), value, its hint."""
    asyncio.run(seed_memory(store_path))
    app = StoreHost(store_path, lambda store: MemoryEditorScreen(store, WS))

    async def run_before(pilot: Any) -> None:
        await wait_until_idle(pilot)
        await pilot.press("a")
        await pilot.pause()
        freeze(pilot.app)  # the key field's cursor steady, not caught mid-blink
        await pilot.pause()

    assert snap_compare(app, terminal_size=NARROW, run_before=run_before)

"""Shared helpers for the steering UI tests: real paused runs in a real store, and a host app
that shows one steering screen alone (its snapshots show that screen, without the main screen
and the app's keys; flows go through the real app, ``create_app``)."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static

from io_tui.config import Settings, UISettings
from io_tui.core.authority.approvals import ApprovalRequest, DeferAll
from io_tui.core.authority.policy import Act, Policy
from io_tui.core.contract import TaskContract
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.loop import Harness, RunResult, start_run
from io_tui.core.store import Store
from io_tui.ui.approver import ApprovalDesk
from io_tui.ui.attention import Activity
from io_tui.ui.bridge import EventPump
from io_tui.ui.hosts import InlineHost
from io_tui.ui.screens.inbox import InboxScreen

APP_PY = "def parse(x):\n    return a\n\n\ndef helper():\n    return 1\n"


def fixed_workspace(name: str = "ws") -> Path:
    """A workspace at a fixed path, so snapshots that show it are deterministic."""
    root = Path(tempfile.gettempdir()) / "io-tui-steering-snapshots" / name
    shutil.rmtree(root, ignore_errors=True)
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text(APP_PY)
    (root / "README.md").write_text("# demo\n")
    return root


def make_workspace(root: Path) -> Path:
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "src" / "app.py").write_text(APP_PY)
    (root / "README.md").write_text("# demo\n")
    return root


def script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"model": "scripted", "turns": turns}))
    return path


EDIT_TURN = {
    "text": "Fixing parse.",
    "tool_calls": [
        {
            "name": "edit_file",
            "arguments": {"path": "src/app.py", "old": "    return a\n", "new": "    return x\n"},
        }
    ],
}
EXEC_TURN = {
    "tool_calls": [{"name": "run_command", "arguments": {"argv": ["git", "status", "--short"]}}]
}


async def paused_run(
    store: Store,
    workspace: Path,
    turns: list[dict[str, Any]],
    script_path: Path,
    *,
    policy: Policy | None = None,
    goal: str = "fix parse",
) -> RunResult:
    """Start a run whose first ask is deferred: it pauses with a pending approval."""
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script(script_path, turns)),
        approver=DeferAll(),
        policy=policy or Policy(),
    )
    return await start_run(harness, TaskContract(goal=goal, workspace=workspace, max_steps=6))


async def mcp_request(store: Store, workspace: Path) -> ApprovalRequest:
    """A pending MCP tool call (a run row and its approval row; no server needed to show it)."""
    run_id = await store.runs.create(
        goal="what time is it", workspace=str(workspace), contract={}, provider={}, policy={}
    )
    arguments = {"timezone": "Europe/Paris", "format": "[iso]"}
    return await store.approvals.create(
        ApprovalRequest(
            id=0,
            run_id=run_id,
            step=1,
            call_id="c1",
            tool="mcp__time__get_current_time",
            arguments=arguments,
            act=Act.EXEC,
            target="mcp__time__get_current_time",
            content=json.dumps(arguments),
            rule="default exec",
            layer="defaults",
            workspace=str(workspace),
        )
    )


async def freeze_times(store: Store, at: float = 1_700_000_000.0) -> None:
    """Deterministic timestamps for snapshots."""
    conn = store.db.conn
    await conn.execute("UPDATE approvals SET created_at = ? + id * 60", (at,))
    await conn.execute(
        "UPDATE approvals SET decided_at = created_at + 30 * id WHERE decided_at IS NOT NULL"
    )
    await conn.execute("UPDATE rules SET created_at = ? + id * 60", (at,))
    await conn.execute(
        "UPDATE memory SET written_at = ? + id * 60,"
        " last_recalled = CASE WHEN last_recalled IS NULL THEN NULL ELSE ? + id * 90 END",
        (at, at),
    )
    await conn.commit()


class Blank(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Static("host")


class StoreHost(App[None]):
    """Opens a store, then pushes the screen ``make(store)`` builds; records dismiss results.
    A paused run decided here is resumed by the real desk and host of the real app (in this
    app's loop)."""

    def __init__(self, store_path: Path, make: Callable[[Store], Any]) -> None:
        super().__init__()
        self.store_path = store_path
        self.make = make
        self.store: Store = Store(store_path)
        self.results: list[Any] = []

    @classmethod
    def inbox(cls, store_path: Path) -> StoreHost:
        """The inbox alone, deciding through a real ``ApprovalDesk``."""

        def make(store: Store) -> InboxScreen:
            host = InlineHost(app, EventPump(app), store, Settings(), DeferAll())
            desk = ApprovalDesk(
                app,
                store=store,
                host=host,
                ui=UISettings(),
                activity=Activity(),
                inbox_key=lambda: "f2",
                withdraw=lambda _toast: None,
            )
            return InboxScreen(store, desk, poll_interval=None)

        app = cls(store_path, make)
        return app

    async def on_load(self) -> None:
        await self.store.db.open()

    def get_default_screen(self) -> Screen[Any]:
        return Blank()

    async def on_mount(self) -> None:
        screen = self.make(self.store)
        if hasattr(screen, "__await__"):
            screen = await screen
        await self.push_screen(screen, self.results.append)

    async def on_unmount(self) -> None:
        await self.store.close()


class FakeClock:
    """A monotonic clock the test moves by hand (the modal's arming, the desk's typing window)."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds

"""Render README screenshots from the real app, driven by the demo against a temp store.

Writes ``screenshots/main-<theme>.svg`` for every bundled theme, ``screenshots/inspector.svg``,
``screenshots/trace.svg`` and ``screenshots/main-80x24.svg`` (the smallest terminal it fits);
``screenshots/remember.svg``, the remember dialog on the demo's edit (opened from the inbox of
the real app: the exact path by default, the wider choices under it);
``screenshots/cli-approval.svg``, ``io-tui run --approve ask`` asking for the same edit in a real
terminal (tmux), its screen rendered with Rich's SVG export; and ``screenshots/whatif.svg`` (a
recorded request sent again with one result dropped, the two answers side by side). Run with
``make screenshots`` (NO_COLOR must be unset; tmux for the CLI one); name shots (``whatif``,
``inspector``, …) as arguments to make only those.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from io_tui import demo  # noqa: E402
from io_tui.config import Settings  # noqa: E402
from io_tui.core import (  # noqa: E402
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    start_run,
)
from io_tui.core.authority.approvals import ApproveAll  # noqa: E402
from io_tui.ui.app import create_app  # noqa: E402
from io_tui.ui.screens.approval import ApprovalScreen  # noqa: E402
from io_tui.ui.screens.main import MainScreen  # noqa: E402
from io_tui.ui.screens.remember import RememberScreen  # noqa: E402
from io_tui.ui.screens.whatif import WhatIfScreen  # noqa: E402
from io_tui.ui.testing import freeze, prepare_demo_workspace, wait_until_idle  # noqa: E402
from io_tui.ui.themes import load_themes  # noqa: E402

OUT = ROOT / "screenshots"
SIZE = (140, 44)


async def shoot(
    theme: str,
    keys: tuple[str, ...],
    name: str,
    step: int | None = None,
    size: tuple[int, int] = SIZE,
) -> Path:
    with tempfile.TemporaryDirectory(prefix="io-tui-shots-") as tmp:
        workspace = prepare_demo_workspace(Path(tmp) / "textstats")
        app = create_app(
            Settings(ui={"theme": theme}),  # type: ignore[arg-type]
            Path(tmp) / "store.db",
            demo=True,
            approver=ApproveAll(),
            poll_interval=None,
            demo_workspace=workspace,
        )
        async with app.run_test(size=size) as pilot:
            for _ in range(600):  # the demo runs in the harness worker: wait for its end
                run = app.runs.get(1)
                if run is not None and not run.live and not app.host.is_live(1):
                    break
                await pilot.pause(0.05)
            await wait_until_idle(pilot)
            screen = app.screen
            if isinstance(screen, MainScreen):
                screen.select_run(1, step)
                await wait_until_idle(pilot)
            if keys:
                await pilot.press(*keys)
                await wait_until_idle(pilot)
            freeze(app)
            await pilot.pause(0.2)
            path = OUT / f"{name}.svg"
            app.save_screenshot(str(path))
    return path


def _demo_run_argv(workspace: Path, store: Path, approve: str) -> list[str]:
    """``io-tui run`` on the demo's task and script, under its policy (tests run, edits ask)."""
    return [
        sys.executable, "-m", "io_tui", "run", "Fix the failing test", "-w", str(workspace),
        "--provider", f"scripted:{demo.SCRIPT}", "--policy", str(demo.HERE / "policy.toml"),
        "--store", str(store), "--approve", approve,
    ]  # fmt: skip


async def shoot_remember(size: tuple[int, int] = (100, 30)) -> Path:
    """The remember dialog on the demo's paused edit, opened as an operator does: f2, enter, 3."""
    with tempfile.TemporaryDirectory(prefix="io-tui-shots-") as tmp:
        workspace = prepare_demo_workspace(Path(tmp) / "textstats")
        store = Path(tmp) / "store.db"
        argv = _demo_run_argv(workspace, store, "defer")
        await asyncio.to_thread(subprocess.run, argv, capture_output=True, check=False)
        app = create_app(Settings(), store, poll_interval=None)
        async with app.run_test(size=size) as pilot:
            await pilot.pause(0.5)
            app.action_inbox()
            await pilot.pause(0.5)
            await pilot.press("enter")
            for _ in range(200):
                if isinstance(app.screen, ApprovalScreen) and app.screen.armed:
                    break
                await pilot.pause(0.05)
            await pilot.press("3")
            for _ in range(200):
                if isinstance(app.screen, RememberScreen) and app.screen.history:
                    break
                await pilot.pause(0.05)
            await pilot.app.workers.wait_for_complete()
            freeze(app)
            await pilot.pause(0.2)
            path = OUT / "remember.svg"
            app.save_screenshot(str(path))
    return path


WHATIF_TURNS = [
    {"text": "Reading the notes first.",
     "tool_calls": [{"name": "read_file", "arguments": {"path": "NOTES.md"}}]},
    {"tool_calls": [{"name": "read_file", "arguments": {"path": "src/stats.py"}}]},
    {"text": "The notes say mean() must skip None; stats.py does. Nothing to change.",
     "tool_calls": [{"name": "run_command", "arguments": {"argv": ["python3", "-m", "unittest"]}}],
     "usage": {"prompt_tokens": 2724, "completion_tokens": 38}},
    {"text": "done"},
    # the answer to step 3's request sent again without the notes: proposed, never executed
    {"text": "mean() should probably raise on None; changing it.",
     "tool_calls": [{"name": "edit_file", "arguments": {
         "path": "src/stats.py", "old": "if x is not None", "new": ""}}],
     "usage": {"prompt_tokens": 2391, "completion_tokens": 44}},
]  # fmt: skip


async def shoot_whatif(name: str = "whatif") -> Path:
    """Step 3's request sent again without the NOTES.md read: the answers side by side."""
    with tempfile.TemporaryDirectory(prefix="io-tui-shots-") as tmp:
        ws = Path(tmp) / "stats"
        (ws / "src").mkdir(parents=True)
        (ws / "NOTES.md").write_text("# Notes\n- mean() skips None values, by design (#12)\n")
        (ws / "src" / "stats.py").write_text(
            "def mean(xs):\n    xs = [x for x in xs if x is not None]\n"
            "    return sum(xs) / len(xs)\n"
        )
        script = Path(tmp) / "script.json"
        script.write_text(json.dumps({"model": "scripted", "turns": WHATIF_TURNS}))
        async with await Store.open(Path(tmp) / "store.db") as store:
            harness = Harness(
                store, ScriptedProvider.from_file(script), ApproveAll(), policy=Policy()
            )
            await start_run(harness, TaskContract("check mean() against the notes", ws))
        app = create_app(
            Settings(ui={"theme": "io-dark"}),  # type: ignore[arg-type]
            Path(tmp) / "store.db",
            demo=False,
            approver=ApproveAll(),
            poll_interval=None,
        )
        async with app.run_test(size=SIZE) as pilot:
            await wait_until_idle(pilot)
            screen = WhatIfScreen(app.store, 1, 3)
            await app.push_screen(screen)
            for _ in range(200):
                if screen.base is not None:
                    break
                await pilot.pause(0.05)
            screen.entries.move_cursor(row=screen.entries.get_row_index("call_1_1"))
            await pilot.press("d", "s")
            for _ in range(400):
                if "probe" in str(screen.status.render()):
                    break
                await pilot.pause(0.05)
            freeze(app)
            await pilot.pause(0.2)
            path = OUT / f"{name}.svg"
            app.save_screenshot(str(path))
    return path


def shoot_cli_approval(width: int = 100, height: int = 34) -> Path | None:
    """``io-tui run --approve ask`` in tmux at the demo's edit: the screen as the terminal
    shows it (colours kept), rendered to SVG by Rich. None without tmux."""
    if shutil.which("tmux") is None:
        print("skipped cli-approval.svg: no tmux", file=sys.stderr)
        return None
    from rich.console import Console
    from rich.text import Text

    session = f"io-tui-shot-{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="io-tui-shots-") as tmp:
        workspace = prepare_demo_workspace(Path(tmp) / "textstats")
        command = shlex.join(_demo_run_argv(workspace, Path(tmp) / "store.db", "ask"))
        env = f"cd {shlex.quote(tmp)} && env -u NO_COLOR TERM=xterm-256color PS1='$ ' "
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height),
             f"{env} bash --norc -i"],
            check=True,
        )  # fmt: skip
        try:
            subprocess.run(["tmux", "send-keys", "-t", session, command, "Enter"], check=True)
            screen = ""
            for _ in range(300):
                screen = subprocess.run(
                    ["tmux", "capture-pane", "-t", session, "-p", "-e"],
                    capture_output=True, text=True, check=True,
                ).stdout  # fmt: skip
                if "asks to write" in screen and "[d]efer: " in screen:
                    break
                time.sleep(0.1)
            subprocess.run(["tmux", "send-keys", "-t", session, "d", "Enter"], check=True)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", session], check=False)
    lines = screen.rstrip("\n").splitlines()
    first = next((i for i, line in enumerate(lines) if "run 1 started" in line), 0)
    typed = "$ io-tui run 'Fix the failing test' -w textstats --approve ask"  # as a user types it
    body = "\n".join([typed, *lines[first:]])
    console = Console(
        record=True, width=width, force_terminal=True, color_system="truecolor", file=io.StringIO()
    )
    console.print(Text.from_ansi(body), soft_wrap=True)
    path = OUT / "cli-approval.svg"
    console.save_svg(str(path), title="io-tui run --approve ask")
    return path


async def main() -> None:
    os.environ.pop("NO_COLOR", None)
    # each shot in the theme it names, whatever theme this machine's TUI last chose
    os.environ["IO_TUI_UI_STATE"] = str(Path(tempfile.gettempdir()) / "io-tui-shots-ui-state.json")
    OUT.mkdir(exist_ok=True)
    themes, errors = load_themes()
    for error in errors:
        print(f"skipped theme: {error}", file=sys.stderr)
    shots = {
        **{f"main-{t.name}": (lambda t=t: shoot(t.name, (), f"main-{t.name}")) for t in themes},
        "inspector": lambda: shoot("io-dark", ("i",), "inspector", step=10),
        "trace": lambda: shoot("io-dark", ("t",), "trace"),
        "main-80x24": lambda: shoot("io-dark", (), "main-80x24", size=(80, 24)),
        "remember": shoot_remember,
        "whatif": shoot_whatif,
    }
    wanted = sys.argv[1:] or [*shots, "cli-approval"]
    unknown = [w for w in wanted if w not in shots and w != "cli-approval"]
    if unknown:
        sys.exit(
            f"unknown shot(s): {', '.join(unknown)}; the shots: {', '.join(shots)}, cli-approval"
        )
    made = [await shots[w]() for w in wanted if w in shots]
    if "cli-approval" in wanted and (cli := shoot_cli_approval()) is not None:
        made.append(cli)
    for path in made:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())

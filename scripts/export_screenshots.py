"""Render README screenshots from the real app, driven by the demo against a temp store.

Writes ``screenshots/main-<theme>.svg`` for every bundled theme, ``screenshots/inspector.svg``,
``screenshots/trace.svg`` and ``screenshots/main-80x24.svg`` (the smallest terminal it fits). Run with ``make screenshots`` (NO_COLOR must be unset).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from io_tui.config import Settings  # noqa: E402
from io_tui.core.authority.approvals import ApproveAll  # noqa: E402
from io_tui.ui.app import create_app  # noqa: E402
from io_tui.ui.screens.main import MainScreen  # noqa: E402
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


async def main() -> None:
    os.environ.pop("NO_COLOR", None)
    # each shot in the theme it names, whatever theme this machine's TUI last chose
    os.environ["IO_TUI_UI_STATE"] = str(Path(tempfile.gettempdir()) / "io-tui-shots-ui-state.json")
    OUT.mkdir(exist_ok=True)
    themes, errors = load_themes()
    for error in errors:
        print(f"skipped theme: {error}", file=sys.stderr)
    made = [await shoot(t.name, (), f"main-{t.name}") for t in themes]
    made.append(await shoot("io-dark", ("i",), "inspector", step=10))
    made.append(await shoot("io-dark", ("t",), "trace"))
    made.append(await shoot("io-dark", (), "main-80x24", size=(80, 24)))
    for path in made:
        print(path.relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())

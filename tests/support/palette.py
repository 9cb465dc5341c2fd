"""The command palette as a test drives it: open, type, and run the highlighted command once the
palette's search has answered (a loaded machine answers late, and enter on an empty list runs
nothing: a fixed pause before it made tests fail on CI)."""

from __future__ import annotations

from typing import Any

from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from waits import until


async def run_from_palette(pilot: Pilot[Any], query: str) -> None:
    await pilot.press("ctrl+p")
    await until(lambda: isinstance(pilot.app.screen, CommandPalette), "the palette", 10)
    await pilot.press(*query)

    def found() -> bool:
        hits = pilot.app.screen.query(CommandList)
        return bool(hits) and hits.first().highlighted is not None

    await until(found, f"a command for {query!r}", 10)
    await pilot.press("enter")
    await pilot.pause(0.2)

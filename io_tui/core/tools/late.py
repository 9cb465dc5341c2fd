"""Tools that join a run after it started: MCP servers still starting in the background.

A source (``McpHub``) keeps an append-only list of ``Arrival``s: a server's tools once it is
ready, or its problem when it failed to start. Each run reads the list before every model
request (``RunState.late_arrivals``): new tools are offered from that request on, and the
model is told in it, so a server that hangs at start never holds a run up.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from io_tui.core.tools.base import Tool


@dataclass(frozen=True, slots=True)
class Arrival:
    """One source done starting: ``tools`` when it is ready, else the one-line ``problem``; or
    later, a resource it sends updates of changed (``updated``: the read's target), or its tool
    list changed (``replaces``: ``tools`` is its whole list now, in place of what it offered)."""

    source: str  # as the model is told it: "MCP server 'time'"
    tools: tuple[Tool, ...] = ()
    problem: str | None = None
    updated: str | None = None
    replaces: bool = False


class LateTools(Protocol):
    def arrivals(self) -> Sequence[Arrival]:
        """Every arrival so far, oldest first; the list only grows."""
        ...

    def starting(self) -> tuple[str, ...]:
        """The sources still starting, as ``Arrival.source`` names them."""
        ...

    async def settle(self) -> None:
        """Wait for the sources still starting, at most as long as the source allows from when
        it started them (``[mcp] ready_wait_s``); never raises."""
        ...

    async def relisted(self) -> None:
        """Wait for the tool lists being fetched again since a source said they changed (each
        within its call timeout), so the next request offers them; never raises."""
        ...

"""The MCP servers' prompts offered to the operator (``ServerPrompts``, ``IoApp.prompts``), and
their entries in the command palette.

The servers live where the runs do: in the harness worker (the app asks it over the pipe), or
in the app's loop with ``[ui] harness = "inline"``; either way the host answers
(``RunHost.mcp_prompts``), from the hubs its runs use, so a server is started once per app,
never for a screen. The prompts of a workspace are those of the servers a run there gets, its
``.mcp.json`` included. They are listed once per workspace per app session (a listing that
failed is asked again next time).

In the palette (ctrl+p), "Prompt: server/name" opens the new-run dialog with the prompt's text as
the task. Prompts whose arguments are all optional are filled with the server's defaults; one
that needs an argument is listed with what it needs, and opens the dialog with that prompt
chosen, for the operator to fill its arguments there."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from io_tui.core import PromptRow
    from io_tui.ui.hosts import RunHost

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OfferedPrompt:
    title: str  # "Prompt: everything/simple-prompt"
    task: str  # what the new-run dialog opens with
    help: str
    prompt: str | None = None  # "server/name" of one that needs arguments: chosen in the dialog


class ServerPrompts:
    """The prompts of the servers a run in a workspace gets, asked of the app's run host."""

    def __init__(self, host: RunHost) -> None:
        self.host = host
        self._rows: dict[Path, asyncio.Future[list[PromptRow]]] = {}
        self._offered: dict[Path, asyncio.Future[list[OfferedPrompt]]] = {}

    async def rows(self, workspace: Path) -> list[PromptRow]:
        """Every prompt (``PromptRow``) of ``workspace``'s servers; HostError if they cannot be
        listed (a server that hangs: within the host's ask timeout)."""
        return await _once(self._rows, workspace, self._list)

    async def text(self, workspace: Path, server: str, name: str, arguments: dict[str, str]) -> str:
        """The prompt's messages as one line of task text; HostError if it fails."""
        text = await self.host.mcp_prompt(workspace, server, name, arguments)
        return " ".join(text.split())

    async def offered(self, workspace: Path) -> list[OfferedPrompt]:
        """Every prompt of ``workspace``'s servers as a palette entry."""
        return await _once(self._offered, workspace, self._offer)

    async def _list(self, workspace: Path) -> list[PromptRow]:
        return list((await self.host.mcp_prompts(workspace)).rows)

    async def _offer(self, workspace: Path) -> list[OfferedPrompt]:
        offered: list[OfferedPrompt] = []
        for row in await self.rows(workspace):
            title = f"Prompt: {row.server}/{row.name}"
            if row.required:
                needs = ", ".join(row.required)
                about = f"needs {needs} · {row.description}"
                offered.append(OfferedPrompt(title, "", about, f"{row.server}/{row.name}"))
                continue
            try:
                task = await self.text(workspace, row.server, row.name, {})
            except Exception as exc:  # a broken prompt is left out, said in its help
                offered.append(OfferedPrompt(title, row.description, f"failed: {exc}"))
                continue
            offered.append(OfferedPrompt(title, task, row.description or "an MCP prompt"))
        return offered


async def _once(
    made: dict[Path, asyncio.Future[T]], workspace: Path, make: Callable[[Path], Awaitable[T]]
) -> T:
    """``make(workspace)``, made once and shared by every caller; made again after a failure."""
    future = made.get(workspace)
    if future is None or (future.done() and (future.cancelled() or future.exception())):
        future = made[workspace] = asyncio.ensure_future(make(workspace))
    return await asyncio.shield(future)


class PromptCommands(Provider):
    """The palette's "Prompt: …" entries for the new-run dialog's default workspace."""

    async def _prompts(self) -> list[OfferedPrompt]:
        app: Any = self.app
        try:
            return await app.prompts.offered(app.default_workspace())
        except Exception:  # servers that cannot be asked offer no prompts
            return []

    def _open(self, prompt: OfferedPrompt) -> None:
        app: Any = self.app
        app.action_new_run(prompt.task, prompt=prompt.prompt)

    async def discover(self) -> Hits:
        for prompt in await self._prompts():
            yield DiscoveryHit(prompt.title, partial(self._open, prompt), help=prompt.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for prompt in await self._prompts():
            score = matcher.match(prompt.title)
            if score > 0:
                callback = partial(self._open, prompt)
                yield Hit(score, matcher.highlight(prompt.title), callback, help=prompt.help)
